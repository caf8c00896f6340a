"""What a new user hit (issue 38): an IoT team's versioned `iot.sensor_readings` on the embedded engine, at
2.0.0 with the drop of `__v1` held by its gate, and 3.0.0 (a rename: a new table `__v3`) planned, its
expand and populate run, its cutover waiting behind that held drop. Every message `apply`, `status`,
`history` and pinned reads print there must tell the truth, in words or SQL, never a Python repr."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app

pytestmark = pytest.mark.engine
runner = CliRunner()

PROJECT = """\
target: delta-4
migrations: ../migrations
engine: {name: local, warehouse: ../warehouse}
defaults:
  owner: {team: iot}
"""

CONTRACT = """\
apiVersion: delta-contracts/v1
id: iot.sensor_readings
version: {version}
table: {{partitioned_by: [{partition}], versioning: versioned}}
columns:
  - {{name: sensor_id, type: bigint, nullable: false}}
  - {{name: day, type: date}}
  - {site}
  - {{name: value, type: double}}
"""
SITE = "{name: site, type: string}"
LOCATION = "{name: location, type: string, renamed_from: site}"
V1, V2, V3 = "0001_create_1.0.0", "0002_1.0.0_to_2.0.0", "0003_2.0.0_to_3.0.0"


def run(*args: str) -> tuple[int, str]:
    """Exit code and standard output; standard error (the engine line, errors) is appended after a rule."""
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout + "\n---\n" + result.stderr


def _write(root: Path, version: str, partition: str, site: str) -> None:
    text = CONTRACT.format(version=version, partition=partition, site=site)
    (root / "contracts/iot/sensor_readings.yaml").write_text(text)


def build_held_cutover(root: Path) -> Path:
    """The project as the IoT team had it, in `root`: 1.0.0 and 2.0.0 applied (the drop of __v1 held), a row
    in the table, and 3.0.0 planned with its expand and populate run."""
    from delta_contracts.apply import apply
    from delta_contracts.engine.local.engine import LocalEngine

    (root / "contracts/iot").mkdir(parents=True)
    (root / "contracts/contracts.yml").write_text(PROJECT)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        _write(root, "1.0.0", "day", SITE)
        assert run("plan")[0] == 0
        with LocalEngine(root / "warehouse") as engine:
            assert apply(engine, root / "migrations").exit_code == 0
            engine.sql("INSERT INTO `iot`.`sensor_readings__v1` VALUES (1, DATE'2026-11-01', 'north', 1.5)")
            _write(root, "2.0.0", "site", SITE)
            assert run("plan")[0] == 0
            second = apply(engine, root / "migrations")
            assert second.exit_code == 0 and [r.index for r in second.waiting] == [8], second.reports
            _write(root, "3.0.0", "day", LOCATION)
            assert run("plan")[0] == 0
            third = apply(engine, root / "migrations", phases=["expand", "populate"])
            assert third.exit_code == 0 and third.failure is None
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_held_cutover(tmp_path_factory.mktemp("iot"))


@pytest.fixture
def iot(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the built project of the test's own (the warehouse's paths are relative)."""
    root = tmp_path / "iot"
    shutil.copytree(built, root)
    monkeypatch.chdir(root)
    yield root


def _marked(out: str, mark: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(f"{mark} iot.")]


# -- item 4: what waits, on what, and counts that add up -----------------------------------------------------


def test_a_cutover_behind_a_held_drop_says_what_it_waits_on(iot: Path) -> None:
    code, out = run("apply", "--phase", "cutover")
    assert code == 0, out
    cutover = [line for line in _marked(out, "…") if f"{V3} [cutover]" in line]
    assert len(cutover) == 5, out
    for line in cutover:
        # It waits on the drop of __v1 (0002 op 8), which did not run: its phase was not selected and its gate
        # is shut. Not on "phase contract", which is not this op's phase.
        assert "(waiting: phase contract not selected" not in line, line
        assert f"{V2} op 8 (drop table iot.sensor_readings__v1) has not run" in line, line
        assert "its gate is shut" in line, line
    drop = next(line for line in out.splitlines() if f"{V2} [contract] op 8" in line)
    assert "phase contract not selected (--phase)" in drop and "its gate is shut" in drop, drop
    # The count line adds up what was printed: nothing ran, nothing was held in this run's phases, every
    # op printed as waiting is counted as waiting.
    waiting, held = len(_marked(out, "…")), len(_marked(out, "⏸"))
    assert (waiting, held) == (9, 0), out
    assert f"0 op(s) ran, {held} held at gates, {waiting} waiting on earlier ops or --phase" in out, out


