"""The local engine's last resort, only on explicit request (`allow_rewrite`): rebuild a table in its new
shape and swap directories, keeping the old table's directory — its whole Delta history — as a named backup.

The rebuilt table's history starts again at version 0: time travel to earlier versions goes through the
backup. Every step is recorded in a journal before it happens, so a process killed at any point leaves
either the old table or the new one at the table's location, and the next engine start (`recover`) finishes
the bookkeeping: an interrupted rewrite is undone (the op reruns on the next apply), a finished one keeps
its backup. Nothing is deleted but the half-built copy of an undone rewrite.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from delta_contracts.contract.delta_properties import BOOKKEEPING_PROPERTIES
from delta_contracts.live import LiveTable
from delta_contracts.plan.ops import ColumnSpec
from delta_contracts.tableid import TableId

INTERNAL_PROPERTIES = BOOKKEEPING_PROPERTIES | {"delta.minReaderVersion", "delta.minWriterVersion"}
# The points a rewrite passes, in order; `on_step` is called after each (tests kill the process there).
STEPS = ("journal", "staging-created", "staged", "retired", "swapped", "done")
StepHook = Callable[[str], None]


@dataclass(frozen=True)
class TableShape:
    """What a rewrite rebuilds: everything about a table but its data."""

    columns: tuple[ColumnSpec, ...]
    properties: dict[str, str]
    checks: dict[str, str]
    partition_columns: tuple[str, ...]
    comment: str | None

    @classmethod
    def of(cls, live: LiveTable) -> TableShape:
        return cls(
            columns=tuple(
                ColumnSpec(c.name, c.type, c.nullable, c.comment, c.default, c.identity, c.generated)
                for c in live.columns
            ),
            properties={k: v for k, v in live.properties.items() if k not in INTERNAL_PROPERTIES},
            checks=dict(live.checks),
            partition_columns=live.partition_columns,
            comment=live.comment,
        )

    def with_column(self, name: str, **changes: object) -> TableShape:
        folded = name.casefold()
        columns = tuple(replace(c, **changes) if c.name.casefold() == folded else c for c in self.columns)  # type: ignore[arg-type]
        return replace(self, columns=columns)


@dataclass(frozen=True)
class Journal:
    """One rewrite under way: where the table is, where its copy is built, where the old one goes."""

    table: TableId
    location: str
    staging: str
    backup: str
    staged: bool = False  # the copy is complete: from here on the swap may happen

    def save(self, path: Path) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            json.dump(asdict(self), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)

    @classmethod
    def load(cls, path: Path) -> Journal:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(**{**data, "table": TableId(data["table"])})


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def journal_folder(state: Path) -> Path:
    return state / "rewrite"


def plan_rewrite(state: Path, table: TableId, location: Path, version: int) -> tuple[Journal, Path]:
    """Name the staging copy and the backup of a rewrite of `table` at `version`; nothing is written yet."""
    token = uuid.uuid4().hex[:12]
    name = str(table)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    staging = journal_folder(state) / f"{name}.{token}"
    backup = state / "backups" / f"{name}.v{version}.{stamp}.{token}"
    journal = Journal(table, str(location), str(staging), str(backup))
    return journal, journal_folder(state) / f"{name}.{token}.json"


def swap(journal: Journal, journal_path: Path, step: StepHook) -> None:
    """Move the table aside as its backup and the complete copy into its place; each move is one rename."""
    staged = replace(journal, staged=True)
    staged.save(journal_path)
    step("staged")
    backup = Path(journal.backup)
    backup.parent.mkdir(parents=True, exist_ok=True)
    os.rename(journal.location, backup)
    _fsync_dir(backup.parent)
    step("retired")
    os.rename(journal.staging, journal.location)
    _fsync_dir(Path(journal.location).parent)
    step("swapped")
    journal_path.unlink()
    step("done")


def recover(state: Path) -> list[str]:
    """Settle rewrites a killed process left behind; say what was done. Runs before the catalog is built."""
    folder = journal_folder(state)
    if not folder.is_dir():
        return []
    notes = []
    for path in sorted(folder.glob("*.json")):
        journal = Journal.load(path)
        location, staging, backup = Path(journal.location), Path(journal.staging), Path(journal.backup)
        name = str(journal.table)
        if location.exists() and backup.exists():
            notes.append(f"{name}: an interrupted rewrite had finished; the old table is kept at {backup}")
        elif backup.exists():
            os.rename(backup, location)  # killed between the two moves: put the old table back
            notes.append(f"{name}: an interrupted rewrite was undone; the table is as it was")
        else:
            notes.append(f"{name}: an interrupted rewrite was undone before the swap; the table is untouched")
        if staging.exists():
            shutil.rmtree(staging)
        path.unlink()
    return notes
