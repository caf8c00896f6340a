"""Every recipe of the op matrix (tests/recipes.py, each versioning) executed through the CLI on a Unity
Catalog OSS catalog, with rows, on a managed and on an external table (issue 48): `plan` and `apply` end the
table where the same CLI flow ends it on Spark's session catalog (rows by key, columns with their types and
nullability, CHECKs, properties, partitioning, clustering, comment), the rows are the ones the contracts say
(`recipe_run.expected_rows`), and the Delta history of every table the migration touched runs on from the
versions it had; or `plan` refuses the migration with exit 2 and the reason, and the table is as it was.

The flow is a user's: write the old contract, `plan`, `apply`, write rows (recipe_run's ROWS), write the new
contract, `plan`, `apply --force` (the recipes' contract phases wait at gates). Typer's runner drives the CLI
in this process, which finds the process's one Spark session (the connector on it) and one server.

A managed table is what the toolkit creates: CREATE TABLE without LOCATION, in a catalog with a storage root.
The toolkit has no setting for a table's location, so an external table is made the way its owner would make
one: the CREATE TABLE the create migration plans, run by hand with a LOCATION clause, before `apply`, whose
create op then finds its table (postcondition: the table exists) and runs the rest (CHECKs, stamp, the alias
view). A versioned major version's new table `<name>__vN` is created by the toolkit, so it is managed.

The reference runs once per (recipe, versioning), on the session catalog in a schema of its own (dropped after
its state is read).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.marks import HOLD
from delta_contracts.plan.ops import CreateTable
from delta_contracts.plan.planner import plan as plan_pair
from delta_contracts.plan.render import render
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import Target
from tests.engine.recipe_run import ROWS, checksum, expected_rows, write_rows
from tests.recipes import pair
from tests.tiers import all_cases
from tests.unity import UnityServer

# Exhaustive (never in `make test`), and a tier of its own: hours on two cores (`make test-unity-matrix`).
pytestmark = [pytest.mark.engine, pytest.mark.exhaustive, pytest.mark.unity_matrix]
runner = CliRunner()
KINDS = ("managed", "external")
_cells = itertools.count()

# The table properties that differ between a Unity Catalog table and the same table on the session catalog
# for reasons that are no part of what a contract says:
# - on every Unity Catalog table, the server's own (`io.unitycatalog.*`: the table's id there);
# - on a managed one, what Unity Catalog 0.6.0 sets on every managed table it creates (catalog-managed: the
#   catalog commits them, with column mapping, deletion vectors, row tracking, v2 checkpoints and in-commit
#   timestamps on, and storage defaults; docs/engines.md, "Unity Catalog"). Those are measured, not listed:
#   the properties of an empty managed table created in the catalog (`Unity.managed_defaults`), and the
#   bookkeeping the features they turn on keep as the table changes (`MANAGED_BOOKKEEPING`).
CATALOG_PROPERTIES = ("io.unitycatalog.",)
MANAGED_BOOKKEEPING = ("delta.columnMapping.maxColumnId", "delta.rowTracking.", "delta.inCommitTimestamp")


@dataclass(frozen=True)
class EndState:
    """A table as a migration left it, read through the session (both catalogs alike)."""

    rows: dict[str, str]  # txn_id -> the row read through the contract's name, values as text
    served: str  # checksum of those rows, as the contracts' expected rows are summed
    shape: dict[str, Any]  # columns, CHECKs, partitioning, clustering, comment
    properties: dict[str, str]  # the physical table's, its catalog and schema written <where>

    def comparable(self, left_out: frozenset[str]) -> dict[str, str]:
        """The properties, without those whose key starts with one of `left_out`."""
        prefixes = tuple(left_out)
        return {k: v for k, v in self.properties.items() if not k.startswith(prefixes)}


def _text(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _text(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_text(v) for v in value]
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    return None if value is None else str(value)


def _contract_text(contract: Contract) -> str:
    data = contract.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    return yaml.safe_dump(data, sort_keys=False)


def _invoke(root: Path, *args: str) -> tuple[int, str]:
    """The CLI run from the project's folder, as its user runs it."""
    with contextlib.chdir(root):
        result = runner.invoke(app, list(args))
    return result.exit_code, result.output


