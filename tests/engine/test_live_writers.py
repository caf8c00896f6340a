"""`apply` on delta-spark while producers keep writing: every committed row ends up where readers read.

Each case plans a recipe (create, then the change) into a migrations folder, creates the table with rows,
starts writers — separate processes, each a Spark Connect session of its own on the suite's server
(tests/engine/live_writer.py) — and applies the change with every phase and the gates forced, while they
write. A writer follows docs/migrations.md ("Writers during a migration"): it writes the old shape to the old
table until the new contract version's stamp appears, then the new shape to the new table, and retries a
write that failed. The runner waits at the start of every op until each writer has committed once more, so
writes land in every phase, between any two ops; nothing pauses the writers. At the end every row a writer
logged as committed is read back through the contract's name: counted and checksummed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from delta_contracts.apply import apply
from delta_contracts.apply.schedule import held_runs
from delta_contracts.engine.base import Engine
from delta_contracts.plan.migrations import load_history
from tests.engine.conftest import JVM
from tests.engine.live_run import columns_of, plan_folder, served, writers
from tests.engine.live_writer import DELETED
from tests.engine.recipe_run import ROWS, checksum, create_schema, renamed, write_rows
from tests.recipes import nullable_rename, pair
from tests.tiers import EXHAUSTIVE

# On an idle 2-core machine the three cases take about six minutes together (rows written/found: 94/94 with
# 1 commit retried, 48/48 with 4, 10/10 with 0). On a machine loaded far beyond its cores (load average 20)
# a case took ten minutes, apply's UPDATE losing race after race against the producer's appends.
pytestmark = [pytest.mark.engine, JVM]


def run_live(
    engine: Engine,
    url: str,
    tmp_path: Path,
    recipe: str,
    versioning: str,
    modes: list[str],
    cadence: float | None = None,
) -> dict[str, Any]:
    schema = (
        f"live_{recipe}_{versioning}{'' if cadence is None else '_busy'}{'_upsert' * ('upsert' in modes)}"
    )
    create_schema(engine, schema)
    base, wanted = nullable_rename() if recipe == "rename_nullable_column" else pair(recipe, versioning)
    if "upsert" in modes:  # a change data capture producer upserts by the key its contract declares
        quality = wanted.quality.model_copy(update={"unique": (("txn_id",),)})
        base, wanted = (c.model_copy(update={"quality": quality}) for c in (base, wanted))
    old, new = renamed(base, schema), renamed(wanted, schema)
    root = plan_folder(tmp_path / "migrations", old, new)
    result = apply(engine, root, tables=[old.id], to_version=old.version)
    assert result.exit_code == 0, [r.detail for r in result.reports]
    created, migration = load_history(root / old.id)
    old_physical, new_physical = list(created.state.physical), list(migration.state.physical)
    write_rows(engine, created.state.physical, ROWS)

    specs = [
        {
            "url": url,
            "table": old_physical,
            "switch_to": new_physical,
            "stamp_table": new_physical,
            "stamp_version": new.version,
            "old_columns": columns_of(old),
            "new_columns": columns_of(new),
            "mode": mode,
            "name": f"w{index}{mode[0]}",
            **({} if cadence is None else {"cadence": cadence}),
        }
        for index, mode in enumerate(modes)
    ]
    ops = {
        f"{s.migration_id} op {i} started": op
        for s in load_history(root / old.id)
        for i, op in enumerate(s.migration.ops, 1)
    }
    watched = {
        "catch_up_rows",
        "copy_rows",
        "last_catch_up",
        "close_column",
        "drop_columns",
        "drop_check",
        "drop_table",
        "rename_table",
    }
    # Inside a run of ops held as one (`held_runs`: a versioned cutover's catch-up to its stamp, an in-place
    # catch-up and the tightenings reading its column), producers wait by design: no attempt is awaited there.
    held = {
        f"{s.migration_id} op {i} started"
        for s in load_history(root / old.id)
        for start, end in held_runs(s.migration.ops).items()
        for i in range(start, end + 1)
    }
    phases = [op.phase for op in ops.values()]
    firsts = {name for k, (name, op) in enumerate(ops.items()) if k == 0 or phases[k - 1] != op.phase}

    with writers(tmp_path, specs) as started:

        def one_more_attempt_each(boundary: str) -> None:
            """At the start of each phase and of each op that moves rows or closes a table: wait until every
            writer has made a whole attempt (checked the stamp, written, committed or not) that began after
            the op before had ended."""
            op = ops.get(boundary)
            if op is None or boundary in held or (boundary not in firsts and op.kind not in watched):
                return
            for writer in started:
                writer.one_more_attempt(boundary)

        outcome = apply(
            engine, root, tables=[old.id], force_reason="live writers test", on_boundary=one_more_attempt_each
        )
    outputs = {w.name: w.summary() for w in started}
    assert outcome.exit_code == 0, (outcome.failure and outcome.failure.detail, outputs)
    assert all(w.process.exitcode == 0 for w in started), outputs
    written: list[dict[str, Any]] = [change for w in started for change in w.committed()]
    expected = [{c: r[field] for c, field in columns_of(new).items()} for r in written if not r.get(DELETED)]
    got = served(engine, new.table_parts, "w")
    got_text = [{k: (str(v) if k == "txn_date" else v) for k, v in r.items()} for r in got]  # as logged
    last: dict[str, dict[str, Any] | None] = {}  # each key's last committed change, in commit order
    for r in written:
        last[r["txn_id"]] = None if r.get(DELETED) else {c: r[field] for c, field in columns_of(new).items()}
    ran = [r for r in outcome.reports if r.status.value in {"succeeded", "forced"}]
    return {
        "written": len(expected),
        "found": len(got),
        "expected": checksum(expected),
        "served": checksum(got_text),
        "retries": outcome.retries,
        "last": {k: v for k, v in last.items() if v is not None},
        "served_by_key": {r["txn_id"]: r for r in got_text},
        "ops": len(ran),
        "writers": outputs,
    }


# `make test` runs the in-place rename (expand, populate, cutover and a drop with its last catch-up) under a
# producer committing back to back, with no pause; the exhaustive tier also the versioned repartition (a copy,
# a catch-up, the cutover and its fence) back to back, whose fence `make test` holds step by step
# (tests/engine/test_cutover_fence.py, a commit made at each step). Back to back, every statement of `apply`
# that reads the table loses its first commit race to the producer (open-source Delta is Serializable), and
# commits only because producers are held off it (`engine.spark.hold`), or, for the fence, because it commits
# as a blind append. The exhaustive tier also runs the same with micro-batches every two seconds (no hold
# needed), the NOT NULL tightening, and the versioned repartition with a second writer that MERGEs.
BACK_TO_BACK = 0.0
CASES = [
    pytest.param("rename_nullable_column", "in_place", ["append"], BACK_TO_BACK, id="rename_back_to_back"),
    pytest.param(
        "change_partitioning",
        "versioned",
        ["append"],
        BACK_TO_BACK,
        id="versioned_back_to_back",
        marks=EXHAUSTIVE,
    ),
    pytest.param(
        "rename_nullable_column", "in_place", ["append"], None, id="rename_nullable_column", marks=EXHAUSTIVE
    ),
    pytest.param("make_not_null", "in_place", ["append"], None, id="make_not_null", marks=EXHAUSTIVE),
    pytest.param(
        "change_partitioning",
        "versioned",
        ["append", "merge"],
        None,
        id="change_partitioning",
        marks=EXHAUSTIVE,
    ),
]


@pytest.mark.parametrize(("recipe", "versioning", "modes", "cadence"), CASES)
def test_no_committed_row_is_lost_while_apply_runs(
    connect_url: str,
    connect_engine: Engine,
    tmp_path: Path,
    recipe: str,
    versioning: str,
    modes: list[str],
    cadence: float | None,
) -> None:
    live = run_live(connect_engine, connect_url, tmp_path, recipe, versioning, modes, cadence)
    print(
        f"{recipe}/{versioning}: {live['written']} rows written, {live['found']} found, "
        f"{live['retries']} commit(s) retried by apply, {live['ops']} ops; writers: {live['writers']}"
    )
    assert live["written"] > 0
    assert live["found"] == live["written"], live
    assert live["served"] == live["expected"], live


# An upserting producer (change data capture: each MERGE inserts new keys, updates existing ones to new values
# and deletes one), committing back to back, through a versioned cutover (its fence carries the updates and
# deletes the old table got after the catch-up) and an in-place rename and drop. Both are exhaustive (each
# takes minutes, a live producer through a whole migration); `make test` holds the same fence and last
# catch-up step by step (tests/engine/test_cutover_fence.py, an update, a delete and an insert at each point).
UPSERT_CASES = [
    pytest.param("change_partitioning", "versioned", id="versioned", marks=EXHAUSTIVE),
    pytest.param("rename_nullable_column", "in_place", id="rename_drop", marks=EXHAUSTIVE),
]


@pytest.mark.parametrize(("recipe", "versioning"), UPSERT_CASES)
def test_an_upserting_producer_keeps_its_last_value_of_every_key(
    connect_url: str, connect_engine: Engine, tmp_path: Path, recipe: str, versioning: str
) -> None:
    live = run_live(connect_engine, connect_url, tmp_path, recipe, versioning, ["upsert"], BACK_TO_BACK)
    last, served_rows = live["last"], live["served_by_key"]
    print(f"{recipe}/{versioning}: {len(last)} keys live after {live['written']} changes: {live['writers']}")
    assert live["written"] > len(last) > 0
    differing = {
        k: (last.get(k), served_rows.get(k))
        for k in set(last) | set(served_rows)
        if last.get(k) != served_rows.get(k)
    }
    assert not differing, differing
