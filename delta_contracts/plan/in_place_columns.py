"""The in-place recipes' column ops: a column kept under its name and changed, a column added, a column made
NOT NULL, and the backfills they need."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from delta_contracts.contract.model import Column, Contract
from delta_contracts.contract.types import canonical, holds_timestamp_ntz
from delta_contracts.plan.building import (
    COLUMN_DEFAULTS,
    TIMESTAMP_NTZ,
    TYPE_WIDENING,
    Builder,
    PlanError,
    add_check,
    column_spec,
    default_sql,
)
from delta_contracts.plan.change_set import RETYPED, KeptColumn
from delta_contracts.plan.ops import (
    AddColumn,
    Backfill,
    DropCheck,
    DropColumnDefault,
    DropNotNull,
    Phase,
    SetColumnComment,
    SetColumnDefault,
    SetNotNull,
    WidenType,
)
from delta_contracts.plan.rules import not_null_rule
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import NO_SET_NOT_NULL, Target

Enable = Callable[[tuple[str, str], str], None]


def tighten_not_null(b: Builder, t: TableId, column: str, target: Target) -> None:
    if target.supports_set_not_null:
        b.add(SetNotNull(table=t, phase=Phase.CUTOVER, column=column, reason="nullable: false"))
        return
    b.add(add_check(t, Phase.CUTOVER, not_null_rule(column), f"nullable: false ({NO_SET_NOT_NULL})"))


def enable_timestamp_ntz(before: str | None, after: str, enable: Enable) -> None:
    """The timestampNtz feature before the statement that brings the table its first TIMESTAMP_NTZ value."""
    if holds_timestamp_ntz(after) and not (before is not None and holds_timestamp_ntz(before)):
        enable(TIMESTAMP_NTZ, "TIMESTAMP_NTZ needs the timestampNtz table feature")


def kept_column(
    b: Builder,
    t: TableId,
    kept: KeptColumn,
    target: Target,
    enable: Enable,
    checks: tuple[str, ...] = (),
) -> None:
    """A column kept under its name: the type (DC-MF106), description (DC-DC605), default (DC-MF108) and
    nullability (DC-MF104, DC-MF105) diff found changed; its checks are the rules' (`_old_rules`), and
    `checks` those of them that read it and stand through its retype."""
    before, after = kept.before, kept.after
    if kept.has(*RETYPED):
        enable_timestamp_ntz(before.type, after.type, enable)
        enable(TYPE_WIDENING, "type widening")
        b.add(
            WidenType(
                table=t,
                phase=Phase.EXPAND,
                column=after.name,
                from_type=canonical(before.type),
                to_type=canonical(after.type),
                checks_kept=checks,
                reason="widen type",
            )
        )
        b.warn(f"{t}: {target.type_widening_note}")
    described = kept.has("DC-DC605", field_suffix=".description")
    wanted = after.description or None
    if described and after.description is not None and wanted != (before.description or None):
        b.add(
            SetColumnComment(
                table=t,
                phase=Phase.EXPAND,
                column=after.name,
                comment=after.description,
                reason="description",
            )
        )
    if kept.has("DC-MF108"):
        # a literal default or an expression: whichever the new contract declares, or none
        if default_sql(after) is None:
            b.add(DropColumnDefault(table=t, phase=Phase.EXPAND, column=after.name, reason="default removed"))
        else:
            set_default(b, t, after, enable)
    if kept.has("DC-MF104"):
        if after.fill is not None:
            fill(
                b,
                t,
                after.name,
                x.canonical_expression(after.fill),
                "fill rows without a value (the contract's fill)",
            )
        tighten_not_null(b, t, after.name, target)
    elif kept.has("DC-MF105"):
        rule = not_null_rule(after.name)
        b.add(
            DropCheck(
                table=t, phase=Phase.EXPAND, name=rule.name, reason="nullable again (NOT NULL via CHECK)"
            )
        )
        b.add(DropNotNull(table=t, phase=Phase.EXPAND, column=after.name, reason="nullable again"))


def set_default(b: Builder, t: TableId, column: Column, enable: Enable) -> None:
    enable(COLUMN_DEFAULTS, "column defaults")
    default = column_spec(column).default or ""
    b.add(
        SetColumnDefault(table=t, phase=Phase.EXPAND, column=column.name, default=default, reason="default")
    )


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an added column goes in the table (`AddColumn.after`, `AddColumn.first`)."""

    after: str = ""
    first: bool = False


def contract_index(contract: Contract, name: str) -> int:
    folded = name.casefold()
    return next(i for i, c in enumerate(contract.columns) if c.name.casefold() == folded)


def placement(contract: Contract, name: str) -> Placement:
    """Where `name` goes so that the table's order is the contract's, as a table created from the contract
    has it: after the contract's column before it, first, or — the contract's last column — at the end,
    with no position, as every ADD COLUMNS was rendered before positions were planned."""
    index = contract_index(contract, name)
    if index == len(contract.columns) - 1:
        return Placement()
    if index == 0:
        return Placement(first=True)
    return Placement(after=contract.columns[index - 1].name)


def added_column(
    b: Builder, t: TableId, column: Column, target: Target, enable: Enable, place: Placement
) -> None:
    spec = column_spec(column)
    enable_timestamp_ntz(None, column.type, enable)
    if spec.default is not None:
        enable(COLUMN_DEFAULTS, "column defaults")
    added = AddColumn(table=t, phase=Phase.EXPAND, column=spec, reason="new column")
    b.add(replace(added, after=place.after, first=place.first))
    if spec.default is not None:
        set_default(b, t, column, enable)
    if not column.nullable:
        if spec.default is not None:
            # SQL INSERT/UPDATE/MERGE apply a default, DataFrame appends do not: rows written without the
            # column between populate and cutover are filled again by the cutover's catch-up.
            fill(b, t, column.name, spec.default, "fill existing rows with the default")
        elif column.fill is not None:
            fill(
                b,
                t,
                column.name,
                x.canonical_expression(column.fill),
                "fill existing rows (the contract's fill)",
            )
        else:
            raise PlanError(
                f"{b.table}: column {column.name} is added NOT NULL with no default: existing "
                "rows would fail the cutover's NOT NULL check; declare `fill: <SQL over the other columns>` "
                "(or a default)"
            )
        tighten_not_null(b, t, column.name, target)


def fill(b: Builder, t: TableId, column: str, expression: str, reason: str) -> None:
    """Backfill in populate, and again at cutover for rows written meanwhile by producers that do not
    write the column yet — right before the NOT NULL check that needs it."""
    fill = Backfill(table=t, phase=Phase.POPULATE, column=column, expression=expression, reason=reason)
    b.add(fill)
    b.add(replace(fill, phase=Phase.CUTOVER, reason="catch rows written without it since populate"))
