"""The sunset gate reads what the readers log wrote, on a table of a user's own.

`<schema>.shipments` is versioned (1.0.0 in `shipments__v1`; 2.0.0 drops `dest_zip` into `shipments__v2`
behind the alias view), then goes in place: 2.1.0 marks `notes` deprecated, 3.0.0 drops it from
`shipments__v2` (the drop's gate names it `<schema>.shipments.notes`, by the contract's id). A query history
(Databricks export, JSON lines) has a team reading `notes` through the alias every day, a misspelt statement
naming it, a job reading the retired `shipments__v1`, and a dashboard's `SELECT *` from before the 2.0.0
cutover. Planned, applied and collected for real, on `local` and on `spark`.
"""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from delta_contracts.apply import apply
from delta_contracts.apply.runner import OpStatus
from delta_contracts.cli import app
from delta_contracts.contract.load import parse_contract
from delta_contracts.engine.base import Engine
from delta_contracts.engine.memory.engine import MemoryEngine
from delta_contracts.engine.spark.engine import SparkEngine
from delta_contracts.plan.migrations import load_history, next_migration, write_migration
from delta_contracts.state.ledger import Ledger
from delta_contracts.target import Target
from delta_contracts.telemetry.log import Watermark, read_rows, record_watermark, retire_source
from delta_contracts.telemetry.objects import watched_on
from delta_contracts.telemetry.pipeline import collect
from delta_contracts.telemetry.sources import parse_source, read_source

pytestmark = pytest.mark.engine
_counter = itertools.count()

VERSIONS = [
    ("1.0.0", "versioned", ["shipment_id: bigint", "origin: string", "dest_zip: string", "notes: string"]),
    ("2.0.0", "versioned", ["shipment_id: bigint", "origin: string", "notes: string"]),
    ("2.1.0", "in_place", ["shipment_id: bigint", "origin: string", "notes: string!"]),
    ("3.0.0", "in_place", ["shipment_id: bigint", "origin: string"]),
]
# An in-place table whose drop waits alone: 1.1.0 marks `notes`, 2.0.0 drops it.
PARCELS = [
    ("1.0.0", "in_place", ["parcel_id: bigint", "notes: string"]),
    ("1.1.0", "in_place", ["parcel_id: bigint", "notes: string!"]),
    ("2.0.0", "in_place", ["parcel_id: bigint"]),
]


