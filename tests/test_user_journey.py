"""A new user's journey (issue 13): a contract of one's own, `shop.events`, taken through twelve versions
covering every change kind — additive, NOT NULL with a default, loosened check with description and property
changes, tightening, widening, rename, drop, NOT NULL filled by an expression with a NOT NULL column made
nullable, the switch to a versioned table, a narrowing type change with its conversion, and a partitioning
change — each step planned with the CLI, applied on the default (local) engine to a table that holds rows,
then checked with `create`, `status`, `drift` and the rows read through the table's name."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.engine.base import Engine
from delta_contracts.plan.migrations import load_history, table_folder
from delta_contracts.state.ledger import Ledger, LedgerEntry
from delta_contracts.tableid import TableId
from tests.test_user_messages import build_held_cutover

pytestmark = pytest.mark.engine
runner = CliRunner()

PROJECT = """\
target: delta-4
migrations: ../migrations
engine: {name: local, warehouse: ../warehouse}
defaults:
  owner: {team: shop}
"""

HEAD = """\
apiVersion: delta-contracts/v1
id: shop.events
version: {version}
description: {description}
table: {{partitioned_by: [{partition}]{versioning}{properties}}}
columns:
"""

EVENT_ID = "  - {name: event_id, type: bigint, nullable: false}\n"
KIND = "  - {name: kind, type: string, checks: {enum: [view, buy, cart]}}\n"
KIND_LOOSE = "  - {name: kind, type: string, checks: {enum: [view, buy, cart, return]}}\n"
KIND_TIGHT = "  - {name: kind, type: string, checks: {enum: [view, buy, return]}}\n"
PAGE_URL = "  - {name: page_url, type: string}\n"
URL = "  - {name: url, type: string, renamed_from: page_url}\n"
URL_PLAIN = "  - {name: url, type: string}\n"
QUANTITY = "  - {name: quantity, type: int}\n"
QUANTITY_WIDE = "  - {name: quantity, type: bigint}\n"
PRICE = "  - {name: price, type: 'decimal(10,2)'}\n"
PRICE_CENTS = (
    "  - {name: price, type: bigint, description: Price in cents.,\n"
    "     convert: {expression: 'CAST(price * 100 AS BIGINT)',\n"
    "               inverse: 'CAST(price / 100 AS DECIMAL(10,2))'}}\n"
)
PRICE_CENTS_PLAIN = "  - {name: price, type: bigint, description: Price in cents.}\n"
EVENT_DATE = "  - {name: event_date, type: date}\n"
REFERRER = "  - {name: referrer, type: string}\n"
CHANNEL = "  - {name: channel, type: string, nullable: false, default: web}\n"
CHANNEL_NULLABLE = "  - {name: channel, type: string, default: web}\n"
SESSION = (
    "  - {name: session_id, type: string, nullable: false,\n"
    "     fill: \"concat('s-', CAST(event_id AS STRING))\"}\n"
)
SESSION_PLAIN = "  - {name: session_id, type: string, nullable: false}\n"

Row = dict[str, object]


def _same(row: Row) -> Row:
    return dict(row)


@dataclass(frozen=True)
class Step:
    version: str
    change: str  # the change kind this step takes the table through
    columns: tuple[str, ...]
    shown: Callable[[Row], Row] = _same  # how a row written before this step reads after it
    versioned: bool = False
    partition: str = "event_date"
    description: str = "What shoppers did."
    properties: str = ""

    def text(self) -> str:
        versioning = ", versioning: versioned" if self.versioned else ""
        properties = f", properties: {{{self.properties}}}" if self.properties else ""
        head = HEAD.format(
            version=self.version,
            description=self.description,
            partition=self.partition,
            versioning=versioning,
            properties=properties,
        )
        return head + "".join(self.columns)


def _renamed(row: Row) -> Row:
    out = {("url" if k == "page_url" else k): v for k, v in row.items()}
    return out


def _without(name: str) -> Callable[[Row], Row]:
    return lambda row: {k: v for k, v in row.items() if k != name}


def _with(name: str, value: Callable[[Row], object]) -> Callable[[Row], Row]:
    return lambda row: {**row, name: row.get(name, value(row))}


def _in_cents(row: Row) -> Row:
    price = row["price"]
    assert isinstance(price, Decimal)
    return {**row, "price": int(price * 100)}


# Every change kind, in an order a team would meet them. Widening comes after delta-rs has committed to the
# table in this engine session (the tightening's DROP CONSTRAINT), where Sail's ALTER COLUMN used to fail
# after committing (issue 13 item 2).
BASE = (EVENT_ID, KIND, PAGE_URL, QUANTITY, PRICE, EVENT_DATE)
STEPS = (
    Step("1.0.0", "create", BASE),
    Step("1.1.0", "add nullable column", (*BASE, REFERRER), _with("referrer", lambda r: None)),
    Step(
        "1.2.0",
        "add NOT NULL column with default",
        (*BASE, REFERRER, CHANNEL),
        _with("channel", lambda r: "web"),
    ),
    Step(
        "1.3.0",
        "loosen a check, change description and a table property",
        (EVENT_ID, KIND_LOOSE, PAGE_URL, QUANTITY, PRICE, EVENT_DATE, REFERRER, CHANNEL),
        description="What shoppers did, one row per event.",
        properties="shop.tier: gold",
    ),
    Step(
        "2.0.0",
        "tighten a check",
        (EVENT_ID, KIND_TIGHT, PAGE_URL, QUANTITY, PRICE, EVENT_DATE, REFERRER, CHANNEL),
        properties="shop.tier: gold",
    ),
    Step(
        "2.1.0",
        "widen a type",
        (EVENT_ID, KIND_TIGHT, PAGE_URL, QUANTITY_WIDE, PRICE, EVENT_DATE, REFERRER, CHANNEL),
        properties="shop.tier: gold",
    ),
    Step(
        "3.0.0",
        "rename a column",
        (EVENT_ID, KIND_TIGHT, URL, QUANTITY_WIDE, PRICE, EVENT_DATE, REFERRER, CHANNEL),
        _renamed,
        properties="shop.tier: gold",
    ),
    Step(
        "4.0.0",
        "drop a column",
        (EVENT_ID, KIND_TIGHT, URL_PLAIN, QUANTITY_WIDE, PRICE, EVENT_DATE, CHANNEL),
        _without("referrer"),
        properties="shop.tier: gold",
    ),
    Step(
        "5.0.0",
        "add NOT NULL column without default (filled), make a NOT NULL column nullable",
        (EVENT_ID, KIND_TIGHT, URL_PLAIN, QUANTITY_WIDE, PRICE, EVENT_DATE, CHANNEL_NULLABLE, SESSION),
        _with("session_id", lambda r: f"s-{r['event_id']}"),
        properties="shop.tier: gold",
    ),
    Step(
        "6.0.0",
        "switch to a versioned table behind the alias view",
        (EVENT_ID, KIND_TIGHT, URL_PLAIN, QUANTITY_WIDE, PRICE, EVENT_DATE, CHANNEL_NULLABLE, SESSION_PLAIN),
        versioned=True,
        properties="shop.tier: gold",
    ),
    Step(
        "7.0.0",
        "narrowing type change with an explicit conversion",
        (
            EVENT_ID,
            KIND_TIGHT,
            URL_PLAIN,
            QUANTITY_WIDE,
            PRICE_CENTS,
            EVENT_DATE,
            CHANNEL_NULLABLE,
            SESSION_PLAIN,
        ),
        _in_cents,
        versioned=True,
        properties="shop.tier: gold",
    ),
    Step(
        "8.0.0",
        "change partitioning",
        (
            EVENT_ID,
            KIND_TIGHT,
            URL_PLAIN,
            QUANTITY_WIDE,
            PRICE_CENTS_PLAIN,
            EVENT_DATE,
            CHANNEL_NULLABLE,
            SESSION_PLAIN,
        ),
        versioned=True,
        partition="kind",
        properties="shop.tier: gold",
    ),
)


def run(*args: str) -> tuple[int, str]:
    """Exit code and standard output; standard error (the engine line, errors) is appended after a rule."""
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout + "\n---\n" + result.stderr


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "contracts/shop").mkdir(parents=True)
    (tmp_path / "contracts/contracts.yml").write_text(PROJECT)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def physical(step: Step) -> str:
    """The table holding the rows: the contract id, or `<id>__v<major>` behind a view once versioned."""
    return f"shop.events__v{step.version.split('.')[0]}" if step.versioned else "shop.events"


def names(step: Step) -> list[str]:
    return [line.split("name: ", 1)[1].split(",", 1)[0] for line in step.columns]


def test_every_change_kind_on_one_table(project: Path) -> None:
    from delta_contracts.apply import apply
    from delta_contracts.engine.local.engine import LocalEngine

    contract = project / "contracts/shop/events.yaml"
    rows: list[Row] = []  # what readers must see, by column
    with LocalEngine(project / "warehouse") as engine:
        for n, step in enumerate(STEPS):
            before = project / "before.yaml"  # the last version, kept outside the project
            if n:
                before.write_text(contract.read_text())
            contract.write_text(step.text())
            if n:  # the declared bump is what the change needs, read with the same defaults on both sides
                code, out = run("diff", str(before), str(contract))
                assert code == 0 and "[ok]" in out, f"{step.version}: {out}"
            code, out = run("plan")
            assert code == 0, f"{step.version}: {out}"
            assert run("plan", "--check")[0] == 0
            if n:  # the table is at the last version: create says to apply, and changes nothing
                code, out = run("create")
                assert (code, out.splitlines()[0]) == (1, f"shop.events {step.version}: pending"), out
            (stored,) = load_history(table_folder(project / "migrations", "shop.events"))[n:]
            applied = apply(
                engine,
                project / "migrations",
                tables=["shop.events"],
                to_version=step.version,
                force_reason="journey: the dropped objects have no readers",
            )
            assert applied.exit_code == 0 and not applied.waiting, (step.version, applied.failure)
            assert {r.migration_id for r in applied.reports if r.status.value != "done"} == {
                stored.migration_id
            }
            code, out = run("create")
            assert (code, out.splitlines()[0]) == (
                0,
                f"shop.events {step.version}: verified {physical(step)}",
            )
            rows = [step.shown(row) for row in rows]
            status = check_status(step)
            write(engine, step, status["write"], event_id=n + 1, rows=rows)
            code, out = run("drift")
            assert (code, out.splitlines()[0]) == (0, f"shop.events ({physical(step)}): no drift"), out
            seen = engine.sql("SELECT * FROM `shop`.`events` ORDER BY `event_id`")  # what readers query
            assert [set(r) for r in seen] == [set(names(step))] * len(rows), step.version
            assert [{k: r[k] for k in names(step)} for r in seen] == rows, (step.version, step.change)
    assert len(rows) == len(STEPS)  # one row written at every version, all still there


def check_status(step: Step) -> dict[str, object]:
    code, out = run("status", "--format", "json")
    assert code == 0, out
    (row,) = json.loads(out.split("\n---\n")[0])["tables"]
    assert (row["stamped"], row["pending"], row["read"], row["write"]) == (
        step.version,
        [],
        "shop.events",
        physical(step),
    ), step.version
    return row  # type: ignore[no-any-return]


def write(engine: Engine, step: Step, table: object, *, event_id: int, rows: list[Row]) -> None:
    """A producer writes one row of the current shape to the table status says writers use."""
    cents = PRICE_CENTS_PLAIN in step.columns or PRICE_CENTS in step.columns
    values: dict[str, object] = {
        "event_id": event_id,
        "kind": "buy",
        "page_url": f"/p/{event_id}",
        "url": f"/p/{event_id}",
        "quantity": event_id,
        "price": event_id * 100 + 25 if cents else Decimal(f"{event_id}.25"),
        "event_date": date(2026, 11, event_id),
        "referrer": "search",
        "channel": "app",
        "session_id": f"s-{event_id}",
    }
    row = {k: values[k] for k in names(step)}
    columns = ", ".join(f"`{k}`" for k in row)
    literals = ", ".join(_literal(v) for v in row.values())
    schema, name = str(table).split(".")
    engine.sql(f"INSERT INTO `{schema}`.`{name}` ({columns}) VALUES ({literals})")
    rows.append(row)


def _literal(value: object) -> str:
    if isinstance(value, date):
        return f"DATE'{value.isoformat()}'"
    if isinstance(value, Decimal):
        return f"CAST('{value}' AS DECIMAL(10,2))"
    if isinstance(value, str):
        return f"'{value}'"
    return str(value)


# -- round 3: what a new user hit ----------------------------------------------------------------------------

NOTES_V1 = """\
apiVersion: delta-contracts/v1
id: shop.notes
version: {version}
owner: {{team: shop}}
table: {{partitioned_by: [day]}}
columns:
  - {{name: note_id, type: bigint, nullable: false}}
  - {{name: day, type: date}}