# -- item 5: status names the table that carries the stamp ---------------------------------------------------


def test_status_names_the_stamped_live_table_and_the_next_one(iot: Path) -> None:
    import json

    code, out = run("status")
    assert code == 0, out
    line = next(line for line in out.splitlines() if line.startswith("iot.sensor_readings contract"))
    # __v2 is live and stamped 2.0.0; __v3 exists, filled by 0003, and carries no stamp yet.
    assert "table iot.sensor_readings__v2 stamped 2.0.0" in line, line
    assert "iot.sensor_readings__v3 stamped" not in line, line
    assert "next iot.sensor_readings__v3 (not stamped yet)" in line, line
    assert "write iot.sensor_readings__v2" in line, line
    code, out = run("status", "--format", "json")
    (row,) = json.loads(out.split("\n---\n")[0])["tables"]
    assert (row["table"], row["stamped"], row["write"]) == (
        "iot.sensor_readings__v2",
        "2.0.0",
        "iot.sensor_readings__v2",
    )
    assert row["next"] == {"table": "iot.sensor_readings__v3", "exists": True, "stamped": None}


# -- item 6: a pin of a planned version is not served yet ---------------------------------------------------


def test_a_pin_of_a_version_not_served_yet_says_so(iot: Path) -> None:
    from delta_contracts.engine.local.engine import LocalEngine
    from delta_contracts.quality.read import PinNotServedError, resolve

    with LocalEngine(iot / "warehouse") as engine, pytest.raises(PinNotServedError) as raised:
        resolve(engine, "iot.sensor_readings", "^3", migrations=iot / "migrations")
    message = str(raised.value)
    assert "not served yet" in message and "any more" not in message, message
    assert V3 in message and "cutover" in message, message  # the migration that will serve it
    assert "live version 2.0.0" in message, message
    assert "^3 instead" not in message and "read version ^2" in message, message


# -- item 7: a deprecated pin names the version served now, and the time left in words ---------------------


