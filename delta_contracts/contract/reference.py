"""The contract format reference (docs/contract-format.md), generated from the pydantic models.

The field list — names, types, defaults — comes from the models themselves, so it cannot fall behind them;
what each field means lives in `FIELD_DOCS` (or in the model's own `Field(description=…)`), and
`undocumented_fields()` names every model field described in neither (a test keeps it empty). Likewise each
field's example comes from the model's own `Field(examples=[…])` or else from `FIELD_EXAMPLES`, and
`fields_without_example()` names the fields with neither; a test loads every example in a contract (or a
`contracts.yml`) so that none can stop being valid. `delta_contracts.cli.docs` writes these tables into docs/.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from delta_contracts.contract.model import Contract
from delta_contracts.contract.project import Project

# What each field means. Keys are field paths: `columns[].checks.min` is `min` under a column's `checks`.
FIELD_DOCS: dict[str, str] = {
    # --- a contract file ---
    "apiVersion": "Format of the file; always `delta-contracts/v1`.",
    "id": "The logical table: `schema.table` or `catalog.schema.table`, each part letters, digits and `_` "
    "(not starting with a digit), as Spark SQL reads it unquoted; at most 160 characters (it names the "
    "table's migrations folder). For versioned tables it is the name of the alias view readers query.",
    "version": "Semantic version of the contract. `diff` checks that the bump is at least what the "
    "changes require.",
    "owner": "The team answerable for the table.",
    "owner.team": "Team name.",
    "owner.email": "Where to reach the team.",
    "description": "What one row of the table is; becomes the table comment.",
    "consumers": "Known readers of the table (documentation; telemetry finds the real ones).",
    "consumers[].name": "Consumer name (a job, a dashboard, a team).",
    "consumers[].contact": "How to reach the consumer.",
    "consumers[].description": "What the consumer uses the table for.",
    "tags": "Free-form labels of the table.",
    "table": "Physical layout of the Delta table.",
    "table.partitioned_by": "Partition columns, in order. Changing them needs a new versioned table "
    "(a major change).",
    "table.clustered_by": "Liquid clustering columns (`CLUSTER BY`).",
    "table.properties": "Delta `TBLPROPERTIES` the table must carry (values are strings; YAML numbers and "
    "booleans are converted). Keys starting with `delta_contracts.` are reserved for the stamp.",
    "table.versioning": "`in_place`: changes are applied to the table itself. `versioned`: each major "
    "version is a table `<name>__v<major>` behind a view named after the contract id.",
    "table.comment": "Free text about the physical table (not applied; the table comment is the "
    "contract `description`).",
    "columns": "The columns, in table order (at least one).",
    "columns[].name": "Column name, as Delta stores it (matched case-insensitively, as Delta does). No "
    "line breaks, quotes, `;`, `\\`, `--`, `/*` or `${`: `spark-sql -f` would misread the migration's file.",
    "columns[].type": "Spark SQL type: `string`, `int`, `bigint`, `double`, `decimal(12,2)`, `date`, "
    "`timestamp`, `timestamp_ntz`, `boolean`, `binary`, `array<…>`, `map<…,…>`, `struct<…>`.",
    "columns[].nullable": "`false` makes the column NOT NULL.",
    "columns[].description": "Becomes the column comment.",
    "columns[].checks": "Rules enforced as Delta CHECK constraints named `<column>_<rule>`; NULL-safe on "
    "nullable columns.",
    "columns[].checks.min": "Smallest allowed value, of the column's type: a number, a date "
    "(`2024-01-31`) or a timestamp (`2024-01-31 10:00:00`); numeric, date and timestamp columns only.",
    "columns[].checks.max": "Largest allowed value, of the column's type (as `min`).",
    "columns[].checks.enum": "The allowed values, of the column's type (strings, numbers or booleans).",
    "columns[].checks.regex": "A regular expression values must match (`RLIKE`, strings).",
    "columns[].default": "Column default (Delta `DEFAULT`; enables the `allowColumnDefaults` table feature).",
    "columns[].renamed_from": "The column's previous name: the only way a rename is told apart from a "
    "drop and an add.",
    "columns[].deprecated": "Marks the column as on its way out; a later release may remove it once the "
    "deprecation window has passed and nobody reads it.",
    "columns[].deprecated.since": "Contract version that deprecated the column.",
    "columns[].deprecated.replaced_by": "The column readers should use instead.",
    "columns[].deprecated.reason": "Why the column goes away.",
    "columns[].deprecated_fields.<name>.since": "Contract version that deprecated the field.",
    "columns[].deprecated_fields.<name>.replaced_by": "The field readers should use instead.",
    "columns[].deprecated_fields.<name>.reason": "Why the field goes away.",
    "columns[].tags": "Free-form labels of the column.",
    "columns[].pii": "The column holds personal data.",
    "constraints": "Table-level CHECK constraints over several columns.",
    "constraints[].name": "Constraint name in Delta (the same characters as a column name are refused).",
    "constraints[].expression": "A Spark SQL boolean expression every row must satisfy.",
    "quality": "Data expectations checked by `validate`, not by DDL.",
    "quality.freshness": "The newest row must be recent.",
    "quality.freshness.column": "Timestamp column that says when a row arrived.",
    "quality.freshness.max_age": "Largest allowed age of the newest row (ISO-8601 duration).",
    "quality.volume": "Row count bounds.",
    "quality.volume.min_rows": "Fewest rows the table may hold.",
    "quality.volume.max_rows": "Most rows the table may hold.",
    "quality.completeness": "Share of non-NULL values per column.",
    "quality.completeness[].column": "The column.",
    "quality.completeness[].min_ratio": "Smallest share of non-NULL values (0 to 1).",
    "quality.unique": "Column sets whose values must be unique (each a list of column names).",
    "evolution": "How the contract may change.",
    "evolution.policy": "`backwards_compatible` refuses a major change unless the major version is "
    "bumped; `any` only classifies.",
    "evolution.deprecation_window": "Least time between marking a column or table deprecated and "
    "dropping it (ISO-8601 duration).",
    "evolution.reader_lookback": "How far back telemetry must show zero readers before a drop "
    "(ISO-8601 duration).",
    "evolution.reclassify": "Change code → `patch|minor|major`, overriding the default class of that "
    "change for this contract.",
    "evolution.allow": "Change codes the policy always allows.",
    "evolution.deny": "Change codes the policy always refuses.",
    "lifecycle": "Where the table is in its life.",
    "lifecycle.status": "`draft`, `active`, `deprecated` or `retired` (retiring is a major change).",
    "lifecycle.successor": "The table that replaces this one.",
    # --- contracts.yml ---
    "project.defaults": "Values every contract below this file gets unless it sets them itself.",
    "project.defaults.owner": "Default `owner` (same fields as a contract's).",
    "project.defaults.evolution": "Default `evolution` (same fields; merged key by key with the contract's).",
    "project.defaults.tags": "Default `tags`.",
    "project.defaults.table": "Default `table` settings (merged key by key).",
    "project.column_rules": "Column defaults by name pattern, applied in order; a column's own values win.",
    "project.column_rules[].match": "Regex searched in the column name (anchor it with `^…$` for whole "
    "names).",
    "project.column_rules[].nullable": "`nullable` for matching columns.",
    "project.column_rules[].description": "`description` for matching columns.",
    "project.column_rules[].checks": "`checks` for matching columns (same fields as a column's).",
    "project.column_rules[].default": "`default` for matching columns.",
    "project.column_rules[].tags": "`tags` for matching columns.",
    "project.column_rules[].pii": "`pii` for matching columns.",
    "project.target": "What `plan` may emit: `delta-3` (Delta 3.x OSS), `delta-4` (Delta 4.x OSS) or "
    "`databricks`.",
    "project.migrations": "Migrations folder, relative to `contracts.yml` (unset: `migrations/` in the "
    "working directory, as without the file).",
    "project.engine": "Engine for the commands that touch tables (flags and environment win).",
    "project.engine.name": "`local` (embedded Sail), `spark` or `connect`.",
    "project.engine.url": "`sc://host:port` for `connect`.",
    "project.engine.warehouse": "Warehouse folder of the `local` engine, relative to `contracts.yml`.",
    "project.engine.ledger": "A catalog table (`schema.table` or `catalog.schema.table`) that holds the "
    "apply ledger on `spark` and `connect`, created on first use; without it the ledger is the Delta table "
    "`<warehouse>/_delta_contracts/ledger`, as it always is on `local`.",
    "project.engine.spark_conf": "Spark settings for the session `--engine spark` starts (a Hive metastore, "
    "Unity Catalog, …): they win over the toolkit's own and over `spark-defaults.conf`; `--conf k=v` wins "
    "over them. Ignored by `local` and `connect`.",
    "project.engine.unity_catalog": "A Unity Catalog server whose catalogs `spark` and `connect` use: "
    'three-level names `catalog.schema.table` (docs/engines.md, "Unity Catalog").',
    "project.environments": "Named places the same contracts and migrations are applied to (dev, staging, "
    "prod), chosen with `--env NAME` or `DELTA_CONTRACTS_ENV`; each has its own engine settings, warehouse "
    "(ledger, leases, readers log) and table names. See docs/environments.md.",
    "project.environments.<name>.engine": "The environment's engine settings; each one left out is "
    "`engine:`'s.",
    "project.environments.<name>.engine.name": "`local`, `spark` or `connect` in this environment.",
    "project.environments.<name>.engine.url": "`sc://host:port` for `connect` in this environment.",
    "project.environments.<name>.engine.warehouse": "The environment's warehouse folder, relative to "
    "`contracts.yml`; one per environment (it holds the environment's ledger, leases and readers log).",
    "project.environments.<name>.engine.ledger": "A catalog table for this environment's apply ledger "
    "(`spark`/`connect`).",
    "project.environments.<name>.engine.spark_conf": "Spark settings for this environment's session; replace "
    "`engine.spark_conf` as a whole.",
    "project.environments.<name>.engine.unity_catalog": "The Unity Catalog server of this environment; "
    "replaces `engine.unity_catalog` as a whole.",
    "project.promote": "The order a migration goes through the environments: `apply --env E` refuses (exit "
    "2) a migration phase that an environment before E has not finished, unless `--force --reason`.",
    "project.telemetry": "Settings of the deprecation telemetry that the sunset gate of `apply` reads.",
    "project.telemetry.freshness": "How recent every readers-log source's watermark must be for a drop's "
    "gate to open (ISO-8601 duration): a log not collected lately keeps the gate shut.",
}

# An example value of each field whose model declares none (`Field(examples=[…])` wins; an entry here for
# such a field is reported by `stale_examples`). Shown as `<key>: <value>` in YAML flow style.
FIELD_EXAMPLES: dict[str, Any] = {
    # --- a contract file ---
    "id": "payments.transactions",
    "owner": {"team": "payments-platform", "email": "payments@example.com"},
    "owner.team": "payments-platform",
    "owner.email": "payments@example.com",
    "description": "One row per card or UPI payment attempt, as settled by the gateway.",
    "consumers": [{"name": "billing-service"}],
    "consumers[].name": "billing-service",
    "consumers[].contact": "billing-oncall@example.com",
    "consumers[].description": "Invoices merchants from settled payments.",
    "tags": ["payments", "tier-1"],
    "table": {"partitioned_by": ["txn_date"]},
    "table.partitioned_by": ["txn_date"],
    "table.clustered_by": ["merchant_id"],
    "table.versioning": "versioned",
    "table.comment": "Compacted nightly.",
    "columns[].type": "decimal(12,2)",
    "columns[].nullable": False,
    "columns[].description": "Amount in paise.",
    "columns[].checks": {"min": 1},
    "columns[].checks.min": 1,
    "columns[].checks.max": 100000000,
    "columns[].checks.enum": ["INR", "USD", "EUR"],
    "columns[].checks.regex": "^[A-Z]{3}$",
    "columns[].default": "INR",
    "columns[].renamed_from": "txn_amt",
    "columns[].deprecated": {"since": "2.4.0", "replaced_by": "payment_method"},
    "columns[].deprecated.replaced_by": "payment_method",
    "columns[].deprecated.reason": "Channels are now payment methods.",
    "columns[].deprecated_fields.<name>.replaced_by": "postal_code",
    "columns[].deprecated_fields.<name>.reason": "Postal codes replace zip codes.",
    "columns[].tags": ["finance"],
    "columns[].pii": True,
    "constraints": [
        {"name": "refund_has_parent", "expression": "status <> 'REFUNDED' OR parent_id IS NOT NULL"}
    ],
    "quality": {"volume": {"min_rows": 10000}},
    "quality.freshness": {"column": "created_at", "max_age": "PT30M"},
    "quality.freshness.column": "created_at",
    "quality.volume": {"min_rows": 10000},
    "quality.completeness": [{"column": "merchant_id", "min_ratio": 0.99}],
    "quality.completeness[].column": "merchant_id",
    "quality.unique": [["txn_id"]],
    "evolution": {"policy": "backwards_compatible", "deprecation_window": "P90D"},
    "evolution.policy": "any",
    "lifecycle": {"status": "deprecated", "successor": "payments.transactions_v2"},
    "lifecycle.status": "deprecated",
    "lifecycle.successor": "payments.transactions_v2",
    # --- contracts.yml ---
    "project.defaults": {"owner": {"team": "data-platform"}},
    "project.defaults.owner": {"team": "data-platform", "email": "data-platform@example.com"},
    "project.defaults.evolution": {"deprecation_window": "P60D"},
    "project.defaults.tags": ["lakehouse"],
    "project.defaults.table": {"properties": {"delta.enableChangeDataFeed": "true"}},
    "project.column_rules": [{"match": "_id$", "nullable": False}],
    "project.column_rules[].nullable": False,
    "project.column_rules[].description": "Identifier assigned by the gateway.",
    "project.column_rules[].checks": {"min": 1},
    "project.column_rules[].default": 0,
    "project.column_rules[].tags": ["pii"],
    "project.column_rules[].pii": True,
    "project.target": "delta-3",
    "project.migrations": "../migrations",
    "project.engine": {"name": "local", "warehouse": "../warehouse"},
    "project.engine.name": "connect",
    "project.engine.url": "sc://localhost:15002",
    "project.engine.warehouse": "../warehouse",
    "project.engine.ledger": "ops.delta_contracts_ledger",
    "project.engine.spark_conf": {"spark.hadoop.hive.metastore.uris": "thrift://metastore:9083"},
    "project.engine.unity_catalog": {"uri": "http://127.0.0.1:8080", "catalogs": ["dev", "prod"]},
    "project.telemetry": {"freshness": "PT6H"},
    "project.environments": {
        "dev": {"engine": {"warehouse": "../warehouses/dev"}},
        "staging": {"engine": {"warehouse": "../warehouses/staging"}, "schema_prefix": "stg_"},
        "prod": {"engine": {"name": "spark", "ledger": "ops.delta_contracts_ledger"}, "catalog": "prod"},
    },
    "project.environments.<name>.engine": {"name": "spark", "warehouse": "../warehouses/prod"},
    "project.environments.<name>.engine.name": "spark",
    "project.environments.<name>.engine.url": "sc://prod-cluster:15002",
    "project.environments.<name>.engine.warehouse": "../warehouses/test",
    "project.environments.<name>.engine.ledger": "ops.delta_contracts_ledger",
    "project.environments.<name>.engine.spark_conf": {"spark.sql.shuffle.partitions": "8"},
    "project.environments.<name>.engine.unity_catalog": {
        "uri": "https://uc.example.com",
        "catalogs": ["prod"],
    },
    "project.promote": ["dev", "prod"],
}

_NAMED_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _type_text(annotation: Any) -> str:
    """A reader's name for a field's type: `list of string`, `in_place | versioned`, …"""
    if annotation is None or annotation is type(None):
        return "null"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_text(args[0])
    if origin is typing.Literal:
        return " | ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        shown = [_type_text(a) for a in args if a is not type(None)]
        return " or ".join(dict.fromkeys(shown))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"list of {_type_text(args[0])}"
        return "list"
    if origin is dict:
        return f"map of {_type_text(args[0])} to {_type_text(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " | ".join(f"`{m.value}`" for m in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    if annotation is Any:
        return "any value"
    return _NAMED_TYPES.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _default_text(info: FieldInfo) -> str:
    if info.is_required():
        return "**required**"
    if info.default_factory is not None:
        value: Any = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        return "—"
    else:
        value = info.default
    if value is None:
        return "—"
    if isinstance(value, BaseModel):
        return "(see below)" if value.model_dump(exclude_defaults=True) == {} else str(value)
    if isinstance(value, enum.Enum):
        return f"`{value.value}`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if value in ((), {}):
        return "empty"
    return f"`{value}`"


MAPPING_KEY = "<name>"  # a mapping's key in a field path: `environments.<name>.catalog`


def _models_in(annotation: Any) -> list[tuple[type[BaseModel], bool | str]]:
    """Models nested in an annotation, each with whether it sits in a list (`[]` in the path), or the
    placeholder of its key when it is a mapping's value (`environments.<name>.engine`)."""
    found: list[tuple[type[BaseModel], bool | str]] = []
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, False)]
    if origin is tuple:
        return [(m, True) for arg in args if arg is not Ellipsis for m, _ in _models_in(arg)]
    if origin is dict:
        return [(m, MAPPING_KEY) for m, _ in _models_in(args[1])]
    for arg in args:
        found.extend(_models_in(arg))
    return found