def _contract_text(contract: str, version: str, versioning: str, columns: list[str]) -> str:
    lines = [
        "apiVersion: delta-contracts/v1",
        f"id: {contract}",
        f"version: {version}",
        "owner: {team: logistics}",
        "consumers: [{name: dispatch}]",
        "evolution: {policy: any, deprecation_window: P30D, reader_lookback: P14D}",
        f"table: {{versioning: {versioning}}}",
        "columns:",
    ]
    for column in columns:
        name, kind = column.split(": ")
        deprecated = f", deprecated: {{since: {version}, reason: retired}}" if kind.endswith("!") else ""
        lines.append(f"  - {{name: {name}, type: {kind.rstrip('!')}{deprecated}}}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def own_engine(runner_engine: Engine, tmp_path: Path) -> Engine:
    """The engine with a warehouse state dir of the test's own (the CLI's `--warehouse` reads it): the
    in-memory engine, whose tables the gate reads as any engine's; delta-spark in the exhaustive tier."""
    state = tmp_path / "wh" / "_delta_contracts"
    if runner_engine.name == "spark":
        return SparkEngine(runner_engine.spark, state)  # type: ignore[attr-defined]
    return MemoryEngine(state)


@pytest.fixture
def reader(own_engine: Engine, request: pytest.FixtureRequest) -> Any:
    """The Spark session that reads the query-history export: the engine's own, else the embedded one's."""
    if own_engine.name == "spark":
        return own_engine.spark  # type: ignore[attr-defined]
    return request.getfixturevalue("local_engine").spark


def _plan_all(root: Path, contract: str, versions: list[tuple[str, str, list[str]]]) -> Path:
    folder = root / "migrations" / contract
    folder.mkdir(parents=True)
    for version, versioning, columns in versions:
        text = _contract_text(contract, version, versioning, columns)
        model = parse_contract(text, root / f"{contract}-{version}.yaml").contract
        planned = next_migration(load_history(folder), model, Target.DELTA_4)
        assert planned is not None
        write_migration(folder, planned)
    return root / "migrations"


def _export(path: Path, rows: list[tuple[str, str, str, datetime]]) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for sid, user, text, at in rows:
            row = {"statement_id": sid, "statement_text": text, "executed_by": user,
                   "start_time": at.isoformat(), "client_application": "Databricks SQL"}  # fmt: skip
            out.write(json.dumps(row) + "\n")
    return path


def _report(warehouse: Path) -> dict[str, dict[str, object]]:
    """`telemetry report --format json`, the command itself (in this process: no second interpreter)."""
    done = CliRunner().invoke(app, ["telemetry", "report", "--format", "json", "--warehouse", str(warehouse)])
    assert done.exit_code == 0, done.output
    return {o["object"]: o for o in json.loads(done.stdout)["objects"]}


def test_the_gate_reads_what_the_log_wrote(
    own_engine: Engine, reader: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = own_engine
    schema = f"gatehist{next(_counter)}_{tmp_path.name[-6:].lower().replace('-', '_')}"
    contract = f"{schema}.shipments"
    engine.sql(f"CREATE SCHEMA IF NOT EXISTS `{schema}`")
    parcels = f"{schema}.parcels"
    migrations = _plan_all(tmp_path, contract, VERSIONS)
    _plan_all(tmp_path, parcels, PARCELS)
    assert apply(engine, migrations, tables=[contract, parcels]).exit_code == 0
    history = load_history(migrations / contract)
    drop_notes = next(op for op in history[3].migration.ops if op.kind == "drop_columns")
    assert drop_notes.kind == "drop_columns" and drop_notes.gate.objects == (f"{contract}.notes",)  # type: ignore[attr-defined]
    assert all(op.kind != "mark_deprecated" for op in history[3].migration.ops)  # marked by 2.1.0 only
    entries = Ledger(engine.ledger_table()).entries([contract, parcels])
    swaps = sorted(
        e.ended_at
        for e in entries
        if e.op_kind == "create_view" and e.status == "succeeded" and e.ended_at and e.contract == contract
    )
    assert len(swaps) == 2
    before_v2 = swaps[0] + (swaps[1] - swaps[0]) / 2  # the alias served shipments__v1 then
    start = max(e.ended_at for e in entries if e.ended_at is not None)
    now = start + timedelta(days=31)  # 2.1.0's mark is 31 days old: the P30D window has passed

    days = [now - timedelta(days=d, hours=1) for d in range(19, -1, -1)]  # the last an hour ago: fresh
    rows = [
        (f"dispatch-{n}", "dispatch-team",
         f"SELECT s.shipment_id, s.notes FROM {contract} AS s WHERE s.origin = 'BLR'", at)
        for n, at in enumerate(days)
    ]  # fmt: skip
    rows += [
        ("typo", "intern", f"SELEC notes FROM {contract}", days[-2]),
        ("old-job", "etl", f"SELECT origin FROM {schema}.shipments__v1", days[-3]),
        ("star-then", "bi", f"SELECT * FROM {contract}", before_v2),
        ("star-now", "bi", f"SELECT * FROM {contract}", days[-4]),
    ]
    spark = reader
    watched = watched_on(engine, [history[3].contract])  # the live marks, and the ledger's history of names
    spec = parse_source(f"query-history:{_export(tmp_path / 'history.jsonl', rows)}")
    collect(spark, read_source(spark, spec), spec.name, watched, engine.state_dir, now=now)
    # A one-off export, collected once a month ago (as `collect` records it; no second Spark job).
    oneoff = Watermark("query-history:/exports/oneoff.jsonl", start, start, start, 1, 0)
    record_watermark(engine.state_dir, oneoff)

    # 9. Reads through the alias view are resolved against what it served at the statement's time.
    logged = {(str(r["object"]), r["kind"], r["statement_id"]) for r in read_rows(engine.state_dir)}
    v1, v2 = f"{schema}.shipments__v1", f"{schema}.shipments__v2"
    assert {(f"{v2}.notes", "read", f"dispatch-{n}") for n in range(20)} <= logged, sorted(logged)
    assert (f"{v2}.notes", "possible", "typo") in logged
    star_then = {obj for obj, _, sid in logged if sid == "star-then"}
    # before 2.0.0 the alias served shipments__v1: its column notes was read there; the table as a whole was
    # the live version then, not a deprecated one (a read of the alias follows it; issue 38 item 10)
    assert star_then == {f"{v1}.notes"}
    assert (f"{v2}.notes", "read", "star-now") in logged
    # 10. One name per object: the log, the report and the gate all say shipments__v2.notes.
    assert not any(obj.startswith(f"{contract}.") or obj == contract for obj, _, _ in logged)
    monkeypatch.chdir(tmp_path)  # no contracts/ here: the report lists what the log holds
    report = _report(tmp_path / "wh")
    readers: list[dict[str, str]] = report[f"{v2}.notes"]["readers"]  # type: ignore[assignment]
    assert {r["user"] for r in readers} == {"dispatch-team", "intern", "bi"}
    assert f"{contract}.notes" not in report

    held = apply(engine, migrations, tables=[contract], clock=lambda: now, dry_run=True)
    waiting = {(w.migration_id, w.index): w.reasons for w in held.waiting}
    # 12. Both drops say what they wait for, each its own reasons.
    ops_v1 = history[1].migration.ops
    drop_v1 = (history[1].migration_id, next(i for i, op in enumerate(ops_v1, 1) if op.kind == "drop_table"))
    ops_v3 = history[3].migration.ops
    drop_col = (
        history[3].migration_id,
        next(i for i, op in enumerate(ops_v3, 1) if op.kind == "drop_columns"),
    )
    assert set(waiting) == {drop_v1, drop_col}
    stale = f"stale readers log: source {oneoff.source} was collected up to"
    assert any(
        r.startswith(f"{v1}: 1 reader(s)") and r.endswith("etl (Databricks SQL)") for r in waiting[drop_v1]
    )
    notes = f"{v2}.notes ({contract}.notes): 3 reader(s) since"
    assert any(r.startswith(notes) for r in waiting[drop_col]), waiting[drop_col]
    assert waiting[drop_col][-1] == f"and {drop_v1[0]} op {drop_v1[1]} is held by its gate"
    # 11. The mark 2.1.0 set counts for 3.0.0's drop: its window has passed, so it is not among the reasons.
    assert not any("no record of when" in r or "deprecation window" in r for r in waiting[drop_col])
    assert any(r.startswith(stale) for r in waiting[drop_col])
    # 12. The one-off source, retired on purpose, no longer holds the drops; their readers still do.
    retire_source(engine.state_dir, oneoff.source, "one-off audit export", "ann", now)
    retired = apply(engine, migrations, tables=[contract, parcels], clock=lambda: now, dry_run=True)
    reasons = [r for w in retired.waiting for r in w.reasons]
    assert len(retired.waiting) == 2 and not any(r.startswith(stale) for r in reasons)
    assert any(r.startswith(notes) for r in reasons)
    # 11. parcels' drop (2.0.0) counts its window from 1.1.0's mark: nobody read notes, the window passed,
    # the log covers the lookback: it would run.
    (drop,) = [r for r in retired.reports if r.contract == parcels and r.kind == "drop_columns"]
    assert drop.status is OpStatus.PLANNED, drop.reasons
    marks = [e.ended_at for e in entries if e.contract == parcels and e.op_kind == "mark_deprecated"]
    marked = min(m for m in marks if m is not None)
    early = apply(
        engine, migrations, tables=[parcels], clock=lambda: marked + timedelta(days=29), dry_run=True
    )
    (reason,) = [r for w in early.waiting for r in w.reasons if "window" in r]
    assert reason.startswith(f"deprecation window P30D since {marked:%Y-%m-%d %H:%M} UTC ends ")
