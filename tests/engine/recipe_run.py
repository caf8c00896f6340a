"""One golden migration executed on a real engine against a table holding rows (no pytest here: the delta-3
virtualenv runs it too, through `tests/engine/delta3_run.py`).

Create the old table, write rows, apply the migration phase by phase (an old producer writes one more row
between populate and cutover, as producers do): every statement accepted, every pre-check counted before its
op (`apply_op` stops on a violation), every postcondition true after its op, re-applying the finished
migration skips every op, and the rows read through the contract's name are compared with the rows the
contracts say it must serve — computed here from the contracts, not by the planner.

On delta-spark the old table starts as a clone of a template made by the same create migration
(`clone_old_table`), whose ops then find their postconditions true; `local` runs the create migration whole.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from delta_contracts.contract.model import Contract
from delta_contracts.engine.base import Engine
from delta_contracts.marks import HOLD
from delta_contracts.plan.catch_up import CatchUpRows
from delta_contracts.plan.ops import CopyRows, Migration, Op, Phase
from delta_contracts.plan.planner import plan
from delta_contracts.sql import expressions as x
from delta_contracts.target import Target
from tests.recipes import BASE, base_contract, pair

_schemas = itertools.count()
BASE_SCHEMA = str(BASE["id"]).split(".")[0]  # the schema the golden files are planned in

# Rows every contract of the recipe matrix accepts, before and after its change.
ROWS: tuple[dict[str, Any], ...] = (
    {
        "txn_id": "t1",
        "txn_amt_paise": 1250,
        "attempts": 1,
        "status": "OK",
        "legacy_channel": "web",
        "txn_date": date(2026, 11, 1),
        # the nested recipes' columns (tests/recipes.py NESTED_COLUMNS): written where the table has them
        "addr": {"zip": "z1", "n": 5},
        "items": [{"sku": "s1", "q": 2}, {"sku": "s2", "q": None}],
        "m": {"k1": {"f": "f1", "g": 3}},
    },
    {
        "txn_id": "t2",
        "txn_amt_paise": 99,
        "attempts": None,
        "status": "OK",
        "legacy_channel": None,
        "txn_date": date(2026, 11, 2),
        "addr": None,
        "items": None,
        "m": {"k2": {"f": "f2", "g": 7}},
    },
)
# Written by a producer that still writes the old shape, after populate and before cutover.
LATE_ROW: dict[str, Any] = {
    "txn_id": "t3",
    "txn_amt_paise": 7,
    "attempts": 2,
    "status": "OK",
    "legacy_channel": "app",
    "txn_date": date(2026, 11, 2),
    "addr": {"zip": "z3", "n": 9},
    "items": [{"sku": "s3", "q": 4}],
    "m": {"k3": {"f": "f3", "g": 1}},
}


def checksum(rows: Iterable[Mapping[str, Any]]) -> str:
    """Order-independent digest of rows, values normalised to text (so 12 and Decimal('12') agree)."""

    def text(value: Any) -> str:
        if isinstance(value, Decimal):
            return format(value.normalize(), "f")
        return "NULL" if value is None else str(value)

    lines = sorted(
        json.dumps({k.casefold(): text(v) for k, v in row.items()}, sort_keys=True) for row in rows
    )
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def null_structs_as_delta_3_writes_them(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows with every struct whose fields are all NULL read as NULL, as on delta-3 both are one value:
    Delta 3.3 on Spark 3.5 writes a NULL struct an INSERT gives it as a struct of NULL fields (measured: the
    Parquet file of `INSERT INTO t VALUES (2, NULL)` holds `{'zip': None, 'n': None}` for the struct column,
    before any migration; Delta 4 on Spark 4 keeps the NULL)."""

    def value(v: Any) -> Any:
        if isinstance(v, Mapping):
            inner = {k: value(x) for k, x in v.items()}
            return None if inner and all(x is None for x in inner.values()) else inner
        if isinstance(v, list):
            return [value(x) for x in v]
        return v

    return [{k: value(v) for k, v in row.items()} for row in rows]


