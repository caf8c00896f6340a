"""Pieces every planning recipe shares: table state, naming, the builder, the create and stamp ops."""

from __future__ import annotations

from dataclasses import dataclass, field

from delta_contracts.contract.model import Column, Contract, Versioning, semver_tuple
from delta_contracts.contract.types import canonical, parse_type
from delta_contracts.errors import ExitCode, FailedError
from delta_contracts.marks import STAMP_CONTRACT, STAMP_ID, STAMP_SCHEMA_HASH, STAMP_VERSION
from delta_contracts.plan.ops import (
    AddCheck,
    ColumnSpec,
    CreateTable,
    CreateView,
    Gate,
    Op,
    Phase,
    StampContract,
)
from delta_contracts.plan.rules import CheckRule, contract_rules, schema_hash
from delta_contracts.plan.stamp import contract_stamp
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import Target

COLUMN_MAPPING = ("delta.columnMapping.mode", "name")
TYPE_WIDENING = ("delta.enableTypeWidening", "true")
COLUMN_DEFAULTS = ("delta.feature.allowColumnDefaults", "supported")
# ALTER TABLE gives a table a TIMESTAMP_NTZ value (a column or field added, a date widened) only once the
# feature is on: Delta does not enable it for the statement (DELTA_FEATURES_REQUIRE_MANUAL_ENABLEMENT).
TIMESTAMP_NTZ = ("delta.feature.timestampNtz", "supported")
# Column mapping needs reader 2 / writer 5 (DESIGN.md, "Delta facts").
MAPPING_PROTOCOL = (("delta.minReaderVersion", "2"), ("delta.minWriterVersion", "5"))


# Marks a plan warning about what Delta cannot keep on the chosen path (row ids, a feed consumer's position):
# `diff` shows these to the pull request's reviewer (`not_kept`).
NOT_KEPT = "not kept: "