class FieldRow(NamedTuple):
    """One field of the reference; `described` and `examples` are what the model itself declares."""

    path: str
    type_text: str
    default: str
    described: str
    examples: tuple[Any, ...]


def field_rows(
    model: type[BaseModel], prefix: str = "", known: frozenset[type[BaseModel]] = frozenset()
) -> Iterator[FieldRow]:
    """Every field of `model` and of the models nested in it, depth first.

    Models in `known` are documented elsewhere (a contract's `owner` in `contracts.yml` defaults) and are
    not expanded again.
    """
    for name, info in model.model_fields.items():
        path = f"{prefix}{info.alias or name}"
        described, examples = info.description or "", tuple(info.examples or ())
        yield FieldRow(path, _type_text(info.annotation), _default_text(info), described, examples)
        for nested, in_list in _models_in(info.annotation):
            if nested not in known:
                inside = f".{in_list}" if isinstance(in_list, str) else "[]" if in_list else ""
                yield from field_rows(nested, f"{path}{inside}.", known)


def _contract_models() -> frozenset[type[BaseModel]]:
    found: set[type[BaseModel]] = set()
    stack: list[type[BaseModel]] = [Contract]
    while stack:
        model = stack.pop()
        for info in model.model_fields.values():
            for nested, _ in _models_in(info.annotation):
                if nested not in found:
                    found.add(nested)
                    stack.append(nested)
    return frozenset(found)


