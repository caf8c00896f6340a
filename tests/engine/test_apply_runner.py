"""`apply` in process on every engine: the committed sales.orders history, gates, pre-checks, checksums."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_contracts.apply import apply, rehash
from delta_contracts.apply.reports import BatchProgress
from delta_contracts.apply.runner import OpStatus
from delta_contracts.engine.base import Engine
from delta_contracts.marks import HOLD
from delta_contracts.plan.migrations import SUM_FILE, compute_sum, load_history, migration_files
from delta_contracts.state.ledger import Status
from delta_contracts.state.record import TableRecord, open_ledger
from delta_contracts.tableid import TableId
from delta_contracts.tables.drift import commit_drift
from tests.engine.apply_support import fingerprint, insert_rows, orders_migrations, with_schema

pytestmark = pytest.mark.engine


class RunInterruptedError(Exception):
    pass


def _statuses(result: object) -> dict[tuple[str, int], str]:
    return {(r.migration_id[:4], r.index): r.status.value for r in result.reports}  # type: ignore[attr-defined]


def test_history_applies_holds_the_drops_and_forces_them(runner_engine: Engine, tmp_path: Path) -> None:
    """The committed history in two steps, each drop held by its gate until forced: 0003's drops are forced
    with a reason their commits carry, then 0004 runs up to its own held drop, forced in turn."""
    root, contract = with_schema(runner_engine, tmp_path)
    schema = contract.split(".")[0]
    first = apply(runner_engine, root, tables=[contract], to_version="1.0.0")
    assert first.exit_code == 0 and all(r.status is OpStatus.SUCCEEDED for r in first.reports)
    insert_rows(runner_engine, schema)
    batches: list[BatchProgress] = []
    result = apply(
        runner_engine, root, tables=[contract], to_version="2.0.0", batch_rows=2, on_batch=batches.append
    )
    assert result.exit_code == 0, result.failure
    held = result.waiting
    # every waiting drop explains itself: 0003's second drop is held too, with its own gate and the first
    assert [(r.migration_id[:4], r.index) for r in held] == [("0003", 12), ("0003", 13)]
    assert any("no telemetry" in why for why in held[0].reasons), held[0].reasons
    assert any("deprecation window P30D" in why for why in held[0].reasons)
    assert any("op 12 is held by its gate" in why for why in held[1].reasons), held[1].reasons
    backfill = next(r for r in result.reports if r.migration_id.startswith("0003") and r.index == 3)
    assert backfill.detail.startswith("3 batch(es)")  # three partitions of two rows, two rows a batch
    progress = [b for b in batches if b.name == f"{backfill.migration_id} op 3"]
    assert [(b.done, b.total) for b in progress] == [(1, 3), (2, 3), (3, 3)], batches
    assert [b.elapsed for b in progress] == sorted(b.elapsed for b in progress)
    # delta-spark answers an UPDATE with the rows it changed; the embedded runner_engine with no such count
    written = [b.rows for b in progress]
    assert written == [2, 4, 6], written
    assert progress[-1].line().startswith(f"{backfill.table} {backfill.migration_id} op 3: backfill ")
    pending = TableRecord.open(root, contract, open_ledger(runner_engine)).pending()
    assert [(p.migration_id[:4], p.phases) for p in pending] == [
        ("0003", ("contract",)),
        ("0004", ("expand", "populate", "cutover", "contract")),
    ]

    forced = apply(
        runner_engine, root, tables=[contract], to_version="2.0.0", force_reason="approved by owner"
    )
    assert _statuses(forced)[("0003", 12)] == "forced"
    live = runner_engine.describe((schema, "orders"))
    assert live is not None and live.column("amount") is None and live.column("coupon_code") is None
    # Both drops are commits carrying the reason: on `spark` through the session conf, on `local` through
    # the delta-spark path that runs DROP COLUMNS (the conf of its own session).
    drops = [c for c in runner_engine.history((schema, "orders")) if c.operation == "DROP COLUMNS"]
    assert len(drops) == 2, [c.operation for c in runner_engine.history((schema, "orders"))]
    metas = [json.loads(c.user_metadata or "{}")["delta_contracts"] for c in drops]
    assert [(m["migration"][:4], m["op"], m["forced_reason"]) for m in metas] == [
        ("0003", 12, "approved by owner"),
        ("0003", 13, "approved by owner"),
    ]
    last = runner_engine.history((schema, "orders"))[-1]
    assert TableRecord.open(root, contract, open_ledger(runner_engine)).claimed(
        TableId((schema, "orders")), last.version
    )

    rest = apply(runner_engine, root, tables=[contract], batch_rows=2)
    assert rest.exit_code == 0, rest.failure
    assert [(r.migration_id[:4], r.index) for r in rest.waiting] == [("0004", 12)]
    statuses = _statuses(rest)
    assert statuses[("0004", 12)] == "held" and statuses[("0004", 11)] == "succeeded"
    again = apply(runner_engine, root, tables=[contract])
    assert {r.status for r in again.reports} <= {OpStatus.DONE, OpStatus.HELD, OpStatus.WAITING}

    forced = apply(runner_engine, root, tables=[contract], force_reason="ticket DATA-42: readers moved")
    assert forced.exit_code == 0 and not forced.waiting
    assert _statuses(forced)[("0004", 12)] == "forced"
    rows = open_ledger(runner_engine).entries([contract])
    drop = [e for e in rows if e.migration_id.startswith("0004") and e.op_index == 12]
    assert drop[-1].status == Status.FORCED and drop[-1].reason == "ticket DATA-42: readers moved"
    state = fingerprint(runner_engine, schema)
    assert state["old"] and [r for r in state["rows"]] and len(state["rows"]) == 6
    assert state["views"] == ["orders", "orders__v2"]
    assert TableRecord(contract, load_history(root / contract), rows).pending() == []


def test_a_versioned_cutover_waits_behind_an_earlier_held_drop(memory_engine: Engine, tmp_path: Path) -> None:
    """The whole history in one run, 0003's in-place drops held: 0004 (versioned) builds and fills its new
    table, but its cutover waits, so readers of the contract's name keep the deprecated columns the gate
    protects. Once the drops are forced they run on the table itself (not skipped through a view), and the
    cutover follows. The runner's logic is the engine's business nowhere, so the embedded engine suffices."""
    engine = memory_engine
    root, contract = with_schema(engine, tmp_path)
    schema = contract.split(".")[0]
    assert apply(engine, root, tables=[contract], to_version="1.0.0").exit_code == 0
    insert_rows(engine, schema)
    held = apply(engine, root, tables=[contract], batch_rows=2)
    assert held.exit_code == 0, held.failure
    statuses = _statuses(held)
    history = load_history(root / contract)
    versioned = next(s for s in history if s.migration.strategy == "versioned")
    cutover = [i for i, op in enumerate(versioned.migration.ops, 1) if op.phase.value == "cutover"]
    before_cutover = [
        i for i, op in enumerate(versioned.migration.ops, 1) if op.phase.value in {"expand", "populate"}
    ]
    key = versioned.migration_id[:4]
    assert cutover and all(statuses[(key, i)] == "waiting" for i in cutover), statuses
    assert all(statuses[(key, i)] == "succeeded" for i in before_cutover), statuses
    first_wait = next(r for r in held.reports if (r.migration_id[:4], r.index) == (key, cutover[0]))
    assert any("versioned cutover" in why and "held by its gate" in why for why in first_wait.reasons)
    assert statuses[("0003", 12)] == "held"
    served = engine.describe((schema, "orders"))
    assert served is not None and served.column("amount") is not None  # readers still have it
    assert (schema, "orders") not in engine.views()

    forced = apply(engine, root, tables=[contract], force_reason="approved by owner")
    assert forced.exit_code == 0, forced.failure
    after = _statuses(forced)
    assert after[("0003", 12)] == "forced" and after[("0003", 13)] == "forced", after
    assert all(after[(key, i)] in {"succeeded", "forced", "skipped"} for i in cutover), after
    # each drop committed to the table (a Delta version of its own), before the cutover renamed it aside
    entries = open_ledger(engine).entries([contract])
    dropped = [e for e in entries if e.migration_id.startswith("0003") and e.op_index in (12, 13)]
    assert [(e.op_index, e.status) for e in dropped if e.status in {Status.FORCED, Status.SKIPPED}] == [
        (12, Status.FORCED),
        (13, Status.FORCED),
    ]
    renamed_at = next(
        e for e in entries if e.migration_id == versioned.migration_id and e.op_kind == "rename_table"
    )
    assert all(e.version is not None for e in dropped if e.status is Status.FORCED)
    ended = [e.ended_at for e in dropped if e.ended_at is not None]
    assert ended and renamed_at.started_at is not None and max(ended) <= renamed_at.started_at
    state = fingerprint(engine, schema)
    assert len(state["rows"]) == 6 and state["views"] == ["orders", "orders__v2"]


def test_failing_tightening_op_reports_counts_and_leaves_the_table(
    runner_engine: Engine, tmp_path: Path
) -> None:
    root, contract = with_schema(runner_engine, tmp_path)
    schema = contract.split(".")[0]
    apply(runner_engine, root, tables=[contract], to_version="1.0.0")
    insert_rows(runner_engine, schema)
    partial = apply(runner_engine, root, tables=[contract], to_version="1.1.0", phases=["expand", "populate"])
    assert partial.exit_code == 0 and _statuses(partial)[("0002", 6)] == "waiting"
    runner_engine.sql(f"UPDATE `{schema}`.`orders` SET `channel` = 'fax' WHERE `order_id` IN (2, 5)")
    result = apply(runner_engine, root, tables=[contract], to_version="1.1.0")
    assert result.exit_code == 1
    failure = result.failure
    assert failure is not None and (failure.migration_id[:4], failure.index) == ("0002", 8)
    assert "2 row(s)" in failure.detail and "fax" in failure.detail
    ran_before = next(r for r in result.reports if (r.migration_id[:4], r.index) == ("0002", 7))
    after = runner_engine.describe((schema, "orders"))
    assert after is not None and "channel_enum" not in after.checks  # nothing of the failed op applied
    # No commit since the op before it, but for the producer hold's release (spark: the tightenings after
    # the cutover's catch-up run with producers held, and the hold is set back when the run ends, failed or
    # not; a metadata commit of that property alone).
    since = [c for c in runner_engine.history((schema, "orders")) if ran_before.version < c.version]
    assert after.version == ran_before.version + len(since), since
    holds = [c.operation == "SET TBLPROPERTIES" and HOLD in c.parameters.get("properties", "") for c in since]
    assert all(holds), [(c.operation, dict(c.parameters)) for c in since]
    last = open_ledger(runner_engine).entries([contract])[-1]
    assert last.status == Status.FAILED and "2 row(s)" in last.error


def test_foreign_commits_are_drift_even_before_the_toolkits_last(
    runner_engine: Engine, tmp_path: Path
) -> None:
    root, contract = with_schema(runner_engine, tmp_path)
    schema = contract.split(".")[0]
    apply(runner_engine, root, tables=[contract], to_version="1.0.0")
    runner_engine.sql(f"ALTER TABLE `{schema}`.`orders` SET TBLPROPERTIES ('owner.note'='by hand')")
    foreign = runner_engine.describe((schema, "orders"))
    assert foreign is not None

    def stop_after_two_ops(boundary: str) -> None:  # before 0002's rewrite (local), which restarts the log
        if boundary == "0002_1.0.0_to_1.1.0 op 2 recorded":
            raise RunInterruptedError

    with pytest.raises(RunInterruptedError):
        apply(runner_engine, root, tables=[contract], on_boundary=stop_after_two_ops)
    entries = open_ledger(runner_engine).entries([contract])
    assert [e.op_index for e in entries if e.status == "succeeded" and e.migration_id.startswith("0002")] == [
        1,
        2,
    ]
    record = TableRecord(contract, (), entries)
    items = commit_drift(
        runner_engine.history((schema, "orders")), lambda v: record.claimed(TableId((schema, "orders")), v)
    )
    assert [i.subject for i in items] == [str(foreign.version)]


def test_dry_run_changes_nothing(runner_engine: Engine, tmp_path: Path) -> None:
    root, contract = with_schema(runner_engine, tmp_path)
    schema = contract.split(".")[0]
    result = apply(runner_engine, root, tables=[contract], to_version="1.0.0", dry_run=True)
    assert result.exit_code == 0
    assert [r.status for r in result.reports] == [OpStatus.PLANNED] * 5
    assert result.reports[0].sql.startswith("CREATE TABLE")
    assert runner_engine.describe((schema, "orders")) is None
    assert open_ledger(runner_engine).entries([contract]) == []


def test_edited_migration_is_refused_until_rehashed(runner_engine: Engine, tmp_path: Path) -> None:
    root, contract = with_schema(runner_engine, tmp_path)
    assert apply(runner_engine, root, tables=[contract], to_version="1.0.0").exit_code == 0
    folder = root / contract
    sql = folder / "0001_create_1.0.0.sql"
    sql.write_text(sql.read_text(encoding="utf-8") + "-- reviewed by hand\n", encoding="utf-8")
    unsummed = apply(runner_engine, root, tables=[contract])
    assert unsummed.exit_code == 2 and str(sql) in unsummed.refused[0][1]
    (folder / SUM_FILE).write_text(compute_sum(folder, migration_files(folder)), encoding="utf-8")
    refused = apply(runner_engine, root, tables=[contract])
    assert refused.exit_code == 2 and "0001_create_1.0.0.json" in refused.refused[0][1]
    assert "rehash" in refused.refused[0][1]
    assert rehash(open_ledger(runner_engine), root, contract, reason="comment only") == ["0001_create_1.0.0"]
    accepted = apply(runner_engine, root, tables=[contract], to_version="1.1.0")
    assert accepted.exit_code == 0 and not accepted.refused
    rows = open_ledger(runner_engine).entries([contract])
    assert [(e.migration_id, e.reason) for e in rows if e.status == Status.REHASHED] == [
        ("0001_create_1.0.0", "comment only")
    ]


def test_status_after_create_and_through_the_alias_view(memory_engine: Engine, tmp_path: Path) -> None:
    """A table `create` made at 3.0.0 has no pending past; the live table is the one behind the alias view."""
    from delta_contracts.contract.load import load_contract
    from delta_contracts.tables.create import create_table
    from tests.engine.apply_support import REPO

    root, contract = orders_migrations(tmp_path)
    schema = contract.split(".")[0]
    model = load_contract(REPO / "contracts" / "sales" / "orders.yaml").contract
    model = model.model_copy(update={"id": contract})
    result = create_table(memory_engine, model)
    assert result.created
    entries = open_ledger(memory_engine).entries([contract])
    assert {e.status for e in entries} == {Status.CREATED}
    record = TableRecord(contract, load_history(root / contract), entries)
    assert record.pending() == []
    where = record.location(model, memory_engine.views(), lambda t: memory_engine.describe(t) is not None)
    assert where.read == (schema, "orders") and where.planned == (schema, "orders__v3")
    assert where.current == (schema, "orders__v3") == tuple(result.table.split("."))


def test_the_conflict_patience_is_the_run_s_not_the_engine_s_for_good(
    memory_engine: Engine, tmp_path: Path
) -> None:
    root, contract = with_schema(memory_engine, tmp_path)
    before = memory_engine.conflict_patience
    result = apply(memory_engine, root, tables=[contract], to_version="1.0.0", conflict_patience=7.0)
    assert result.exit_code == 0
    assert memory_engine.conflict_patience == before != 7.0
