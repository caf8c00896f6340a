"""Sample rows for every failing rule of `validate`, fetched in one more query (one scan of the table).

The aggregate query only counts; the samples of all failing rules come from a single SELECT over the rows
that fail any of them, each row flagged per rule and numbered within each rule, so `LIMIT n` holds per rule
rather than for the whole query:

    L1  every row, with one flag per failing row rule and, per failing unique key, the key's row count and
        the row's number within its key (windows partitioned by the key; this is the only scan)
    L2  the rows that break a row rule, or stand first for a repeated key, numbered within each rule
    L3  the rows within the first `n` of at least one rule

A row that breaks several rules comes back once and is shown under each rule whose first `n` it is in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from delta_contracts.quality.rules import RowRule
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

# Helper columns of the sample query; the prefix keeps them apart from the table's own columns.
_PREFIX = "__dc_sample_"


@dataclass(frozen=True)
class SampleQuery:
    statement: exp.Select
    rules: tuple[tuple[str, str], ...]  # rule name -> its flag / number column suffix
    keys: tuple[tuple[str, tuple[str, ...], str], ...]  # rule name, key, suffix

    @property
    def sql(self) -> str:
        return x.sql(self.statement)

    def samples(self, rows: list[dict[str, Any]], limit: int) -> dict[str, tuple[dict[str, Any], ...]]:
        """Rule name -> its sample rows (the table's columns; for a repeated key: the key and its count)."""
        found: dict[str, tuple[dict[str, Any], ...]] = {}
        for name, suffix in self.rules:
            mine = [row for row in rows if row[_flag(suffix)] and row[_number(suffix)] <= limit]
            mine.sort(key=lambda row: int(row[_number(suffix)]))
            found[name] = tuple(_table_columns(row) for row in mine)
        for name, key, suffix in self.keys:
            mine = [row for row in rows if row[_first(suffix)] and row[_number(suffix)] <= limit]
            mine.sort(key=lambda row: int(row[_number(suffix)]))
            found[name] = tuple(
                {**{k: row[k] for k in key}, "duplicates": row[_count(suffix)]} for row in mine
            )
        return found


def build_sample_query(
    table: TableId,
    rules: Sequence[RowRule],
    keys: Sequence[tuple[str, Sequence[str]]],
    limit: int,
) -> SampleQuery | None:
    """One query for the samples of these failing row rules and repeated keys (rule name, key); None if
    there is nothing to sample."""
    if not rules and not keys:
        return None
    named_rules = tuple((rule.name, f"r{i}") for i, rule in enumerate(rules))
    named_keys = tuple((name, tuple(key), f"u{i}") for i, (name, key) in enumerate(keys))

    every_row: list[exp.Expr] = [exp.Star()]
    for rule, (_, suffix) in zip(rules, named_rules, strict=True):
        every_row.append(exp.alias_(exp.Paren(this=x.parse(rule.violation)), _flag(suffix), quoted=True))
    for _, key, suffix in named_keys:
        by_key = [x.column(k) for k in key]
        count = exp.Window(this=exp.Count(this=exp.Star()), partition_by=by_key)
        within_key = [c.copy() for c in by_key]
        position = exp.Window(this=exp.RowNumber(), partition_by=within_key, order=_order(by_key))
        every_row.append(exp.alias_(count, _count(suffix), quoted=True))
        every_row.append(exp.alias_(position, _position(suffix), quoted=True))
    level1 = exp.select(*every_row).from_(x.table(table))

    # L2 needs "first row of a repeated key" as a column before it can number those rows.
    firsts: list[exp.Expr] = [exp.Star()]
    for _, key, suffix in named_keys:
        complete = [exp.Not(this=exp.Is(this=x.column(k), expression=exp.Null())) for k in key]
        repeated = exp.GT(this=_col(_count(suffix)), expression=exp.Literal.number(1))
        first = exp.EQ(this=_col(_position(suffix)), expression=exp.Literal.number(1))
        firsts.append(exp.alias_(exp.and_(*complete, repeated, first), _first(suffix), quoted=True))
    with_firsts = exp.select(*firsts).from_(level1.subquery("every_row"))

    numbered: list[exp.Expr] = [exp.Star()]
    wanted: list[exp.Expr] = []
    for _, suffix in named_rules:
        numbered.append(_numbered(_flag(suffix), [_col(_flag(suffix))], suffix))
        wanted.append(_col(_flag(suffix)))
    for _, key, suffix in named_keys:
        numbered.append(_numbered(_first(suffix), [x.column(k) for k in key], suffix))
        wanted.append(_col(_first(suffix)))
    level2 = exp.select(*numbered).from_(with_firsts.subquery("flagged")).where(exp.or_(*wanted))

    flags = [(_flag(s), s) for _, s in named_rules] + [(_first(s), s) for _, _, s in named_keys]
    within = [
        exp.and_(_col(flag), exp.LTE(this=_col(_number(suffix)), expression=exp.Literal.number(limit)))
        for flag, suffix in flags
    ]
    level3 = exp.select(exp.Star()).from_(level2.subquery("failing")).where(exp.or_(*within))
    return SampleQuery(level3, named_rules, named_keys)


def _numbered(flag: str, order: list[exp.Expr], suffix: str) -> exp.Expr:
    """Row number within the rows carrying `flag` (a partition per flag value; only TRUE is kept)."""
    window = exp.Window(this=exp.RowNumber(), partition_by=[_col(flag)], order=_order(order))
    return exp.alias_(window, _number(suffix), quoted=True)


def _order(columns: Sequence[exp.Expr]) -> exp.Order:
    return exp.Order(expressions=[exp.Ordered(this=c, nulls_first=True) for c in columns])


def _col(name: str) -> exp.Column:
    return x.column(name)


def _table_columns(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if not k.startswith(_PREFIX)}


def _flag(suffix: str) -> str:
    return f"{_PREFIX}{suffix}_breaks"


def _count(suffix: str) -> str:
    return f"{_PREFIX}{suffix}_count"


def _position(suffix: str) -> str:
    return f"{_PREFIX}{suffix}_position"


def _first(suffix: str) -> str:
    return f"{_PREFIX}{suffix}_first"


def _number(suffix: str) -> str:
    return f"{_PREFIX}{suffix}_number"