@dataclass(frozen=True)
class Place:
    """Where one flow runs: its project folder, and the catalog and schema prefix its environment maps the
    contract's id to."""

    root: Path
    catalog: str | None  # None: the session catalog
    prefix: str

    def name(self, parts: Sequence[str]) -> TableId:
        """The physical name of a contract-id-shaped name (schema, table) here."""
        schema, table = parts
        mapped = (f"{self.prefix}{schema}", table)
        return TableId(mapped if self.catalog is None else (self.catalog, *mapped))

    def write(self, contract: Contract) -> None:
        (self.root / "contracts" / "transactions.yaml").write_text(_contract_text(contract), encoding="utf-8")


@dataclass(frozen=True)
class Unity:
    server: UnityServer
    catalog: str
    managed_defaults: frozenset[str]  # the properties the catalog gives every managed table it creates


def _place(folder: Path, at: Unity | None) -> Place:
    prefix = f"c{next(_cells)}_"
    (folder / "contracts").mkdir(parents=True)
    catalog = None if at is None else at.catalog
    unity = "" if at is None else f", unity_catalog: {{uri: '{at.server.uri}', catalogs: [{at.catalog}]}}"
    env = f"schema_prefix: {prefix}" + ("" if at is None else f", catalog: {at.catalog}")
    (folder / "contracts" / "contracts.yml").write_text(
        "target: delta-4\nmigrations: ../migrations\n"
        f"engine: {{name: spark, warehouse: ../wh{unity}}}\n"
        f"environments:\n  dev: {{{env}}}\n",
        encoding="utf-8",
    )
    return Place(folder, catalog, prefix)


def _physical(old: Contract, new: Contract) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The old and the new contract's physical table, as contract-id-shaped names."""
    _, state = plan_pair(None, old, Target.DELTA_4)
    _, after = plan_pair(old, new, Target.DELTA_4, state=state)
    return tuple(state.physical), tuple(after.physical)


def _create_external(engine: Engine, place: Place, old: Contract, location: Path) -> None:
    """The old table as its owner makes an external one: the create migration's CREATE TABLE with a
    LOCATION."""
    from sqlglot import exp, parse_one

    from delta_contracts.sql.dialect import DIALECT

    mapped = old.model_copy(update={"id": ".".join(place.name(old.table_parts))})
    created, _ = plan_pair(None, mapped, Target.DELTA_4)
    create = next(op for op in created.ops if isinstance(op, CreateTable))
    statement = parse_one(render(create), dialect=DIALECT)
    properties = statement.args.get("properties") or exp.Properties(expressions=[])
    properties.append("expressions", exp.LocationProperty(this=exp.Literal.string(location.as_uri())))
    statement.set("properties", properties)
    engine.sql(x.sql(statement))


FORCED = ("--force", "--reason", "recipe matrix")  # the recipes' contract phases wait at gates


def _apply(place: Place) -> None:
    code, out = _invoke(place.root, "apply", "contracts", "--env", "dev", *FORCED)
    assert code == 0, out


def _plan(place: Place) -> tuple[int, str]:
    return _invoke(place.root, "plan", "contracts")


def _read_rows(engine: Engine, name: TableId) -> list[dict[str, Any]]:
    return engine.sql(f"SELECT * FROM {x.sql(x.table(name))}")


def _history(engine: Engine, name: TableId) -> list[tuple[int, str]]:
    return sorted((c.version, c.operation) for c in engine.history(name))