def test_a_deprecated_pin_names_the_version_served_and_the_time_left_in_words(iot: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from delta_contracts.engine.local.engine import LocalEngine
    from delta_contracts.quality.read import DeprecatedVersionWarning, read, resolve

    with LocalEngine(iot / "warehouse") as engine:
        at = datetime.now(UTC)
        served = resolve(engine, "iot.sensor_readings", "^1", migrations=iot / "migrations", now=at)
        assert served.window_left is not None
        ends = at + served.window_left  # the mark's time and the 30 days' window
        now = ends - timedelta(days=29, hours=23, minutes=58, seconds=30)  # 29 days 23 hours and more left
        with pytest.warns(DeprecatedVersionWarning) as warned:
            rows = read(engine, "iot.sensor_readings", "^1", migrations=iot / "migrations", now=now)
        assert [r["site"] for r in rows.collect()] == ["north"]
    (message,) = [str(w.message) for w in warned]
    assert "move to iot.sensor_readings 2.0.0" in message and "3.0.0" not in message, message
    assert "29 days 23 hours of its deprecation window left" in message, message
    assert f"it ends {ends:%Y-%m-%d %H:%M} UTC" in message, message
    assert "days," not in message and ":58:" not in message, message  # no timedelta repr


# -- item 8: every condition shown is SQL or plain words -------------------------------------------------


def test_dry_run_shows_pre_checks_as_sql_or_words(iot: Path) -> None:
    code, out = run("apply", "--dry-run", "--force", "--reason", "what would run")
    assert code == 0, out
    checks = [line for line in out.splitlines() if line.startswith("-- pre-check")]
    assert checks, out
    for line in checks:
        assert "TableExists" not in line and "(table=" not in line, line
        if line.startswith("-- pre-check, must return 0: "):
            assert line.removeprefix("-- pre-check, must return 0: ").startswith("SELECT COUNT(*)"), line
    # the catch-up into __v3 needs both tables: said in words
    assert "-- pre-check: table iot.sensor_readings__v2 exists" in checks, checks
    assert "-- pre-check: table iot.sensor_readings__v3 exists" in checks, checks


def test_every_condition_is_described_in_words() -> None:
    """No condition kind, nor a table condition an op defines, is shown as its Python repr."""
    from delta_contracts.plan import conditions as c
    from delta_contracts.plan.ops import FeatureAbsent
    from delta_contracts.tableid import TableId

    t = TableId(("iot", "sensor_readings__v1"))
    every = [
        c.TableExists(t),
        c.TableAbsent(t),
        c.ViewDefined(t, "SELECT * FROM `iot`.`sensor_readings__v2`"),
        c.ColumnPresent(t, "site"),
        c.ColumnAbsent(t, "site"),
        c.ColumnTypeIs(t, "site", "string"),
        c.ColumnNullable(t, "site", False),
        c.ColumnCommentIs(t, "site", "Where it's installed."),
        c.ColumnDefaultIs(t, "site", None),
        c.CheckIs(t, "value_positive", "value > 0"),
        c.CheckAbsent(t, "value_positive"),
        c.PropertiesSet(t, (("delta.appendOnly", "false"),)),
        c.ClusteredBy(t, ("day",)),
        c.TableCommentIs(t, None),
        c.StampedAfter(t, "delta_contracts.version", "2.0.0"),
        c.NoRowsWhere(t, "`site` IS NULL"),
        FeatureAbsent(t, "deletionVectors"),
        c.IdentityCoversRows(t, "reading_id"),
        c.UnchangedSinceFence(t),
        c.RenamedColumnCarried(t, "site", "`location`"),
    ]
    import typing

    kinds = set(typing.get_args(c.Condition)) - {c.TableCondition, c.AllOf, c.AnyOf}
    assert kinds <= {type(condition) for condition in every}, "a condition kind this test does not show"
    described = [c.describe(condition) for condition in every]
    for condition, text in zip(every, described, strict=True):
        assert type(condition).__name__ not in text and "=(" not in text and "TableId" not in text, text
        assert "iot.sensor_readings__v1" in text, text
    assert described[0] == "table iot.sensor_readings__v1 exists"
    assert described[7] == "column site of iot.sensor_readings__v1 has the comment 'Where it''s installed.'"
    both = c.describe(c.AllOf((every[0], c.AnyOf((every[3], every[14])))))
    assert both == f"{described[0]}, and ({described[3]} or {described[14]})", both


def test_a_refused_pre_check_shows_its_sample_rows_as_json() -> None:
    from datetime import date
    from decimal import Decimal

    from delta_contracts.engine.base import PreconditionFailedError
    from delta_contracts.plan.conditions import NoRowsWhere
    from delta_contracts.plan.ops import DropTable, Gate, Phase
    from delta_contracts.tableid import TableId

    table = TableId(("iot", "sensor_readings__v1"))
    drop = DropTable(
        table=table,
        phase=Phase.CONTRACT,
        gate=Gate("P30D", "P14D", "delta_contracts.deprecated.table", (str(table),)),
        left_behind="`site` IS NULL",
    )
    sample = {"sensor_id": 1, "day": date(2026, 11, 1), "site": None, "value": Decimal("1.50")}
    refused = PreconditionFailedError(drop, NoRowsWhere(table, "`site` IS NULL"), 1, [sample])
    shown = str(refused).splitlines()[-1].strip()
    assert shown == '{"sensor_id": 1, "day": "2026-11-01", "site": null, "value": "1.50"}', shown


# -- item 9: versions only for commits, one name per op, held gates in the history --------------------------


def test_apply_shows_a_version_only_for_an_op_that_committed_it(iot: Path) -> None:
    from delta_contracts.engine.local.engine import LocalEngine
    from delta_contracts.tableid import TableId

    tables = [TableId(("iot", f"sensor_readings__v{n}")) for n in (2, 3)]
    with LocalEngine(iot / "warehouse") as engine:
        before = {str(t): engine.table_version(t) for t in tables}
    code, out = run("apply", "--force", "--reason", "the readers moved")
    assert code == 0, out
    ran = _marked(out, "!") + _marked(out, "✓")
    assert len(ran) == 9, out  # 0002's contract phase, 0003's cutover and contract phases
    shown: dict[str, list[int]] = {}
    for line in ran:
        version = re.search(r" → v(\d+)\)$", line)
        if version is not None:
            shown.setdefault(line.split(" ")[1], []).append(int(version[1]))
    with LocalEngine(iot / "warehouse") as engine:
        for table, versions in shown.items():
            # each version shown is one this run committed: new, shown once, and in the table's history
            start = before[table]
            assert start is not None and all(v > start for v in versions), (table, start, versions)
            assert versions == sorted(set(versions)), (table, versions)
            if engine.describe(TableId.parse(table)) is not None:  # __v2 is dropped by 0003's contract phase
                committed = {c.version for c in engine.history(TableId.parse(table))}
                assert set(versions) <= committed, (table, versions, committed)
    assert shown["iot.sensor_readings__v3"], out  # the stamp committed one
    # the fence found every row in __v3 already: it committed nothing, and shows no version
    fence = next(line for line in ran if f"{V3} [cutover] op 7:" in line)
    assert "→ v" not in fence, fence


def test_the_fence_has_one_name_in_apply_and_history(iot: Path) -> None:
    code, out = run("apply", "--force", "--reason", "the readers moved")
    assert code == 0, out
    fence = next(line for line in out.splitlines() if f"{V3} [cutover] op 7:" in line)
    assert "op 7: catch up rows iot.sensor_readings__v2 -> iot.sensor_readings__v3 (fence:" in fence, fence
    code, out = run("history", "iot.sensor_readings")
    assert code == 0, out
    (line,) = [line for line in out.splitlines() if f"{V3} op 7 " in line]
    assert f"{V3} op 7 [cutover] catch_up_rows: succeeded by" in line, line  # no commit: no version


def test_history_records_the_drops_held_at_their_gates(iot: Path) -> None:
    code, out = run("apply")
    assert code == 0, out
    code, out = run("history", "iot.sensor_readings")
    assert code == 0, out
    held = [line for line in out.splitlines() if ": held" in line]
    # one row per held drop and run: the fixture's apply of 2.0.0, and this one (0002's drop, 0003's drop)
    assert [line.split(" iot.sensor_readings ")[1].split(":")[0] for line in held] == [
        f"{V3} op 8 [contract] drop_table",
        f"{V2} op 8 [contract] drop_table",
        f"{V2} op 8 [contract] drop_table",
    ], out
    assert "deprecation window P30D since" in held[1] and "no telemetry collected" in held[1], held[1]
    assert f"and {V2} op 8 is held by its gate" in held[0], held[0]


# -- item 10: readers of the alias view are not readers of the table it served -----------------------------


def _statements(path: Path, now: datetime) -> None:
    """A dashboard reading the contract's name every minute (through the alias view, after the 2.0.0 cutover),
    and a legacy job reading __v1 by its own name."""
    rows = [
        {
            "statement_id": f"a{n}",
            "statement": f"SELECT site, value FROM iot.sensor_readings WHERE sensor_id = {n}",
            "user": "dashboard",
            "time": (now + timedelta(minutes=n)).isoformat(),
        }
        for n in range(12)
    ]
    rows.append(
        {
            "statement_id": "b1",
            "statement": "SELECT * FROM iot.sensor_readings__v1",
            "user": "legacy",
            "time": now.isoformat(),
        }
    )
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_readers_of_the_alias_view_are_not_counted_against_the_tables_it_served(iot: Path) -> None:
    _statements(iot / "statements.jsonl", datetime.now(UTC))
    code, out = run(
        "telemetry", "collect", "--source", "statements:statements.jsonl",
        "--user-column", "user", "--time-column", "time", "--id-column", "statement_id",
    )  # fmt: skip
    assert code == 0, out
    code, out = run("telemetry", "report", "--format", "json")
    assert code == 0, out
    reports = {r["object"]: r for r in json.loads(out.split("\n---\n")[0])["objects"]}
    # __v2 is the live table (its mark never ran): not watched, nobody is counted against it as a table; the
    # dashboard reads its column site, which 3.0.0 renames: that is worth knowing, and said as such
    assert "iot.sensor_readings__v2" not in reports, reports.keys()
    readers = reports["iot.sensor_readings__v2.site"]["readers"]
    assert [(r["user"], r["reads"]) for r in readers] == [("dashboard", 12)], readers
    # __v1 is deprecated: only the job naming it reads it; the dashboard follows the alias view
    readers = reports["iot.sensor_readings__v1"]["readers"]
    assert [(r["user"], r["reads"]) for r in readers] == [("legacy", 1)], readers
    code, out = run("apply")
    assert code == 0, out
    held = out[out.index(f"waiting iot.sensor_readings__v1 {V2} op 8") :].split("\n  opens ")[0]
    assert "iot.sensor_readings__v1: 1 reader(s) since" in held and "legacy" in held, held
    assert "dashboard" not in held, held


def test_the_readers_report_shows_each_readers_latest_statements(iot: Path) -> None:
    _statements(iot / "statements.jsonl", datetime.now(UTC))
    code, out = run(
        "telemetry", "collect", "--source", "statements:statements.jsonl",
        "--user-column", "user", "--time-column", "time", "--id-column", "statement_id",
    )  # fmt: skip
    assert code == 0, out
    code, out = run("telemetry", "report")
    assert code == 0, out
    lines = out.split("\n---\n")[0].splitlines()
    legacy = next(line for line in lines if line.startswith("  legacy "))
    assert legacy.endswith(
        'e.g. "SELECT * FROM iot.sensor_readings__v1" (b1)  UNKNOWN (not a declared consumer)'
    )
    dashboard = next(line for line in lines if line.startswith("  dashboard "))
    # the newest three, newest first (a11 ran last), as the statements they were; not ids sorted as text
    newest = [
        f'"SELECT site, value FROM iot.sensor_readings WHERE sensor_id = {n}" (a{n})' for n in (11, 10, 9)
    ]
    assert f"e.g. {'; '.join(newest)}" in dashboard, dashboard
    code, out = run("telemetry", "report", "--format", "json")
    reports = {r["object"]: r for r in json.loads(out.split("\n---\n")[0])["objects"]}
    (reader,) = reports["iot.sensor_readings__v2.site"]["readers"]
    assert reader["sample_statement_ids"] == ["a11", "a10", "a9"], reader
    assert [s["text"] for s in reader["sample_statements"]] == [
        f"SELECT site, value FROM iot.sensor_readings WHERE sensor_id = {n}" for n in (11, 10, 9)
    ]


def test_a_readers_log_from_before_the_statement_column_gains_it(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from delta_contracts.telemetry.log import ReaderRow, append_readers, read_rows
    from delta_contracts.telemetry.names import Names
    from delta_contracts.telemetry.store import readers_path, readers_schema

    at = datetime(2026, 11, 20, tzinfo=UTC)
    before = pa.schema([f for f in readers_schema() if f.name != "statement"])  # the log's old schema
    old = {"object": "iot.t", "kind": "read", "user": "u", "client": "c", "statement_id": "x"}
    rows = [{**old, "statement_time": at, "source": "s", "collected_at": at}]
    write_deltalake(str(readers_path(tmp_path)), pa.Table.from_pylist(rows, schema=before))
    new = ReaderRow("iot.t", "read", "u", "c", "y", at, "s", "SELECT * FROM iot.t")
    assert append_readers(tmp_path, [new], at, Names()) == 1
    logged = {r["statement_id"]: r["statement"] for r in read_rows(tmp_path)}
    assert logged == {"x": None, "y": "SELECT * FROM iot.t"}