def not_kept(warnings: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The warnings of a migration that say what it cannot keep."""
    return tuple(w for w in warnings if NOT_KEPT in w)


class PlanError(FailedError, ValueError):
    """The change cannot be planned as declared (e.g. a versioned rewrite without a major bump)."""


class FeatureLossError(PlanError):
    """The change would lose a table feature the contract declares (an identity's values, …): refused before
    anything changes, as bad input is."""

    exit_code = ExitCode.BAD_INPUT


class TableLimitError(PlanError):
    """A statement of the plan Delta would refuse on its table because of the table's properties (an
    append-only table's UPDATE): refused before anything changes, as bad input is (`plan.table_limits`)."""

    exit_code = ExitCode.BAD_INPUT


class FieldChangeError(PlanError):
    """A change of the fields inside a column Delta cannot make as the contract says it (a NOT NULL field
    added, fields reordered, a column renamed while its fields change): refused before anything changes, as
    bad input is."""

    exit_code = ExitCode.BAD_INPUT


@dataclass(frozen=True, slots=True)
class TableState:
    """Where the table stands before the migration: its physical table and the features already on."""

    physical: TableId
    properties: tuple[tuple[str, str], ...] = ()


def versioned_name(contract: Contract, major: int | None = None) -> TableId:
    parts = contract.table_parts
    number = semver_tuple(contract.version)[0] if major is None else major
    return TableId((*parts[:-1], f"{parts[-1]}__v{number}"))


def initial_state(contract: Contract) -> TableState:
    physical = (
        versioned_name(contract)
        if contract.table.versioning is Versioning.VERSIONED
        else contract.table_parts
    )
    return TableState(physical, tuple(sorted(contract.table.properties.items())))


def default_sql(column: Column) -> str | None:
    """The column's default as the SQL Delta stores: its literal `default`, or its `default_expression`."""
    if column.default is not None:
        return x.sql(x.literal(column.default))
    if column.default_expression is not None:
        return x.sql(x.parse(column.default_expression))
    return None


def column_spec(column: Column) -> ColumnSpec:
    identity = column.identity
    return ColumnSpec(
        column.name,
        canonical(column.type),
        column.nullable,
        column.description,
        default_sql(column),
        None if identity is None else (identity.generated.value, identity.start, identity.step),
        None if column.generated is None else x.sql(x.parse(column.generated)),
    )


@dataclass
class Builder:
    """Collects ops per phase while the recipes run; phase order is fixed when the migration is built."""

    table: TableId
    ops: dict[Phase, list[Op]] = field(default_factory=lambda: {p: [] for p in Phase})
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, op: Op) -> None:
        if op not in self.ops[op.phase]:
            self.ops[op.phase].append(op)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def all_ops(self) -> tuple[Op, ...]:
        return tuple(op for phase in Phase for op in self.ops[phase])


def stamp_op(table: TableId, contract: Contract) -> StampContract:
    props = (
        (STAMP_ID, contract.id),
        (STAMP_VERSION, contract.version),
        (STAMP_SCHEMA_HASH, schema_hash(contract)),
        (STAMP_CONTRACT, contract_stamp(contract)),  # what no DDL holds, for init --from-table
    )
    return StampContract(
        table=table, phase=Phase.CUTOVER, properties=props, reason="record the contract version"
    )


def gate_for(contract: Contract, objects: list[str], deprecated_by: str) -> Gate:
    return Gate(
        contract.evolution.deprecation_window,
        contract.evolution.reader_lookback,
        deprecated_by,
        tuple(objects),
    )


def create_properties(contract: Contract) -> tuple[tuple[str, str], ...]:
    props = dict(contract.table.properties)
    if any(default_sql(c) is not None for c in contract.columns):
        props.setdefault(*COLUMN_DEFAULTS)
    return tuple(sorted(props.items()))


def refuse_uncreatable_columns(contract: Contract, target: Target) -> None:
    """A CREATE TABLE the target's SQL cannot write would lose the columns' identity or generation: refused
    before anything is planned (FeatureLossError)."""
    if target.creates_generated_columns:
        return
    found = [c.name for c in contract.columns if c.identity is not None or c.generated is not None]
    if found:
        raise FeatureLossError(
            f"{contract.id}: {', '.join(found)}: CREATE TABLE on target {target.value} (Spark 3.5, "
            "Delta 3.3) cannot declare identity or generated columns in SQL; plan for delta-4 or databricks"
        )


def create_ops(
    contract: Contract, table: TableId, phase: Phase, *, withheld: tuple[str, ...] = ()
) -> list[Op]:
    """The table of `contract` created with its CHECKs; `withheld`: properties set later by the caller."""
    ops: list[Op] = [
        CreateTable(
            table=table,
            phase=phase,
            columns=tuple(column_spec(c) for c in contract.columns),
            partitioned_by=contract.table.partitioned_by,
            clustered_by=contract.table.clustered_by,
            comment=contract.description,
            properties=tuple((k, v) for k, v in create_properties(contract) if k not in withheld),
            reason=f"create {table} from contract {contract.id} {contract.version}",
        )
    ]
    ops.extend(add_check(table, phase, rule) for rule in contract_rules(contract).values())
    return ops


def add_check(table: TableId, phase: Phase, rule: CheckRule, reason: str = "contract rule") -> AddCheck:
    return AddCheck(table=table, phase=phase, name=rule.name, expression=rule.expression, reason=reason)


def converted(source: str, from_type: str, to_type: str) -> str:
    """`source` as `to_type`: the column itself when the types agree, else a CAST (callers make sure it is a
    lossless one)."""
    value = x.column(source)
    return x.sql(value if parse_type(from_type) == parse_type(to_type) else x.cast(value, canonical(to_type)))


def alias_columns(contract: Contract) -> tuple[tuple[str, str], ...]:
    """The alias view's columns: exactly the contract's, by name (Spark freezes a view's schema when it is
    created, so a `SELECT *` view would never show a column added later and would cast a widened one back)."""
    return tuple((c.name, x.sql(x.column(c.name))) for c in contract.columns)


def alias_view(
    contract: Contract,
    physical: TableId,
    phase: Phase,
    *,
    reason: str,
    alter_existing: bool = False,
    columns: tuple[tuple[str, str], ...] | None = None,
    superseded_by: tuple[tuple[str, str], ...] = (),
) -> CreateView:
    return CreateView(
        table=contract.table_parts,
        phase=phase,
        source=physical,
        columns=alias_columns(contract) if columns is None else columns,
        alter_existing=alter_existing,
        superseded_by=superseded_by,
        reason=reason,
    )