"""
NOTE_NULLABLE = "  - {name: note, type: string}\n"
NOTE_NOT_NULL = "  - {name: note, type: string, nullable: false}\n"
NOTE_FILLED = "  - {name: note, type: string, nullable: false, fill: \"'(none)'\"}\n"
LABEL_WITH_DEFAULT = "  - {name: label, type: string, nullable: false, default: plain}\n"


def test_adding_a_contracts_yml_does_not_move_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "contracts/shop").mkdir(parents=True)
    (tmp_path / "contracts/shop/notes.yaml").write_text(NOTES_V1.format(version="1.0.0") + NOTE_NULLABLE)
    assert run("plan")[0] == 0
    assert table_folder(tmp_path / "migrations", "shop.notes").is_dir()
    (tmp_path / "contracts/contracts.yml").write_text("target: delta-4\n")  # the minimal project file
    code, out = run("plan")
    assert code == 0 and "shop.notes 1.0.0: up to date" in out, out
    assert run("plan", "--check")[0] == 0
    assert not (tmp_path / "contracts/migrations").exists()
    # A history where an older default put it (beside contracts.yml) is refused loudly, not started anew.
    (tmp_path / "migrations").rename(tmp_path / "contracts/migrations")
    code, out = run("plan")
    assert code == 2, out
    assert "the migrations of shop.notes are in contracts/migrations" in out, out
    assert not (tmp_path / "migrations").exists()


def test_a_failed_migration_is_discarded_and_phases_run_in_order(project: Path) -> None:
    """A migration refused by its pre-check is discarded and planned again once the contract is fixed (it
    never ran: no rehash); `--phase cutover` before expand says what to run; piped output is not wrapped."""
    from delta_contracts.engine.local.engine import LocalEngine

    contract = project / "contracts/shop/notes.yaml"
    contract.write_text(NOTES_V1.format(version="1.0.0") + NOTE_NULLABLE)
    assert run("plan")[0] == 0
    code, out = run("apply")
    assert code == 0, out
    with LocalEngine(project / "warehouse") as engine:  # the catalog is read from the warehouse at start
        engine.sql(
            "INSERT INTO `shop`.`notes` VALUES (1, DATE'2026-11-01', NULL), (2, DATE'2026-11-02', 'b')"
        )

    contract.write_text(NOTES_V1.format(version="2.0.0") + NOTE_NOT_NULL)
    assert run("plan")[0] == 0
    (stored,) = load_history(table_folder(project / "migrations", "shop.notes"))[1:]
    code, out = run("apply")
    assert code == 1 and "failed shop.notes" in out, out  # one NULL note: the pre-check refuses

    code, out = run("discard", "shop.notes", stored.migration_id, "--reason", "rows without a note")
    assert code == 0, out
    contract.write_text(NOTES_V1.format(version="2.0.0") + NOTE_FILLED)
    assert run("plan")[0] == 0
    assert run("plan", "--check")[0] == 0
    code, out = run("apply")
    assert code == 0, out

    contract.write_text(NOTES_V1.format(version="2.1.0") + NOTE_FILLED + LABEL_WITH_DEFAULT)
    assert run("plan")[0] == 0
    code, out = run("apply", "--phase", "cutover")
    assert code == 2, out
    assert "nothing ran: --phase cutover comes after phases that have not run" in out, out
    assert "its expand phase has not run; run `apply --phase expand` first" in out, out
    waiting = [line for line in out.splitlines() if "[cutover]" in line and "(waiting: " in line]
    assert waiting, out
    # piped (not a terminal): each op's line whole, however long, never cut at 80 columns
    assert all(line.rstrip().endswith("(--phase))") for line in waiting), waiting
    assert max(map(len, waiting)) > 80, waiting
    code, out = run("apply")
    assert code == 0, out
    with LocalEngine(project / "warehouse") as engine:
        seen = engine.sql("SELECT `note_id`, `note`, `label` FROM `shop`.`notes` ORDER BY `note_id`")
    assert [(r["note_id"], r["note"], r["label"]) for r in seen] == [
        (1, "(none)", "plain"),
        (2, "b", "plain"),
    ]


# -- round 4: what a new user hit (issue 38) -----------------------------------------------------------------

IOT_PROJECT = """\
target: delta-4
migrations: ../migrations
engine: {name: local, warehouse: ../warehouse}
"""
READINGS = """\
apiVersion: delta-contracts/v1
id: iot.sensor_readings
version: {version}
owner: {{team: iot}}
table: {{versioning: versioned}}
columns:
  - {{name: reading_id, type: bigint, nullable: false}}
  - {{name: sensor_id, type: string}}
