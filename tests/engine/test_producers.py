"""Producers in processes of their own against `apply` on delta-spark, tested from outside the runner: the
producer hold (`engine.spark.hold`, docs/migrations.md "Wait while the table is held") as the table's Delta
history shows it — set by an op that lost a commit race, obeyed by a producer that reads it, released when
the op ends, also when it ends in failure — and a producer that ignores it.

Each producer is tests/engine/live_writer.py in a process of its own, a Spark Connect session on the suite's
server, committing back to back: every statement of `apply` that reads the table loses its first race to it
(open-source Delta is Serializable, docs/migrations.md "Commits that race").
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.apply import apply
from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.plan.migrations import load_history
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from tests.engine.conftest import JVM
from tests.engine.live_run import Commit, columns_of, commits, hold_now, plan_folder, served, writers
from tests.engine.recipe_run import create_schema
from tests.tiers import EXHAUSTIVE

pytestmark = [pytest.mark.engine, JVM]


def contracts(
    schema: str, versioning: str, *changes: Callable[[dict[str, Any]], None]
) -> tuple[Contract, Contract]:
    """A small table (a key and a status, each producer row's fields of those names) and its next major
    version with `changes` made: few ops, each a Spark job or two, so that the race is the test's cost."""
    doc: dict[str, Any] = {
        "apiVersion": "delta-contracts/v1",
        "id": f"{schema}.events",
        "version": "1.0.0",
        "owner": {"team": "payments"},
        "table": {"versioning": versioning},
        "columns": [
            {"name": "txn_id", "type": "string", "nullable": False},
            {"name": "status", "type": "string"},
        ],
    }
    old = Contract.model_validate(copy.deepcopy(doc))
    doc["version"] = "2.0.0"
    for change in changes:
        change(doc)
    return old, Contract.model_validate(doc)


def status_not_null(doc: dict[str, Any]) -> None:
    doc["columns"][1]["nullable"] = False


def prepared(engine: Engine, tmp_path: Path, old: Contract, new: Contract) -> dict[str, Any]:
    """The old contract applied (its table made), the change planned after it."""
    create_schema(engine, old.id.split(".")[0])
    root = plan_folder(tmp_path / "migrations", old, new)
    result = apply(engine, root, tables=[old.id], to_version=old.version)
    assert result.exit_code == 0, [r.detail for r in result.reports]
    created, migration = load_history(root / old.id)
    return {
        "root": root,
        "old": old,
        "new": new,
        "table": created.state.physical,
        "new_table": migration.state.physical,
    }


def producer(url: str, case: dict[str, Any], name: str, **extra: Any) -> dict[str, Any]:
    """A producer appending back to back, as docs/migrations.md asks (unless `extra` says otherwise)."""
    old: Contract = case["old"]
    new: Contract = case["new"]
    return {
        "url": url,
        "table": list(case["table"]),
        "switch_to": list(case["new_table"]),
        "stamp_table": list(case["new_table"]),
        "stamp_version": new.version,
        "old_columns": columns_of(old),
        "new_columns": columns_of(new),
        "mode": "append",
        "name": name,
        "cadence": 0.0,
        **extra,
    }


def hold_windows(history: list[Commit]) -> list[tuple[Commit, Commit]]:
    """Each span of the history in which the hold stood: from a commit that set it (to an instant to come)
    to the next that released it (set it to its present). A hold lengthened in between is one span."""
    windows, begun = [], None
    for commit in history:
        if commit.hold is None:
            continue
        if commit.holds and begun is None:
            begun = commit
        elif not commit.holds and begun is not None:
            windows.append((begun, commit))
            begun = None
    assert begun is None, f"the hold set at version {begun.version} was never released: {history}"
    return windows


def between(history: list[Commit], window: tuple[Commit, Commit]) -> list[Commit]:
    return [c for c in history if window[0].version < c.version < window[1].version]


def held_count(summary: str) -> int:
    """How often the producer found the table held (its summary line: `…, held N times, …`)."""
    words = summary.split()
    return int(words[words.index("held") + 1])


@EXHAUSTIVE  # a back-to-back producer through an in-place NOT NULL: minutes on two cores
def test_a_statement_that_lost_a_race_holds_the_producer_off_until_it_ends(
    connect_url: str, connect_engine: Engine, tmp_path: Path
) -> None:
    """NOT NULL on an existing column, in place: its ADD CONSTRAINT reads the whole table, so it loses its
    first race to the producer's appends; the hold lets it commit and ends with it."""
    case = prepared(connect_engine, tmp_path, *contracts("held", "in_place", status_not_null))
    with writers(tmp_path, [producer(connect_url, case, "h")]) as (writer,):
        outcome = apply(connect_engine, case["root"], tables=[case["old"].id])
    assert outcome.exit_code == 0, (outcome.failure and outcome.failure.detail, writer.printed())
    assert writer.process.exitcode == 0, writer.printed()
    assert outcome.retries >= 1, "no statement of apply lost a race: the hold was not exercised"

    history = commits(connect_engine, case["table"])
    windows = hold_windows(history)
    assert windows, f"apply lost {outcome.retries} race(s) and never set the hold: {history}"
    for window in windows:
        inside = between(history, window)
        # obeyed: a producer that checked the hold before it was set may commit the write it had started
        # (its snapshot already had the hold); then it waits until the release
        by_producer = [c for c in inside if not c.by_apply]
        assert len(by_producer) <= 1, (window, inside)
        assert any(c.by_apply and c.hold is None for c in inside), f"no statement of apply in {window}"
    # released: the producer commits again after each window, and the property now names a past instant
    for _, release in windows:
        assert any(not c.by_apply for c in history if c.version > release.version), (release, history)
    assert held_count(writer.summary()) > 0, writer.summary()
    released = hold_now(connect_engine, case["table"])
    assert released is not None and released <= datetime.now(UTC)

    written = {r["txn_id"] for r in writer.committed()}
    rows = {r["txn_id"]: r for r in served(connect_engine, case["table"], "h")}
    assert set(rows) == written
    assert all(r["status"] is not None for r in rows.values())


def add_region(doc: dict[str, Any]) -> None:
    doc["columns"].append({"name": "region", "type": "string", "nullable": False, "fill": "'unknown'"})


@EXHAUSTIVE
def test_a_producer_ignoring_the_hold_through_a_backfill_and_not_null(
    connect_url: str, connect_engine: Engine, tmp_path: Path
) -> None:
    """An added NOT NULL column with a fill, in place (its backfill, the cutover's catch-up and the NOT NULL
    that reads it), under a producer appending back to back that never looks at the hold: `apply` either
    finishes with the column filled and NOT NULL, or stops with a clear message that a run after the producer
    calms down completes; the producer's old-shape rows are refused only while the NOT NULL stands before the
    stamp, and every row it committed is kept."""
    case = prepared(connect_engine, tmp_path, *contracts("ignoring", "in_place", add_region))
    spec = producer(connect_url, case, "r", ignore_hold=True)
    with writers(tmp_path, [spec]) as (writer,):
        outcome = apply(connect_engine, case["root"], tables=[case["old"].id], conflict_patience=45)
    assert writer.process.exitcode == 0, writer.printed()
    released = hold_now(connect_engine, case["table"])  # also when the op gave up
    assert released is None or released <= datetime.now(UTC), released
    if outcome.exit_code != 0:
        detail = outcome.failure.detail if outcome.failure else ""
        assert outcome.exit_code == 1, detail
        assert "run `apply` again" in detail, detail
        assert "Traceback" not in detail and "org.apache" not in detail, detail
        rerun = apply(connect_engine, case["root"], tables=[case["old"].id])
        assert rerun.exit_code == 0, rerun.failure and rerun.failure.detail
    # what the producer met: commit races and, between the NOT NULL and the stamp, its old shape refused
    for line in writer.failed_writes():
        assert "Concurrent" in line or "MetadataChanged" in line or "NOT NULL" in line or "null" in line, line

    written = {r["txn_id"] for r in writer.committed()}
    rows = {r["txn_id"]: r for r in served(connect_engine, case["table"], "r")}
    assert set(rows) == written, sorted(written - set(rows))
    assert [k for k, r in rows.items() if r["region"] is None] == []
    live = connect_engine.describe(case["table"], with_version=False)
    assert live is not None
    region = live.column("region")
    assert region is not None, live.columns
    # the contract's NOT NULL stands: as the column's own, or as a CHECK on it
    assert not region.nullable or any("region" in check for check in live.checks.values()), live


def partitioned_by_status(doc: dict[str, Any]) -> None:
    doc["table"]["partitioned_by"] = ["status"]


def test_a_versioned_cutover_holds_the_old_table_from_its_catch_up_to_the_stamp(
    connect_engine: Engine, tmp_path: Path
) -> None:
    """A repartition of a table that bears the contract's name: a versioned cutover that renames the old table
    aside. The old table is held before the catch-up reads it and released only once the new table is
    stamped, and the release lands on the old table under its new name (the hold followed the rename), not
    on the alias view that took the name."""
    case = prepared(connect_engine, tmp_path, *contracts("heldcut", "in_place", partitioned_by_status))
    connect_engine.sql(f"INSERT INTO {x.sql(x.table(case['table']))} VALUES ('a', 'OK'), ('b', 'FAILED')")
    outcome = apply(
        connect_engine, case["root"], tables=[case["old"].id], phases=["expand", "populate", "cutover"]
    )
    assert outcome.exit_code == 0, outcome.failure and outcome.failure.detail
    reports = {r.kind: r for r in outcome.reports if r.status.value == "succeeded"}
    retired = TableId(reports["rename_table"].table.split("."))
    assert retired != TableId(case["table"]) and connect_engine.views()  # the name is the alias view now

    old_history = commits(connect_engine, retired)
    windows = hold_windows(old_history)
    assert len(windows) == 1, old_history
    held, released = windows[0]
    stamped = [c for c in commits(connect_engine, case["new_table"]) if c.operation == "SET TBLPROPERTIES"]
    stamp = next(c for c in stamped if c.by_apply and c.hold is None)
    # held before the catch-up's first read, released once the stamp was set
    assert held.at <= stamp.at <= released.at, (held, stamp, released)
    assert not [c for c in between(old_history, windows[0]) if not c.by_apply]
    released_now = hold_now(connect_engine, retired)
    assert released_now is not None and released_now <= datetime.now(UTC)