def _end_state(engine: Engine, place: Place, new: Contract, physical: Sequence[str]) -> EndState:
    rows = _read_rows(engine, place.name(new.table_parts))
    live = engine.describe(place.name(physical))
    assert live is not None, physical
    names = [n for n in (place.catalog, f"{place.prefix}{new.table_parts[0]}") if n]
    properties = {}
    for key, value in live.properties.items():
        for name in names:
            value = value.replace(name, "<where>")
        # the producer hold's value is the instant it was released: its presence is what both must share
        properties[key] = "<instant>" if key == HOLD else value
    shape = {
        "columns": [(c.name, c.type, c.nullable, c.comment, c.default) for c in live.columns],
        "checks": {k.casefold(): x.canonical_expression(v) for k, v in live.checks.items()},
        "partitioning": live.partition_columns,
        "clustering": live.clustering_columns,
        "comment": live.comment,
    }
    by_key = {str(r["txn_id"]): json.dumps(_text(r), sort_keys=True) for r in rows}
    assert len(by_key) == len(rows), rows
    return EndState(by_key, checksum(rows), shape, properties)


@dataclass(frozen=True)
class Flow:
    """One recipe's CLI flow at one place: the old table with rows, then the new contract planned."""

    place: Place
    old: Contract
    new: Contract
    old_physical: tuple[str, ...]
    new_physical: tuple[str, ...]


def _start(engine: Engine, folder: Path, case: tuple[str, str], at: Unity | None, kind: str) -> Flow:
    """The old contract planned and applied (its table created, external or managed), its rows written;
    `at`: the Unity Catalog catalog, or None for the session catalog."""
    place = _place(folder, at)
    recipe, versioning = case
    old, new = pair(recipe, versioning)
    old_physical, new_physical = _physical(old, new)
    schema = place.name(old.table_parts)[:-1]
    engine.sql(f"CREATE SCHEMA IF NOT EXISTS {x.sql(x.table(schema))}")
    place.write(old)
    code, out = _plan(place)
    assert code == 0, out
    if kind == "external":
        _create_external(engine, place, old, folder / "external" / old_physical[-1])
    _apply(place)
    write_rows(engine, place.name(old_physical), ROWS)
    place.write(new)
    return Flow(place, old, new, old_physical, new_physical)


def _drop(engine: Engine, place: Place, parts: Sequence[str]) -> None:
    engine.sql(f"DROP SCHEMA IF EXISTS {x.sql(x.table(place.name(parts)[:-1]))} CASCADE")


_references: dict[tuple[str, str], EndState] = {}


def _reference(engine: Engine, folder: Path, recipe: str, versioning: str) -> EndState:
    """The same flow on the session catalog, once per (recipe, versioning)."""
    if (recipe, versioning) not in _references:
        flow = _start(engine, folder, (recipe, versioning), None, "managed")
        code, out = _plan(flow.place)
        assert code == 0, f"the session catalog's plan refused {recipe}/{versioning}: {out}"
        _apply(flow.place)
        _references[(recipe, versioning)] = _end_state(engine, flow.place, flow.new, flow.new_physical)
        _drop(engine, flow.place, flow.old_physical)
    return _references[(recipe, versioning)]


@pytest.fixture(scope="module")
def recipes_catalog(unity_server: UnityServer, spark_engine: Engine) -> Unity:
    """One catalog of the server for the module (its storage root allows managed tables), registered on the
    process's session as the CLI registers it; each cell in a schema of its own in it. The properties Unity
    Catalog gives a managed table of its own accord are read off an empty one made here."""
    from delta_contracts.contract.unity import UnityCatalogSettings
    from delta_contracts.engine.spark.unity import catalog_settings, register_on

    name = unity_server.fresh_catalog("recipes")
    settings = UnityCatalogSettings(uri=unity_server.uri, token="", catalogs=(name,))
    register_on(spark_engine.spark, catalog_settings(settings))  # type: ignore[attr-defined]
    probe = TableId((name, "probe", "t"))
    spark_engine.sql(f"CREATE SCHEMA IF NOT EXISTS {x.sql(x.table(probe[:-1]))}")
    spark_engine.sql(f"CREATE TABLE {x.sql(x.table(probe))} (a INT) USING DELTA")
    live = spark_engine.describe(probe, with_version=False)
    assert live is not None
    return Unity(unity_server, name, frozenset(live.properties))


def _continuous(history: list[tuple[int, str]]) -> bool:
    return [v for v, _ in history] == list(range(len(history)))