"""
HUMIDITY = "  - {name: humidity_pct, type: double}\n"
HUMIDITY_DECIMAL = "  - {name: humidity_pct, type: 'decimal(5,2)'}\n"


@pytest.fixture
def iot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "contracts/iot").mkdir(parents=True)
    (tmp_path / "contracts/contracts.yml").write_text(IOT_PROJECT)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def test_diff_refuses_the_type_change_plan_refuses(iot: Path) -> None:
    """Item 3: double -> decimal(5,2) without `convert` is refused by the PR check, as by the planner, in the
    same words; with a `convert` both accept it."""
    contract = iot / "contracts/iot/sensor_readings.yaml"
    before = iot / "before.yaml"
    before.write_text(READINGS.format(version="1.0.0") + HUMIDITY)
    contract.write_text(READINGS.format(version="2.0.0") + HUMIDITY_DECIMAL)
    code, out = run("diff", str(before), str(contract))
    assert code == 1 and "[ok]" not in out, out
    why = "humidity_pct type changed: double -> decimal(5,2): a CAST to decimal(5,2) can lose values"
    assert why in out and "declare `convert" in out, out
    contract.write_text(READINGS.format(version="1.0.0") + HUMIDITY)
    assert run("plan")[0] == 0
    contract.write_text(READINGS.format(version="2.0.0") + HUMIDITY_DECIMAL)
    code, out = run("plan")
    assert code != 0 and why in out, out
    convert = "convert: {expression: 'CAST(humidity_pct AS DECIMAL(5,2))'}"
    contract.write_text(
        READINGS.format(version="2.0.0") + f"  - {{name: humidity_pct, type: 'decimal(5,2)', {convert}}}\n"
    )
    code, out = run("diff", str(before), str(contract))
    assert code == 0 and "[ok]" in out, out
    assert run("plan")[0] == 0


INVERSE = "inverse: 'CAST(humidity_pct AS DOUBLE)'"
HUMIDITY_ROUNDED = (
    "  - {{name: humidity_pct, type: 'decimal(5,2)',\n"
    "     convert: {{expression: 'CAST(ROUND(humidity_pct, 2) AS DECIMAL(5,2))', " + INVERSE + "{lossy}}}}}\n"
)


def _readings_at_v1(iot: Path, values: str) -> None:
    """iot.sensor_readings 1.0.0 applied on the embedded engine, holding `values`."""
    from delta_contracts.engine.local.engine import LocalEngine

    contract = iot / "contracts/iot/sensor_readings.yaml"
    contract.write_text(READINGS.format(version="1.0.0") + HUMIDITY)
    assert run("plan")[0] == 0
    code, out = run("apply")
    assert code == 0, out
    # contracts.yml says ../warehouse: the path is said as it is (item 13), not as contracts/../warehouse
    assert f"engine: local ({iot / 'warehouse'})" in out and "/../" not in out, out
    with LocalEngine(iot / "warehouse") as engine:
        engine.sql(f"INSERT INTO `iot`.`sensor_readings__v1` VALUES {values}")


def _ledger(iot: Path, status: str) -> list[LedgerEntry]:
    from delta_contracts.engine.local.engine import LocalEngine

    with LocalEngine(iot / "warehouse") as engine:
        entries = Ledger(engine.ledger_table()).entries(["iot.sensor_readings"])
    return [e for e in entries if e.status == status]


def test_an_inexact_inverse_is_refused_by_name(iot: Path) -> None:
    """Item 1: without `lossy`, the copy's refusal names the column and the condition that failed, with how
    many rows and a sample of them, not a bare WHERE."""
    _readings_at_v1(iot, "(1, 's1', 15.411D), (2, 's1', 15.41D), (3, 's2', NULL), (4, 's2', 15.4149D)")
    contract = iot / "contracts/iot/sensor_readings.yaml"
    contract.write_text(READINGS.format(version="2.0.0") + HUMIDITY_ROUNDED.format(lossy=""))
    assert run("plan")[0] == 0
    code, out = run("apply")
    assert code == 1, out
    failed = out.split("failed ", 1)[1]
    assert "2 row(s) of iot.sensor_readings__v1 cannot be copied" in failed, out
    assert (
        "  - column humidity_pct: the inverse does not give back the original value (the conversion to "
        "decimal(5,2) changes it: lossy); declare `convert: {lossy: true}` on the column to copy such rows "
        "anyway, counted: 2 row(s)"
    ) in failed, out
    assert "overflow" not in failed.split("Sample")[0], out  # no row overflows: that condition is not named
    sample = failed.split("Sample of the first", 1)[1]
    assert "15.411" in sample and "15.4149" in sample and "'reading_id': 2" not in sample, out


def test_a_lossy_conversion_copies_and_counts_what_it_changed(iot: Path) -> None:
    """Item 1: `convert.lossy: true` lets the copy round 15.411 to 15.41, counts the rows it changed and says
    so in apply's output and the ledger; a value the conversion cannot hold (overflow) is refused still."""
    from delta_contracts.engine.local.engine import LocalEngine

    _readings_at_v1(iot, "(1, 's1', 15.411D), (2, 's1', 15.41D), (3, 's2', NULL), (4, 's2', 1234.5D)")
    contract = iot / "contracts/iot/sensor_readings.yaml"
    contract.write_text(READINGS.format(version="2.0.0") + HUMIDITY_ROUNDED.format(lossy=", lossy: true"))
    assert run("plan")[0] == 0
    code, out = run("apply")
    assert code == 1, out
    failed = out.split("failed ", 1)[1]
    assert (
        "  - column humidity_pct: the conversion to decimal(5,2) gives NULL where the source is not NULL "
        "(overflow, or no such value): refused, lossy or not: 1 row(s)"
    ) in failed, out
    assert "the inverse does not give back" not in failed, out
    assert "1234.5" in failed.split("Sample of the first", 1)[1], out

    with LocalEngine(iot / "warehouse") as engine:  # the sensor's reading was a fault: it goes
        engine.sql("DELETE FROM `iot`.`sensor_readings__v1` WHERE `reading_id` = 4")
    code, out = run("apply")
    assert code == 0, out
    counted = "humidity_pct: 1 row(s) changed by its lossy conversion"
    (copied,) = [line for line in out.splitlines() if "[populate]" in line and "copy rows" in line]
    assert "(succeeded" in copied and counted in copied, out
    (entry,) = [e for e in _ledger(iot, "succeeded") if (e.op_kind, e.phase) == ("copy_rows", "populate")]
    assert counted in entry.detail
    with LocalEngine(iot / "warehouse") as engine:
        seen = engine.sql("SELECT `reading_id`, `humidity_pct` FROM `iot`.`sensor_readings` ORDER BY 1")
    assert [(r["reading_id"], r["humidity_pct"]) for r in seen] == [
        (1, Decimal("15.41")),
        (2, Decimal("15.41")),
        (3, None),
    ]


