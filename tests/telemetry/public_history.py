"""A query history built from public SQL (tests/data/history/README.md), as a Databricks
`system.query.history` export: JSON lines with that table's column names."""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

STATEMENTS = Path(__file__).parent.parent / "data" / "history" / "statements.jsonl.gz"
START = datetime(2026, 10, 1, tzinfo=UTC)
USERS = [f"analyst{i}@example.com" for i in range(40)]
CLIENTS = ["Databricks SQL Editor", "Notebook", "Jobs", "dbt", "PowerBI"]


def public_statements() -> list[str]:
    with gzip.open(STATEMENTS, "rt", encoding="utf-8") as lines:
        return [json.loads(line)["sql"] for line in lines]


def history_rows(rows: int, *, seed: int = 11, commented: float = 0.1) -> Iterator[dict[str, object]]:
    """`rows` history rows: every public statement once (while rows last), then repeats; a `commented`
    share of the rows carries a comment of its own, before or after the statement."""
    rng = random.Random(seed)
    statements = public_statements()
    rng.shuffle(statements)
    for index in range(rows):
        text = statements[index] if index < len(statements) else rng.choice(statements)
        if rng.random() < commented:
            text = f"/* run {index} */ {text}" if rng.random() < 0.5 else f"{text}\n-- run {index}"
        yield {
            "statement_id": f"h{index}",
            "executed_by": rng.choice(USERS),
            "statement_text": text,
            "statement_type": "SELECT",
            "execution_status": "FINISHED",
            "client_application": rng.choice(CLIENTS),
            "start_time": (START + timedelta(seconds=index * 7)).isoformat(),
        }


def write_history(path: Path, rows: int, *, seed: int = 11, commented: float = 0.1) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for row in history_rows(rows, seed=seed, commented=commented):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