CELLS = [
    pytest.param(recipe, versioning, kind, id=f"{recipe}-{versioning}-{kind}")
    for recipe, versioning in all_cases()
    for kind in KINDS
]


@pytest.mark.parametrize(("recipe", "versioning", "kind"), CELLS)
def test_recipe_on_unity_catalog_ends_where_it_ends_on_the_session_catalog(
    spark_engine: Engine,
    recipes_catalog: Unity,
    tmp_path: Path,
    recipe: str,
    versioning: str,
    kind: str,
    record_property: Any,
) -> None:
    flow = _start(spark_engine, tmp_path / "uc", (recipe, versioning), recipes_catalog, kind)
    old_table = flow.place.name(flow.old_physical)
    before = _history(spark_engine, old_table)
    assert _continuous(before), before
    before_rows = _read_rows(spark_engine, old_table)
    live = spark_engine.describe(old_table, with_version=False)
    assert live is not None
    location = live.location
    if kind == "external":
        assert Path(location.removeprefix("file:")).parent == tmp_path / "uc" / "external", location
    planned = sorted((flow.place.root / "migrations").rglob("*"))
    code, out = _plan(flow.place)
    if code != 0:
        # refused before anything changed: the reason, no traceback, the table as it was
        assert code == 2, out
        assert "Unity Catalog OSS 0.6.0 cannot" in out and "Traceback" not in out, out
        assert out.count("Unity Catalog OSS, which cannot run this migration") == 1, out
        assert sorted((flow.place.root / "migrations").rglob("*")) == planned, "no migration written"
        assert _history(spark_engine, old_table) == before
        assert checksum(_read_rows(spark_engine, old_table)) == checksum(before_rows)
        _drop(spark_engine, flow.place, flow.old_physical)
        record_property("outcome", "refused at plan")
        return
    code, out = _invoke(flow.place.root, "apply", "contracts", "--env", "dev", *FORCED)
    if code == 2 and "cannot run this migration" in out:
        # what only the live table tells (a catalog-managed table's purge) is refused by `apply` before its
        # first op: the reason, no traceback, the table as it was
        assert "Unity Catalog OSS 0.6.0 blocks" in out and "Traceback" not in out, out
        assert _history(spark_engine, old_table) == before
        assert checksum(_read_rows(spark_engine, old_table)) == checksum(before_rows)
        _drop(spark_engine, flow.place, flow.old_physical)
        record_property("outcome", "refused at apply, before its first op")
        return
    assert code == 0, out
    on_uc = _end_state(spark_engine, flow.place, flow.new, flow.new_physical)
    expected = checksum(expected_rows(flow.old, flow.new, ROWS))
    assert on_uc.served == expected, f"{recipe}/{versioning}: rows served differ from the contract's"
    # the old table's log runs on from where it was (no restarted log), and so does the new one's
    if flow.new_physical != flow.old_physical:
        # a versioned major version's contract phase drops the old table (forced here), as on the session
        # catalog; the new table's log starts at its creation and runs on
        assert _continuous(_history(spark_engine, flow.place.name(flow.new_physical)))
    else:
        after = _history(spark_engine, old_table)
        assert _continuous(after) and after[: len(before)] == before, (before, after)
        # migrated in place, the table is where it was (an external one too): no copy made elsewhere
        live = spark_engine.describe(old_table, with_version=False)
        assert live is not None and live.location == location, (live.location, location)
    reference = _reference(spark_engine, tmp_path / "session", recipe, versioning)
    assert on_uc.rows == reference.rows
    assert on_uc.shape == reference.shape
    # the table the migration ends on is external only where the old one was and the migration kept it
    managed = kind == "managed" or flow.new_physical != flow.old_physical
    left_out = frozenset(CATALOG_PROPERTIES)
    if managed:
        left_out |= recipes_catalog.managed_defaults | frozenset(MANAGED_BOOKKEEPING)
    assert on_uc.comparable(left_out) == reference.comparable(left_out)
    _drop(spark_engine, flow.place, flow.old_physical)