def test_a_migration_stopped_before_its_cutover_is_discarded_as_if_never_planned(iot: Path) -> None:
    """Item 2: the copy into iot.sensor_readings__v2 failed; nobody reads or writes __v2 before the cutover,
    so `discard` drops it, removes the migration and records it: the served table's history and the ledger's
    state are what they were before the migration was planned. The contract fixed (lossy declared), the same
    version is planned and applied, and the rows read through the table's name."""
    from delta_contracts.engine.local.engine import LocalEngine

    _readings_at_v1(iot, "(1, 's1', 15.411D), (2, 's1', 15.41D), (3, 's2', NULL)")
    folder = table_folder(iot / "migrations", "iot.sensor_readings")
    files = {p.name: p.read_bytes() for p in folder.iterdir()}

    def state() -> tuple[object, ...]:
        with LocalEngine(iot / "warehouse") as engine:
            served = [
                (c.version, c.operation) for c in engine.history(TableId.parse("iot.sensor_readings__v1"))
            ]
            new = engine.describe(TableId.parse("iot.sensor_readings__v2"))
            view = engine.view_text(TableId.parse("iot.sensor_readings"))
            ledger = Ledger(engine.ledger_table()).entries(["iot.sensor_readings"])
        return served, new, view, ledger

    served, new, view, ledger = state()
    assert new is None and view is not None
    contract = iot / "contracts/iot/sensor_readings.yaml"
    contract.write_text(READINGS.format(version="2.0.0") + HUMIDITY_ROUNDED.format(lossy=""))
    assert run("plan")[0] == 0
    (planned,) = load_history(folder)[1:]
    code, out = run("apply")
    assert code == 1 and "the inverse does not give back the original value" in out, out
    assert state()[1] is not None  # the failed migration had created __v2

    code, out = run("discard", "iot.sensor_readings", planned.migration_id, "--reason", "rounding intended")
    assert code == 0, out
    assert "dropped iot.sensor_readings__v2" in out, out
    after = state()
    assert after[:3] == (served, None, view)  # the table readers use, unchanged; __v2 gone
    assert isinstance(after[3], list) and isinstance(ledger, list)
    discards = [e for e in after[3] if e.status == "discarded"]
    assert [e for e in after[3] if e not in discards] == ledger
    (row,) = discards
    assert (row.migration_id, row.reason) == (planned.migration_id, "rounding intended")
    assert "dropped iot.sensor_readings__v2" in row.detail
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files  # migrations.sum as before
    code, out = run("status", "--format", "json")
    (status,) = json.loads(out.split("\n---\n")[0])["tables"]
    assert (status["stamped"], status["pending"]) == ("1.0.0", []), out
    code, out = run("history", "iot.sensor_readings")  # people still see what was undone, and why
    assert "discarded" in out and "failed" in out, out

    contract.write_text(READINGS.format(version="2.0.0") + HUMIDITY_ROUNDED.format(lossy=", lossy: true"))
    assert run("plan")[0] == 0
    (replanned,) = load_history(folder)[1:]
    assert replanned.migration_id == planned.migration_id
    code, out = run("apply")
    assert code == 0 and "humidity_pct: 1 row(s) changed by its lossy conversion" in out, out
    with LocalEngine(iot / "warehouse") as engine:
        seen = engine.sql("SELECT `reading_id`, `humidity_pct` FROM `iot`.`sensor_readings` ORDER BY 1")
    assert [r["humidity_pct"] for r in seen] == [Decimal("15.41"), Decimal("15.41"), None]


