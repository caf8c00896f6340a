"""`validate`: every rule of a contract checked against a live table in one aggregate query.

One scan per table: the row rules become conditional counts, completeness `count(column)`, freshness
`max(column)`, volume `count(*)` and each unique key `count(keyed rows) - count(DISTINCT key)`, all in the
same SELECT (the engines plan the distinct counts as a second stage of the same scan, not a second scan).
The sample rows of every failing rule come afterwards from one more query (`quality.samples`), and only when
a row rule or a unique key failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from delta_contracts.contract.model import Contract
from delta_contracts.contract.types import canonical
from delta_contracts.live import LiveTable
from delta_contracts.quality.rules import RowRule, duration, row_rules
from delta_contracts.quality.samples import build_sample_query
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.engine.base import Engine

SAMPLE_ROWS = 5
_ROWS = "n_rows"


@dataclass(frozen=True, slots=True)
class RuleResult:
    name: str
    # schema | not_null | min | max | enum | regex | constraint | unique | completeness | volume | freshness
    kind: str
    passed: bool
    failing: int  # rows breaking the rule (unique: rows beyond the first per key; table-level rules: 0 or 1)
    detail: str = ""
    samples: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.name,
            "kind": self.kind,
            "passed": self.passed,
            "failing": self.failing,
            "detail": self.detail,
            "samples": [{k: _jsonable(v) for k, v in row.items()} for row in self.samples],
        }


@dataclass(frozen=True, slots=True)
class TableReport:
    contract: str
    version: str
    table: str
    rows: int | None
    results: tuple[RuleResult, ...] = ()
    error: str | None = None  # the table could not be validated (missing)

    @property
    def passed(self) -> bool:
        return self.error is None and all(r.passed for r in self.results)

    @property
    def failed(self) -> tuple[RuleResult, ...]:
        return tuple(r for r in self.results if not r.passed)

    def to_json(self) -> dict[str, Any]:
        return {
            "contract": self.contract,
            "version": self.version,
            "table": self.table,
            "rows": self.rows,
            "passed": self.passed,
            "error": self.error,
            "rules": [r.to_json() for r in self.results],
        }


@dataclass(frozen=True)
class ValidationQuery:
    """The one aggregate query, and what each of its output columns means."""

    statement: exp.Select
    rules: tuple[tuple[str, RowRule], ...]  # output column -> row rule
    completeness: tuple[tuple[str, str, float], ...]  # output column, contract column, min ratio
    unique: tuple[tuple[str, tuple[str, ...]], ...]  # output column -> key
    freshness: str | None  # output column holding max(freshness column)
    skipped: dict[str, str] = field(default_factory=dict)  # rule -> why it could not be evaluated

    @property
    def sql(self) -> str:
        return x.sql(self.statement)


def schema_results(contract: Contract, live: LiveTable) -> list[RuleResult]:
    """Types and nullability as stored, one result per contract column."""
    results = []
    for column in contract.columns:
        stored = live.column(column.name)
        name = f"{column.name}_schema"
        if stored is None:
            results.append(RuleResult(name, "schema", False, 0, "column missing from the table"))
            continue
        problems = []
        if canonical(stored.type) != canonical(column.type):
            problems.append(f"type is {stored.type}, contract says {canonical(column.type)}")
        guarded = not stored.nullable or live.check(f"{column.name}_not_null") is not None
        if not column.nullable and not guarded:
            problems.append("nullable as stored (no NOT NULL, no CHECK), contract says NOT NULL")
        if column.nullable and not stored.nullable:
            problems.append("NOT NULL as stored, contract says nullable")
        results.append(RuleResult(name, "schema", not problems, 0, "; ".join(problems)))
    return results


def build_query(contract: Contract, table: TableId, live: LiveTable) -> ValidationQuery:
    present = {c.name.casefold() for c in live.columns}
    skipped: dict[str, str] = {}
    rules: list[tuple[str, RowRule]] = []
    for rule in row_rules(contract):
        missing = sorted(rule.columns - present)
        if missing:
            skipped[rule.name] = f"column(s) {', '.join(missing)} missing from the table"
        else:
            rules.append((f"r{len(rules)}", rule))
    quality = contract.quality
    completeness = []
    for i, item in enumerate(quality.completeness):
        if item.column.casefold() in present:
            completeness.append((f"c{i}", item.column, item.min_ratio))
        else:
            skipped[f"{item.column}_completeness"] = f"column {item.column} missing from the table"
    keys = []
    for i, key in enumerate(quality.unique):
        if all(k.casefold() in present for k in key):
            keys.append((f"u{i}", key))
        else:
            skipped[_unique_name(key)] = "key column(s) missing from the table"
    fresh = quality.freshness
    freshness = "latest" if fresh is not None and fresh.column.casefold() in present else None
    if fresh is not None and freshness is None:
        skipped[f"{fresh.column}_freshness"] = f"column {fresh.column} missing from the table"

    projections: list[exp.Expr] = [exp.Count(this=exp.Star()).as_(_ROWS)]
    for alias, rule in rules:
        flag = exp.If(this=x.parse(rule.violation), true=exp.Literal.number(1), false=exp.Literal.number(0))
        projections.append(exp.Sum(this=flag).as_(alias))
    for alias, column, _ in completeness:
        projections.append(exp.Count(this=x.column(column)).as_(alias))
    for alias, key in keys:
        projections.append(_repeated_keys(key).as_(alias))
    if freshness is not None and fresh is not None:
        projections.append(exp.Max(this=x.column(fresh.column)).as_(freshness))
    projections.append(exp.CurrentTimestamp().as_("now"))
    statement = exp.select(*projections).from_(x.table(table))
    return ValidationQuery(statement, tuple(rules), tuple(completeness), tuple(keys), freshness, skipped)


def _repeated_keys(key: Sequence[str]) -> exp.Expr:
    """Rows beyond the first per key: keyed rows minus distinct keys. A NULL in a key never repeats (as in SQL
    UNIQUE), and COUNT(DISTINCT a, b) skips such rows too; engines plan it inside the same scan."""
    complete = exp.and_(*(exp.Not(this=exp.Is(this=x.column(k), expression=exp.Null())) for k in key))
    keyed = exp.Count(this=exp.If(this=complete, true=exp.Literal.number(1), false=exp.Null()))
    distinct = exp.Count(this=exp.Distinct(expressions=[x.column(k) for k in key]))
    return exp.Sub(this=keyed, expression=distinct)


def _unique_name(key: Sequence[str]) -> str:
    return f"{'_'.join(key)}_unique"


def evaluate(contract: Contract, query: ValidationQuery, row: dict[str, Any]) -> list[RuleResult]:
    """Turn the aggregate row into one result per rule (no samples yet)."""
    rows = int(row.get(_ROWS) or 0)
    results = []
    for alias, rule in query.rules:
        failing = int(row.get(alias) or 0)
        detail = f"{failing} row(s) break CHECK ({rule.check})" if failing else ""
        results.append(RuleResult(rule.name, rule.kind, failing == 0, failing, detail))
    for name, why in query.skipped.items():
        results.append(RuleResult(name, "skipped", False, 0, f"not evaluated: {why}"))
    for alias, column, min_ratio in query.completeness:
        filled = int(row.get(alias) or 0)
        ratio = filled / rows if rows else 1.0
        ok = ratio >= min_ratio
        detail = f"{ratio:.4f} of rows have {column} (min {min_ratio}); {rows - filled} NULL"
        results.append(RuleResult(f"{column}_completeness", "completeness", ok, rows - filled, detail))
    for alias, key in query.unique:
        extra = int(row.get(alias) or 0)
        detail = f"{extra} row(s) repeat a key ({', '.join(key)})" if extra else ""
        results.append(RuleResult(_unique_name(key), "unique", extra == 0, extra, detail))
    volume = contract.quality.volume
    if volume is not None:
        low = volume.min_rows is not None and rows < volume.min_rows
        high = volume.max_rows is not None and rows > volume.max_rows
        set_bounds = {"min": volume.min_rows, "max": volume.max_rows}
        bounds = ", ".join(f"{k} {v}" for k, v in set_bounds.items() if v is not None)
        results.append(
            RuleResult("volume", "volume", not (low or high), int(low or high), f"{rows} rows ({bounds})")
        )
    fresh = contract.quality.freshness
    if fresh is not None and query.freshness is not None:
        latest, now = row.get(query.freshness), row.get("now")
        limit = duration(fresh.max_age)
        if not isinstance(latest, datetime) or not isinstance(now, datetime):
            ok, detail = False, f"no {fresh.column} value to measure freshness"
        else:
            age = now - latest
            ok = age <= limit
            detail = f"latest {fresh.column} {latest.isoformat(sep=' ')}, age {age} (max {fresh.max_age})"
        results.append(RuleResult(f"{fresh.column}_freshness", "freshness", ok, int(not ok), detail))
    return results


def validate_table(
    engine: Engine, contract: Contract, table: TableId, *, samples: int = SAMPLE_ROWS
) -> TableReport:
    """Validate one live table against its contract: one aggregate query, then (only when a row rule or a
    unique key failed) one more query for the sample rows of every failing rule."""
    table = TableId(table)  # a caller's plain tuple names the table as well
    name = str(table)
    live = engine.describe(table)
    if live is None:
        return TableReport(contract.id, contract.version, name, None, error=f"table {name} does not exist")
    query = build_query(contract, table, live)
    (row,) = engine.sql(query.sql)
    results = [*schema_results(contract, live), *evaluate(contract, query, row)]
    failing = {r.name for r in results if not r.passed and r.failing}
    sampled = build_sample_query(
        table,
        [rule for _, rule in query.rules if rule.name in failing],
        [(_unique_name(key), key) for _, key in query.unique if _unique_name(key) in failing],
        samples,
    )
    if sampled is not None and samples:
        found = sampled.samples(engine.sql(sampled.sql), samples)
        results = [_with_samples(r, found[r.name]) if r.name in found else r for r in results]
    return TableReport(contract.id, contract.version, name, int(row.get(_ROWS) or 0), tuple(results))


def _with_samples(result: RuleResult, rows: tuple[dict[str, Any], ...]) -> RuleResult:
    return RuleResult(result.name, result.kind, result.passed, result.failing, result.detail, rows)


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)