def expected_rows(old: Contract, new: Contract, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows as the new contract says they must read: renamed, converted, filled, defaulted."""
    out = []
    for row in rows:
        values = {k.casefold(): v for k, v in row.items()}
        shaped: dict[str, Any] = {}
        for column in new.columns:
            source = (column.renamed_from or column.name).casefold()
            known = source in values and old.column(source) is not None
            if known and column.convert is not None:
                shaped[column.name] = _evaluate(column.convert.expression, values)
            elif known and (before := old.column(source)) is not None and before.type != column.type:
                shaped[column.name] = _reshaped(
                    values[source], before.type, column.type, column.renamed_fields
                )
            elif known:
                shaped[column.name] = values[source]
            elif column.fill is not None:
                shaped[column.name] = _evaluate(column.fill, values)
            else:
                shaped[column.name] = column.default
        out.append(shaped)
    return out


def _reshaped(value: Any, old_type: str, new_type: str, renamed_fields: Mapping[str, str]) -> Any:
    """A value of a column whose fields change (added, dropped, renamed, widened), as the new type holds it:
    computed here from the two types and the declared renames, not by the planner's copy expression."""
    from delta_contracts.contract.types import ArrayType, MapType, SparkType, StructType, parse_type

    renames = {tuple(p.casefold().split(".")): name for p, name in renamed_fields.items()}

    def shape(item: Any, old: SparkType, new: SparkType, at: tuple[str, ...]) -> Any:
        if item is None:
            return None
        if isinstance(old, StructType) and isinstance(new, StructType):
            sources = {renames.get((*at, f.name.casefold()), f.name).casefold(): f for f in old.fields}
            out = {}
            for field in new.fields:
                source = sources.get(field.name.casefold())
                step = (*at, source.name.casefold()) if source is not None else at
                out[field.name] = (
                    shape(item.get(source.name), source.type, field.type, step) if source else None
                )
            return out
        if isinstance(old, ArrayType) and isinstance(new, ArrayType):
            return [shape(e, old.element, new.element, (*at, "element")) for e in item]
        if isinstance(old, MapType) and isinstance(new, MapType):
            return {k: shape(v, old.value, new.value, (*at, "value")) for k, v in item.items()}
        return item

    return shape(value, parse_type(old_type), parse_type(new_type), ())


def typed_literal(value: Any, type_text: str) -> Any:
    """A row's value as a SQL literal of the column's type: structs, arrays and maps built field by field
    (a NULL inside one CAST to its field's type), any other value as `x.literal` writes it."""
    from sqlglot import exp

    from delta_contracts.contract.types import ArrayType, MapType, SparkType, StructType, parse_type

    def build(item: Any, spark_type: SparkType) -> exp.Expr:
        if item is None:
            return x.cast(exp.Null(), str(spark_type))
        if isinstance(spark_type, StructType):
            fields = [exp.alias_(build(item.get(f.name), f.type), x.ident(f.name)) for f in spark_type.fields]
            return exp.Struct(expressions=fields)
        if isinstance(spark_type, ArrayType):
            return exp.Array(expressions=[build(e, spark_type.element) for e in item])
        if isinstance(spark_type, MapType):
            pairs = [
                part
                for k, v in item.items()
                for part in (build(k, spark_type.key), build(v, spark_type.value))
            ]
            return exp.Anonymous(this="map", expressions=pairs)
        return x.literal(item)

    if value is None:
        return exp.Null()
    return build(value, parse_type(type_text))


def _evaluate(expression: str, values: Mapping[str, Any]) -> Any:
    """A contract's fill or conversion over one old row, evaluated by sqlglot's Python executor — not by the
    engine under test, whose result it is compared with."""
    from sqlglot import exp
    from sqlglot.executor import execute

    from delta_contracts.sql.dialect import DIALECT

    query = exp.select(exp.alias_(x.parse(expression), "v")).from_("t")
    result = execute(query, dialect=DIALECT, tables={"t": [dict(values)]})
    (value,) = result.rows[0]
    return value


def create_schema(engine: Engine, name: str) -> None:
    from sqlglot import exp

    engine.sql(x.sql(exp.Create(this=x.ident(name), kind="SCHEMA", exists=True)))


def drop_schema(engine: Engine, name: str) -> None:
    """Keep the session's catalog small: view look-ups walk every schema."""
    from sqlglot import exp

    schema = exp.Table(db=x.ident(name))
    engine.sql(x.sql(exp.Drop(tables=[schema], kind="SCHEMA", exists=True, cascade=True)))


def write_rows(engine: Engine, table: tuple[str, ...], rows: Sequence[Mapping[str, Any]]) -> None:
    """Append rows as a producer does: every column of the table named, NULL for those it does not know
    (a producer's DataFrame write does not apply column defaults either). Plain SQL, so both engines take
    the same statement."""
    from sqlglot import exp

    live = engine.describe(table, with_version=False)
    assert live is not None, f"{table} should exist"
    names = [c.name for c in live.columns]
    values = [
        exp.Tuple(
            expressions=[
                typed_literal(row.get(c.name, row.get(c.name.casefold())), c.type) for c in live.columns
            ]
        )
        for row in rows
    ]
    statement = exp.insert(
        exp.Values(expressions=values), x.table(table), columns=[x.ident(n) for n in names]
    )
    engine.sql(x.sql(statement))


def apply_checked(engine: Engine, op: Op, where: str) -> None:
    """Run the op through `apply_op` (which counts its pre-check and stops on a violation), then prove its
    postcondition."""
    outcome = engine.apply_op(op, tag=where)
    post = op.postcondition()
    if isinstance(op, CopyRows | CatchUpRows):
        # A copy (or the cutover catch-up) is rerunnable until its source is retired (its postcondition,
        # proven by the re-apply): right after it, the target holds exactly the source's rows.
        assert engine.count_where(op.table, "TRUE") == engine.count_where(op.source, "TRUE"), where
    elif post is not None and outcome.path != "skipped" and op.result_condition() != post:
        # Where the op's result condition is its postcondition, `apply_op` has just proven it against the
        # Delta log (it raises otherwise); reading the table again would prove the same thing twice.
        assert engine.holds(post), f"{where}: postcondition {post} does not hold after {op.summary()}"


def run_migration(
    engine: Engine, migration: Migration, where: str, before_cutover: Any = None, sql_file: str | None = None
) -> None:
    """Apply the migration op by op (checked), then re-apply it: every op skipped. With `sql_file` (the
    migration's `.sql` file, as text), each op's cell of the file must end with the statement apply runs and
    its guards pass before the op; after the re-apply the whole file runs again by hand and must leave the
    schema as the single apply left it (`sql_rerun`)."""
    from tests.engine import sql_rerun

    cells = iter(sql_rerun.first_pass_cells(migration, sql_file)) if sql_file is not None else None
    for phase in Phase:
        if phase is Phase.CUTOVER and before_cutover is not None:
            before_cutover()
        for i, op in enumerate(migration.phase(phase)):
            if cells is not None:
                sql_rerun.run_guards(engine, next(cells))
            apply_checked(engine, op, f"{where} {phase.value}[{i}] {op.kind}")
    again = [engine.apply_op(op) for op in migration.ops]
    ran = [o.op_kind for o in again if o.path != "skipped"]
    assert ran == [], f"{where}: re-applying ran {ran}"
    if sql_file is not None:
        sql_rerun.run_again_unchanged(engine, sql_file, migration.table[0], where)


def read_through_name(engine: Engine, contract: Contract) -> list[dict[str, Any]]:
    return engine.sql(f"SELECT * FROM {x.sql(x.table(contract.table_parts))}")


def served_types(engine: Engine, contract: Contract) -> dict[str, str]:
    """The column types readers get through the contract's name (the rows' checksum compares values as text,
    so it cannot see a view that still casts to the types it was created with)."""
    from delta_contracts.engine.schema_json import columns_from_schema

    schema = engine.spark.table(x.sql(x.table(contract.table_parts))).schema.json()  # type: ignore[attr-defined]
    return {c.name.casefold(): c.type for c in columns_from_schema(schema)}


def contract_types(contract: Contract) -> dict[str, str]:
    from delta_contracts.contract.types import canonical

    return {c.name.casefold(): canonical(c.type) for c in contract.columns}


def renamed(contract: Contract, schema: str) -> Contract:
    return contract.model_copy(update={"id": f"{schema}.transactions"})


@dataclass(frozen=True)
class CaseRun:
    """One golden migration applied to a table with rows: what the name serves and the final table's state
    read back from its Delta log with delta-rs (not through the engine that wrote it)."""

    served_columns: tuple[str, ...]
    served_types: dict[str, str]  # column -> canonical type the name serves (a view keeps its creation types)
    wanted_types: dict[str, str]  # column -> canonical type the contract declares
    served: str  # checksum of the rows read through the contract's name
    expected: str  # checksum of the rows the contracts say the name must serve
    location: str  # the final physical table's location
    schema: str  # the case's own schema (each case runs in a fresh one)

    def state(self) -> dict[str, Any]:
        return table_state(self.location, self.schema)


# Old tables made once per engine, target and old contract, cloned by the cases that start from them.
_templates: dict[tuple[int, str, str], tuple[str, ...]] = {}


def _template(engine: Engine, old: Contract, target: Target) -> tuple[str, ...]:
    """The old table made by its create migration in a schema of its own, empty, once per run."""
    key = (id(engine), target.value, old.model_dump_json())
    if key not in _templates:
        schema = f"template{next(_schemas)}"
        create_schema(engine, schema)
        created, state = plan(None, renamed(old, schema), target)
        run_migration(engine, created, f"template {schema}")
        _templates[key] = state.physical
    return _templates[key]


def clone_old_table(engine: Engine, old: Contract, target: Target, physical: tuple[str, ...]) -> None:
    """The empty old table as a SHALLOW CLONE of its template (delta-spark): the same schema, rules,
    properties and protocol, at a fraction of the create migration's cost, which then finds its table and
    rule ops done and only stamps the new name (and makes the alias view). A clone takes no table comment."""
    from sqlglot import exp

    source = x.table(_template(engine, old, target))
    engine.sql(
        x.sql(exp.Create(this=x.table(physical), kind="TABLE", clone=exp.Clone(this=source, shallow=True)))
    )
    if old.description:
        comment = exp.Literal.string(old.description)
        engine.sql(x.sql(exp.Comment(this=x.table(physical), kind="TABLE", expression=comment)))


def execute_case(
    engine: Engine,
    recipe: str,
    versioning: str,
    target: Target = Target.DELTA_4,
    *,
    clone_old: bool = False,
    sql_files: bool = False,
) -> CaseRun:
    """Create the old table, write rows, apply the migration phase by phase (an old producer writes one
    more row between populate and cutover), re-apply it, read the rows through the contract's name.

    `clone_old`: when the case's old contract is the base contract most cases start from, start from a clone
    of its template (`clone_old_table`) rather than run the whole create migration on an empty table for
    each case; its ops are applied all the same. A case with an old contract of its own creates its table
    directly: a template made for one case costs more than the create it would save.
    `sql_files`: hold the golden `.sql` files of the case (tests/golden) to its ops, and run them again by
    hand after the apply (`run_migration`); the create's golden once per versioning and target."""
    schema = f"recipe{next(_schemas)}"
    create_schema(engine, schema)
    base, wanted = pair(recipe, versioning)
    old, new = renamed(base, schema), renamed(wanted, schema)
    created, state = plan(None, old, target)
    engine.check_supported(created.ops)
    if clone_old and base == base_contract(versioning):
        clone_old_table(engine, base, target, state.physical)
    create_file = _create_golden(created, base, versioning, target, schema) if sql_files else None
    run_migration(engine, created, f"{recipe}/{versioning} create", sql_file=create_file)
    write_rows(engine, state.physical, ROWS)
    migration, after = plan(old, new, target, state=state)
    engine.check_supported(migration.ops)
    golden = GOLDEN / recipe / f"{versioning}.{target.value}.sql"
    run_migration(
        engine,
        migration,
        f"{recipe}/{versioning}",
        before_cutover=lambda: write_rows(engine, state.physical, [LATE_ROW]),
        sql_file=_golden_file(golden, schema) if sql_files else None,
    )
    got = read_through_name(engine, new)
    wanted = expected_rows(old, new, [*ROWS, LATE_ROW])
    if target is Target.DELTA_3:
        got, wanted = null_structs_as_delta_3_writes_them(got), null_structs_as_delta_3_writes_them(wanted)
    return CaseRun(
        served_columns=tuple(got[0]) if got else (),
        served_types=served_types(engine, new),
        wanted_types=contract_types(new),
        served=checksum(got),
        expected=checksum(wanted),
        location=_location(engine, after.physical),
        schema=schema,
    )


GOLDEN = Path(__file__).resolve().parents[1] / "golden"
# (versioning, target) whose create golden has been run again by hand in this process
_creates_rerun: set[tuple[str, str]] = set()


def _golden_file(path: Path, schema: str) -> str:
    """A golden file (planned for `payments.transactions`) as it reads for the case's schema."""
    from tests.engine.sql_rerun import schema_file

    return schema_file(path.read_text(encoding="utf-8"), BASE_SCHEMA, schema)


def _create_golden(
    created: Migration, base: Contract, versioning: str, target: Target, schema: str
) -> str | None:
    """The create golden of `versioning`, once per versioning and target, when the case's old contract is the
    base contract it was planned from."""
    if (versioning, target.value) in _creates_rerun or base != base_contract(versioning):
        return None
    _creates_rerun.add((versioning, target.value))
    return _golden_file(GOLDEN / "create" / f"{versioning}.{target.value}.sql", schema)


# The committed history of sales.orders (migrations/sales.orders): rows of 1.0.0, and one row per migration
# written between its populate and cutover by a producer that still writes the previous version's shape.
HISTORY_ROWS: tuple[dict[str, Any], ...] = (
    {
        "order_id": 1,
        "customer_id": 7,
        "amount": Decimal("12.00"),
        "status": "PLACED",
        "order_date": date(2026, 11, 1),
        "created_at": datetime(2026, 11, 1, 10),
    },
    {
        "order_id": 2,
        "customer_id": 8,
        "amount": Decimal("30.05"),
        "status": "SHIPPED",
        "order_date": date(2026, 11, 2),
        "created_at": datetime(2026, 11, 2, 11),
    },
)
HISTORY_LATE_ROWS: dict[str, dict[str, Any]] = {
    "0002": {**HISTORY_ROWS[0], "order_id": 3, "amount": Decimal("5.50")},
    "0003": {**HISTORY_ROWS[1], "order_id": 4, "amount": Decimal("9.99"), "channel": "store"},
    "0004": {**HISTORY_ROWS[1], "order_id": 5, "order_total": Decimal("80.10"), "channel": "app"},
}


def execute_history(engine: Engine, source: Path, *, sql_files: bool = False) -> CaseRun:
    """The committed migrations of a table (`source`, its folder under migrations/), copied under a schema of
    their own and executed one after another on a table holding rows, each as `execute_case` executes one
    recipe; the rows through the contract's name checked after every migration. `sql_files`: each
    migration's `.sql` file held to its ops and run again by hand after its apply (`run_migration`)."""
    from delta_contracts.plan.migrations import SUM_FILE, compute_sum, load_history, migration_files

    schema = f"history{next(_schemas)}"
    create_schema(engine, schema)
    old_schema = source.name.split(".")[0]
    folder = Path(tempfile.mkdtemp(prefix="dc-history-")) / source.name.replace(old_schema, schema, 1)
    folder.mkdir()
    for name in migration_files(source):
        text = (source / name).read_text(encoding="utf-8")
        (folder / name).write_text(re.sub(rf"\b{old_schema}\b", schema, text), encoding="utf-8")
    (folder / SUM_FILE).write_text(compute_sum(folder, migration_files(folder)), encoding="utf-8")
    rows: list[dict[str, Any]] = [dict(r) for r in HISTORY_ROWS]
    previous = None
    for stored in load_history(folder):
        where = f"{source.name} {stored.migration_id}"
        engine.check_supported(stored.migration.ops)
        if previous is None:
            sql_file = stored.sql_path.read_text(encoding="utf-8") if sql_files else None
            run_migration(engine, stored.migration, where, sql_file=sql_file)
            write_rows(engine, stored.state.physical, rows)
        else:
            late = HISTORY_LATE_ROWS[stored.migration_id[:4]]
            old_physical = previous.state.physical
            run_migration(
                engine,
                stored.migration,
                where,
                before_cutover=lambda t=old_physical, r=late: write_rows(engine, t, [r]),
                sql_file=stored.sql_path.read_text(encoding="utf-8") if sql_files else None,
            )
            rows = expected_rows(previous.contract, stored.contract, [*rows, late])
        got = read_through_name(engine, stored.contract)
        assert checksum(got) == checksum(rows), f"{where}: the name serves {got}, the contracts say {rows}"
        previous = stored
    assert previous is not None, f"{source} holds no migration"
    got = read_through_name(engine, previous.contract)
    return CaseRun(
        served_columns=tuple(got[0]) if got else (),
        served_types=served_types(engine, previous.contract),
        wanted_types=contract_types(previous.contract),
        served=checksum(got),
        expected=checksum(rows),
        location=_location(engine, previous.state.physical),
        schema=schema,
    )


def _location(engine: Engine, table: tuple[str, ...]) -> str:
    live = engine.describe(table, with_version=False)
    assert live is not None, f"{table} should exist"
    return live.location.removeprefix("file:")


def table_state(location: str, schema: str) -> dict[str, Any]:
    """What the differential test compares: the table's shape, rules, properties and rows, read from its
    Delta log with delta-rs."""
    from deltalake import DeltaTable

    from delta_contracts.engine import deltalog

    live = deltalog.read_table(location, "t")
    table = DeltaTable(location)
    # delta-rs 1.6.6 refuses to read tables with the columnMapping or typeWidening reader feature, and reads
    # a column-mapped table of the legacy protocol (reader version 2) without the mapping: renamed columns
    # come back NULL, silently. Such tables are read from their files here.
    mapped = live.properties.get("delta.columnMapping.mode", "none") != "none"
    # (Delta 3.3 names the feature typeWidening-preview)
    if mapped or any(f.startswith("typeWidening") for f in live.reader_features):
        rows = rows_from_files(table, location)
    else:
        rows = table.to_pyarrow_table().to_pylist()
    return {
        "columns": [(c.name, c.type, c.nullable, c.comment, c.default) for c in live.columns],
        "checks": {k.casefold(): x.canonical_expression(v) for k, v in live.checks.items()},
        "properties": {
            k: v.replace(schema, "<schema>")
            for k, v in live.properties.items()
            if not k.startswith(ENGINE_BOOKKEEPING)
        },
        "partitioning": live.partition_columns,
        "clustering": live.clustering_columns,
        "comment": live.comment,
        "rows": checksum(rows),
    }


# Properties each writer keeps for itself (column-mapping ids, feature flags set by the protocol upgrade
# that an op triggers), and the producer hold, which only delta-spark sets (the instant it was released):
# not part of what a contract says.
ENGINE_BOOKKEEPING = ("delta.columnMapping.maxColumnId", "delta.feature.", HOLD)


def rows_from_files(table: Any, location: str) -> list[dict[str, Any]]:
    """The table's rows from the data files its log lists (delta-rs gives the files and the schema), for
    reader features delta-rs does not read: physical column names mapped back to logical ones, values cast
    to the column's current type, partition values from the add actions."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = json.loads(table.schema().to_json())
    physical = {
        f["name"]: (f.get("metadata") or {}).get("delta.columnMapping.physicalName", f["name"])
        for f in schema["fields"]
    }
    types = {f["name"]: f["type"] for f in schema["fields"]}
    logical_types = pa.schema(table.schema().to_arrow())
    partitions = set(table.metadata().partition_columns or ())
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    rows: list[dict[str, Any]] = []
    for action in actions:
        assert not action.get("deletionVector.storageType"), "deletion vectors are not read here"
        data = pq.read_table(f"{location}/{action['path']}")
        for record in data.to_pylist():
            row = {}
            for name, phys in physical.items():
                if name in partitions:
                    value = action.get(f"partition.{name}", action.get(f"partition.{phys}"))
                else:
                    value = _logical(record.get(phys), types[name])
                row[name] = value
            rows.append(row)
    if not rows:
        return []
    # the files hold each value in the type it was written in; the table reads it in the current type
    columns = {}
    for field in logical_types:
        values = [row[field.name] for row in rows]
        nested = pa.types.is_nested(field.type)
        columns[field.name] = (
            pa.array(values, type=field.type) if nested else pa.array(values).cast(field.type)
        )
    return pa.table(columns).to_pylist()


def _logical(value: Any, field_type: Any) -> Any:
    """A value read from a data file as the table's schema names it: struct fields by their logical names
    (column mapping stores them under physical ones), fields the schema no longer has left out, fields the
    file predates NULL, map entries as (key, value) pairs."""
    if value is None or not isinstance(field_type, dict):
        return value
    if field_type["type"] == "struct":
        out = {}
        for field in field_type["fields"]:
            physical = (field.get("metadata") or {}).get("delta.columnMapping.physicalName", field["name"])
            out[field["name"]] = _logical(value.get(physical), field["type"])
        return out
    if field_type["type"] == "array":
        return [_logical(v, field_type["elementType"]) for v in value]
    if field_type["type"] == "map":
        pairs = value.items() if isinstance(value, dict) else value
        return [(_logical(k, field_type["keyType"]), _logical(v, field_type["valueType"])) for k, v in pairs]
    return value
