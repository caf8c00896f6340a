"""`enforce`: a batch checked against its contract in one pass before it is written.

Modes: `fail` raises `ContractViolationError` with counts per rule and sample rows; `quarantine` returns the
good rows and appends the bad ones, each with the rules it broke and when, to `<table>__quarantine`; `cast`
casts columns to the contract's types, counts the values a cast turned into NULL (`<column>_cast`), then
checks the rules as `fail` does. Missing columns, extra columns and wrong types are reported by name before
any row is read. The rules are the table's CHECK expressions (`quality.rules`), so a batch that passes here
is a batch Delta accepts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sqlglot import exp

from delta_contracts.contract.errors import plain
from delta_contracts.contract.model import Contract
from delta_contracts.contract.types import canonical
from delta_contracts.errors import FailedError, InputError
from delta_contracts.quality.locate import resolve_contract
from delta_contracts.quality.rules import row_rules
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.engine.base import Engine

Mode = Literal["fail", "quarantine", "cast"]
MODES = ("fail", "quarantine", "cast")
SAMPLE_ROWS = 5
VIOLATIONS = "_violations"  # the rules a row broke (quarantine and sample rows)


class EnforceModeError(InputError, ValueError):
    """A mode `enforce` or `write` does not know."""


class ContractViolationError(FailedError):
    """A batch breaks its contract: schema problems by column, or row counts per rule with sample rows."""

    def __init__(
        self,
        contract: Contract,
        *,
        schema: Sequence[str] = (),
        counts: Mapping[str, int] | None = None,
        rows: int | None = None,
        samples: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.contract_id, self.version = contract.id, contract.version
        self.schema = tuple(schema)
        self.counts = {k: v for k, v in (counts or {}).items() if v}
        self.rows = rows
        self.samples = tuple(dict(r) for r in samples)
        head = f"batch breaks contract {contract.id} {contract.version}"
        if self.schema:
            lines = [f"{head}: schema", *(f"  - {p}" for p in self.schema)]
        else:
            lines = [f"{head}: {sum(self.counts.values())} violation(s) in {rows} row(s)"]
            lines += [f"  - {name}: {count} row(s)" for name, count in self.counts.items()]
            lines += ["  sample:", *(f"    {plain(row)}" for row in self.samples)] if self.samples else []
        super().__init__("\n".join(lines))


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    violation: exp.Expr  # TRUE for the rows breaking the rule


def enforce(
    df: Any,
    contract: Contract | str | Path,
    mode: Mode = "fail",
    *,
    engine: Engine | None = None,
    quarantine_table: Sequence[str] | None = None,
    samples: int = SAMPLE_ROWS,
    contracts: Path | None = None,
) -> Any:
    """Check `df` (a classic or Spark Connect DataFrame) against `contract`; return the rows to write.

    `contract` is a loaded model, a contract file, or an id found under `contracts` (default ./contracts).
    `engine` is where the quarantine table is written (default: a Spark engine on `df`'s session; pass the
    LocalEngine when the session is the embedded one). In `quarantine` mode the batch is read twice (the bad
    rows now, the good rows when the caller writes them): cache a batch that is not deterministic.
    """
    if mode not in MODES:
        raise EnforceModeError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    model = resolve_contract(contract, contracts)
    problems = schema_problems(df.schema, model, cast=mode == "cast")
    if problems:
        raise ContractViolationError(model, schema=problems)
    if mode == "cast":
        staged, lossy = cast_to_contract(df, model)
        _fail_on_violations(staged, model, [*lossy, *checks(model)], samples)
        return staged.selectExpr(*(x.sql(x.column(c.name)) for c in model.columns))
    if mode == "fail":
        _fail_on_violations(df, model, checks(model), samples)
        return df
    from delta_contracts.quality import sink

    table = TableId(quarantine_table) if quarantine_table else quarantine_name(model)
    marked = df.selectExpr("*", x.sql(broken_rules(checks(model)).as_(VIOLATIONS)))
    stamp = [
        x.literal(model.id).as_("_contract_id"),
        x.literal(model.version).as_("_contract_version"),
        exp.CurrentTimestamp().as_("_quarantined_at"),
    ]
    bad = marked.where(x.sql(_any_broken())).selectExpr("*", *(x.sql(s) for s in stamp))
    tag = f"delta-contracts quarantine {model.id} {model.version}"
    sink.append(engine or _engine_of(df), bad, table, tag)
    return marked.where(x.sql(exp.Not(this=_any_broken()))).drop(VIOLATIONS)


def quarantine_name(contract: Contract) -> TableId:
    parts = contract.table_parts
    return TableId((*parts[:-1], f"{parts[-1]}__quarantine"))


def checks(contract: Contract) -> list[Check]:
    return [Check(rule.name, x.parse(rule.violation)) for rule in row_rules(contract)]


def schema_problems(schema: Any, contract: Contract, *, cast: bool) -> list[str]:
    """Missing, extra and mistyped columns by name (wrong types are allowed in `cast` mode)."""
    fields = {f.name.casefold(): f for f in schema.fields}
    declared = {c.name.casefold() for c in contract.columns}
    problems = []
    for column in contract.columns:
        field = fields.get(column.name.casefold())
        if field is None:
            problems.append(f"missing column {column.name} ({canonical(column.type)})")
        elif not cast and _type_of(field) != canonical(column.type):
            problems.append(
                f"column {column.name} is {_type_of(field)}, contract says {canonical(column.type)}"
            )
    problems += [
        f"extra column {f.name} (not in the contract)" for k, f in fields.items() if k not in declared
    ]
    return problems


def _type_of(field: Any) -> str:
    text = str(field.dataType.simpleString())
    try:
        return canonical(text)
    except ValueError:  # a type the contract grammar does not know: compared as Spark prints it
        return text


def cast_to_contract(df: Any, contract: Contract) -> tuple[Any, list[Check]]:
    """Columns in contract order and type (TRY_CAST: no ANSI error), plus a flag column per cast that lost a
    value (NULL after the cast, not before); the checks read those flags."""
    fields = {f.name.casefold(): f for f in df.schema.fields}
    projections: list[exp.Expr] = []
    lossy: list[Check] = []
    for column in contract.columns:
        field = fields[column.name.casefold()]
        source = x.column(field.name)
        if _type_of(field) == canonical(column.type):
            projections.append(source.as_(column.name, quoted=True))
            continue
        converted = exp.TryCast(this=source, to=x.data_type(column.type))
        projections.append(converted.as_(column.name, quoted=True))
        lost = exp.and_(
            exp.Not(this=exp.Is(this=source.copy(), expression=exp.Null())),
            exp.Is(this=converted.copy(), expression=exp.Null()),
        )
        flag = f"__lossy_{len(lossy)}"
        projections.append(lost.as_(flag))
        lossy.append(Check(f"{column.name}_cast", exp.column(flag)))
    return df.selectExpr(*(x.sql(p) for p in projections)), lossy


def broken_rules(rules: Sequence[Check]) -> exp.Expr:
    """ARRAY<STRING> of the names of the rules a row breaks (empty when it keeps them all)."""
    if not rules:
        return exp.Cast(this=exp.Array(expressions=[]), to=x.data_type("array<string>"))
    names = [exp.Case().when(rule.violation.copy(), exp.Literal.string(rule.name)) for rule in rules]
    return exp.ArrayCompact(this=exp.Array(expressions=names))


def _any_broken() -> exp.Expr:
    size = exp.Anonymous(this="SIZE", expressions=[exp.column(VIOLATIONS)])
    return exp.GT(this=size, expression=exp.Literal.number(0))


def _fail_on_violations(df: Any, contract: Contract, rules: Sequence[Check], samples: int) -> None:
    """One aggregate over the batch; only when something fails, a second look for sample rows."""
    if not rules:
        return
    one, zero = exp.Literal.number(1), exp.Literal.number(0)
    aggregates = [exp.Count(this=exp.Star()).as_("n_rows")]
    aggregates += [
        exp.Sum(this=exp.If(this=rule.violation.copy(), true=one, false=zero)).as_(f"r{i}")
        for i, rule in enumerate(rules)
    ]
    row = df.selectExpr(*(x.sql(a) for a in aggregates)).collect()[0]
    found = {rule.name: int(row[f"r{i}"] or 0) for i, rule in enumerate(rules)}
    if not any(found.values()):
        return
    sample_rows: list[dict[str, Any]] = []
    if samples:
        marked = df.selectExpr("*", x.sql(broken_rules(rules).as_(VIOLATIONS)))
        picked = marked.where(x.sql(_any_broken())).limit(samples).collect()
        visible = [c for c in marked.columns if not c.startswith("__lossy_")]
        sample_rows = [{c: r[c] for c in visible} for r in picked]
    raise ContractViolationError(contract, counts=found, rows=int(row["n_rows"]), samples=sample_rows)


def _engine_of(df: Any) -> Engine:
    from delta_contracts.engine.select import as_engine

    return as_engine(df.sparkSession)
