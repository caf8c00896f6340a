"""What the tests of producers in processes of their own share (tests/engine/test_live_writers.py,
tests/engine/test_producers.py): a planned migrations folder, the writer processes
(tests/engine/live_writer.py) started and stopped around a block, the rows they logged as committed, and the
producer hold as the table's Delta history shows it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.live import held_until
from delta_contracts.marks import HOLD
from delta_contracts.plan.migrations import load_history, next_migration, write_migration
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import Target
from tests.engine.apply_child import fork_server
from tests.engine.live_writer import writer_main

ROLES = {  # every column of the recipe contracts -> the writer's field it holds
    "txn_id": "txn_id",
    "txn_amt_paise": "amount",
    "amount_paise": "amount",
    "attempts": "attempts",
    "status": "status",
    "legacy_channel": "legacy_channel",
    "channel": "legacy_channel",
    "txn_date": "txn_date",
    "region": "region",
}
PER_OP_TIMEOUT = 120.0


def plan_folder(root: Path, old: Contract, new: Contract) -> Path:
    folder = root / old.id
    history: list[Any] = []
    for contract in (old, new):
        planned = next_migration(history, contract, Target.DELTA_4)
        assert planned is not None
        write_migration(folder, planned)
        history = load_history(folder)
    return root


def columns_of(contract: Contract) -> dict[str, str]:
    return {c.name: ROLES[c.name] for c in contract.columns if c.name in ROLES}


def served(engine: Engine, table: tuple[str, ...], prefix: str) -> list[dict[str, Any]]:
    from sqlglot import exp

    pattern = exp.Like(this=x.column("txn_id"), expression=exp.Literal.string(f"{prefix}%"))
    return engine.sql(x.sql(exp.select(exp.Star()).from_(x.table(table)).where(pattern)))


@dataclass
class Writer:
    name: str
    process: Any
    ready: Any
    started: Any  # attempts begun (a stamp check and a write)
    finished: Any  # attempts ended, committed or not
    folder: Path

    @property
    def output(self) -> Path:
        return self.folder / f"{self.name}.out"

    def printed(self) -> str:
        return self.output.read_text(encoding="utf-8") if self.output.exists() else ""

    def summary(self) -> str:
        """Its last line (`committed N rows, …`, once it stopped)."""
        lines = self.printed().splitlines()
        return lines[-1] if lines else ""

    def failed_writes(self) -> list[str]:
        """The first line of each error its writes got (retried)."""
        return [line for line in self.printed().splitlines() if line.startswith("write failed")]

    def committed(self) -> list[dict[str, Any]]:
        """Every change it logged as committed, in commit order."""
        path = self.folder / f"{self.name}.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    def one_more_attempt(self, boundary: str) -> None:
        """Wait until it has made a whole attempt that began after this call."""
        begun = self.started.value
        waited = 0.0
        while self.finished.value <= begun:
            assert self.process.is_alive(), f"{self.name} died: {self.printed()}"
            self.process.join(0.05)  # wakes as soon as the process ends; else polls its counter
            waited += 0.05
            assert waited < PER_OP_TIMEOUT, f"{self.name} made no attempt before {boundary}"


@contextmanager
def writers(folder: Path, specs: list[dict[str, Any]]) -> Iterator[list[Writer]]:
    """Start a writer process per spec (live_writer's SPEC, `log` set here), wait for each one's first commit,
    and stop them all when the block ends."""
    context = fork_server()
    stop = context.Event()
    started_writers: list[Writer] = []
    try:
        for spec in specs:
            name = spec["name"]
            spec = {**spec, "log": str(folder / f"{name}.jsonl")}
            ready, started, finished = context.Event(), context.Value("i", 0), context.Value("i", 0)
            writer = Writer(name, None, ready, started, finished, folder)
            writer.process = context.Process(  # type: ignore[attr-defined]
                target=writer_main, args=(spec, str(writer.output), ready, stop, started, finished)
            )
            writer.process.start()
            started_writers.append(writer)
        for writer in started_writers:
            assert writer.ready.wait(PER_OP_TIMEOUT), f"{writer.name} never committed: {writer.printed()}"
        yield started_writers
    finally:
        stop.set()
        for writer in started_writers:
            writer.process.join(PER_OP_TIMEOUT)


@dataclass(frozen=True)
class Commit:
    version: int
    at: datetime
    operation: str
    hold: datetime | None  # the instant a commit setting `delta_contracts.hold` set it to
    by_apply: bool  # tagged by `apply` (userMetadata); a producer's commits carry none

    @property
    def holds(self) -> bool:
        """Sets the hold to an instant still to come when it committed (a release sets it to the present)."""
        return self.hold is not None and (self.hold - self.at).total_seconds() > 5


def commits(engine: Engine, table: tuple[str, ...]) -> list[Commit]:
    """The table's Delta history, oldest first (the engine's reading of it)."""
    found = []
    for entry in engine.history(TableId(table)):
        properties = json.loads(entry.parameters.get("properties") or "{}")
        at = datetime.fromtimestamp(entry.timestamp_ms / 1000, UTC)
        hold = held_until(properties.get(HOLD)) if HOLD in properties else None
        found.append(Commit(entry.version, at, entry.operation, hold, bool(entry.user_metadata)))
    return found


def hold_now(engine: Engine, table: tuple[str, ...]) -> datetime | None:
    """The hold the table's properties show now, as a producer reads it."""
    live = engine.describe(table, with_version=False)
    assert live is not None, f"{table} should exist"
    return held_until(live.properties.get(HOLD))