def _project_rows() -> Iterator[FieldRow]:
    return field_rows(Project, "project.", _contract_models())


def all_rows() -> list[FieldRow]:
    return [*field_rows(Contract), *_project_rows()]


def all_field_paths() -> list[str]:
    return [row.path for row in all_rows()]


def _meaning(path: str, described: str) -> str:
    """What the field means: FIELD_DOCS, else the model's own description."""
    return FIELD_DOCS.get(path) or described


def undocumented_fields() -> list[str]:
    return [row.path for row in all_rows() if not _meaning(row.path, row.described)]


def stale_docs() -> list[str]:
    """Entries of FIELD_DOCS for fields the models no longer have."""
    known = set(all_field_paths())
    return [path for path in FIELD_DOCS if path not in known]


def example_snippet(row: FieldRow) -> str | None:
    """The field's example as the YAML a reader would write (`renamed_from: txn_amt`): the model's own
    first example, else FIELD_EXAMPLES; None when there is neither."""
    if row.examples:
        value = row.examples[0]
    elif row.path in FIELD_EXAMPLES:
        value = FIELD_EXAMPLES[row.path]
    else:
        return None
    key = row.path.rsplit(".", 1)[-1]
    dumped = yaml.safe_dump({key: value}, default_flow_style=True, sort_keys=False, width=1_000_000)
    # Flow style wraps the one mapping in braces; the reader's line has none.
    return dumped.strip().removeprefix("{").removesuffix("}")


def fields_without_example(rows: Iterable[FieldRow] | None = None) -> list[str]:
    """Fields (of the contract and contracts.yml models, or of `rows`) with no example."""
    return [row.path for row in (all_rows() if rows is None else rows) if example_snippet(row) is None]


def stale_examples() -> list[str]:
    """Entries of FIELD_EXAMPLES for fields the models no longer have, or whose model declares examples
    (which would be shown instead)."""
    declared = {row.path for row in all_rows() if not row.examples}
    return [path for path in FIELD_EXAMPLES if path not in declared]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(rows: Iterator[FieldRow], strip: str = "") -> str:
    lines = ["| field | type | default | meaning | example |", "| --- | --- | --- | --- | --- |"]
    for row in rows:
        shown = row.path.removeprefix(strip)
        meaning = _meaning(row.path, row.described)
        snippet = example_snippet(row)
        example = f"`{_cell(snippet)}`" if snippet else ""
        lines.append(
            f"| `{shown}` | {_cell(row.type_text)} | {_cell(row.default)} | {_cell(meaning)} | {example} |"
        )
    return "\n".join(lines)


def contract_fields_table() -> str:
    return _table(field_rows(Contract))


def project_fields_table() -> str:
    return _table(_project_rows(), strip="project.")