def test_discard_refuses_a_migration_readers_already_see(iot: Path) -> None:
    """Item 2: once the cutover served the new table, discarding would pull it from under its readers."""
    _readings_at_v1(iot, "(1, 's1', 15.5D)")
    contract = iot / "contracts/iot/sensor_readings.yaml"
    contract.write_text(READINGS.format(version="2.0.0") + HUMIDITY_ROUNDED.format(lossy=""))
    assert run("plan")[0] == 0
    code, out = run("apply")
    assert code == 0, out
    (planned,) = load_history(table_folder(iot / "migrations", "iot.sensor_readings"))[1:]
    code, out = run("discard", "iot.sensor_readings", planned.migration_id, "--reason", "changed my mind")
    assert code == 2 and "has reached the table" in out and "cutover phase" in out, out
    assert "plan a new migration that moves the table on instead" in out.lower(), out


def test_a_pending_migration_is_not_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 12: after a normal `apply` whose versioned cutover (3.0.0) waits behind the held drop of __v1,
    `drift` reports the pending migrations with why they wait, compares the live table with the contract it
    is stamped at (2.0.0), and exits 0; what changed outside the toolkit still exits 1."""
    root = build_held_cutover(tmp_path / "iot")
    monkeypatch.chdir(root)
    code, out = run("drift")
    assert code == 0, out
    assert "✗" not in out, out
    pending = [line for line in out.splitlines() if "pending:" in line]
    assert any(
        "0003_2.0.0_to_3.0.0 to 3.0.0 pending (phases cutover, contract not finished)" in p for p in pending
    ), out
    assert any("0002_1.0.0_to_2.0.0 to 2.0.0 pending" in p and "waiting: " in p for p in pending), out
    from delta_contracts.engine.local.engine import LocalEngine

    with LocalEngine(root / "warehouse") as engine:  # a change made by hand, outside the toolkit
        engine.sql("ALTER TABLE `iot`.`sensor_readings__v2` SET TBLPROPERTIES ('team.note' = 'by hand')")
    code, out = run("drift")
    assert code == 1 and "✗" in out, out
