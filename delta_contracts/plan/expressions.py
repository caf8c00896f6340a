"""SQL expressions the planner needs, built as sqlglot trees and kept as Spark SQL text in ops.

Identifiers are always quoted and literals always escaped by sqlglot's generator; nothing here formats SQL
by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from delta_contracts.sql.dialect import DIALECT


def ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def column(name: str) -> exp.Column:
    return exp.Column(this=ident(name))


def table(parts: Sequence[str]) -> exp.Table:
    names = [ident(p) for p in parts]
    if len(names) == 1:
        return exp.Table(this=names[0])
    if len(names) == 2:
        return exp.Table(this=names[1], db=names[0])
    return exp.Table(this=names[2], db=names[1], catalog=names[0])


def literal(value: object) -> exp.Expr:
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int | float):
        return exp.Literal.number(repr(value) if isinstance(value, float) else str(value))
    if isinstance(value, datetime):  # before date: a datetime is a date too
        return exp.Cast(this=exp.Literal.string(value.isoformat(sep=" ")), to=data_type("timestamp"))
    if isinstance(value, date):
        return exp.Cast(this=exp.Literal.string(value.isoformat()), to=data_type("date"))
    return exp.Literal.string(str(value))


def sql(expression: exp.Expr, *, strict: bool = True) -> str:
    """Generate Spark SQL; anything the dialect cannot express raises instead of being dropped silently."""
    level = ErrorLevel.RAISE if strict else ErrorLevel.IGNORE
    return expression.sql(dialect=DIALECT, unsupported_level=level)


def parse(text: str) -> exp.Expr:
    """Parse Spark SQL expression text (a contract constraint, an op's stored expression)."""
    return sqlglot.parse_one(text, read=DIALECT)


def data_type(type_text: str) -> exp.DataType:
    return exp.DataType.build(type_text, dialect=DIALECT)


def cast(expression: exp.Expr, type_text: str) -> exp.Expr:
    """`expression` as `type_text`; an expression that is already such a CAST is kept as it is."""
    target = data_type(type_text)
    if isinstance(expression, exp.Cast) and expression.to == target:
        return expression
    return exp.Cast(this=expression, to=target)


def cast_text(expression_text: str, type_text: str) -> str:
    """A user's SQL expression (identifiers quoted) cast to `type_text`."""
    return sql(cast(parse(canonical_expression(expression_text)), type_text))


def is_null(name: str) -> str:
    return sql(exp.Is(this=column(name), expression=exp.Null()))


def is_null_text(expression_text: str) -> str:
    return sql(exp.Is(this=exp.Paren(this=parse(expression_text)), expression=exp.Null()))


def not_true(expression_text: str) -> str:
    """Rows where a CHECK fails: Delta counts NULL as a violation, so `NOT COALESCE(rule, FALSE)`."""
    rule = exp.Paren(this=parse(expression_text))
    return sql(exp.Not(this=exp.Coalesce(this=rule, expressions=[exp.false()])))


def backfill_pending(name: str, expression_text: str) -> str:
    value = exp.Paren(this=parse(expression_text))
    pending = exp.and_(
        exp.Is(this=column(name), expression=exp.Null()),
        exp.Not(this=exp.Is(this=value, expression=exp.Null())),
    )
    return sql(pending)


def null_safe(name: str, rule: exp.Expr, nullable: bool) -> str:
    """A column rule as a CHECK; on a nullable column NULL passes (`c IS NULL OR rule`)."""
    if not nullable:
        return sql(rule)
    return sql(exp.or_(exp.Is(this=column(name), expression=exp.Null()), rule))


def rule_min(name: str, bound: object) -> exp.Expr:
    return exp.GTE(this=column(name), expression=literal(bound))


def rule_max(name: str, bound: object) -> exp.Expr:
    return exp.LTE(this=column(name), expression=literal(bound))


def rule_enum(name: str, values: Sequence[object]) -> exp.Expr:
    return exp.In(this=column(name), expressions=[literal(v) for v in values])


def rule_regex(name: str, pattern: str) -> exp.Expr:
    return exp.RegexpLike(this=column(name), expression=exp.Literal.string(pattern))


def not_null_rule(name: str) -> str:
    return sql(exp.Not(this=exp.Is(this=column(name), expression=exp.Null())))


def substitute_columns(expression_text: str, values: dict[str, str]) -> str:
    """`expression_text` with each column reference replaced by an expression (a rule over a new table's
    columns, read over the rows of the table it is copied from)."""
    tree = parse(expression_text)
    folded = {name.casefold(): exp.Paren(this=parse(value)) for name, value in values.items()}

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.name.casefold() in folded:
            return folded[node.name.casefold()].copy()
        return node

    return sql(tree.transform(swap))


def any_of(predicates: Sequence[str]) -> str | None:
    """One predicate true where any of them is (None for none)."""
    if not predicates:
        return None
    return sql(exp.or_(*(exp.Paren(this=parse(p)) for p in predicates)))


def never_raising(expression_text: str) -> str:
    """The expression with every CAST made a TRY_CAST: NULL where a value does not fit, whatever the session's
    ANSI mode (ANSI off, a CAST that overflows wraps silently; ANSI on, it fails the query)."""

    def soften(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
            return exp.TryCast(this=node.this, to=node.to)
        return node

    return sql(parse(expression_text).transform(soften))


def lost_in_conversion(sources: Sequence[str], converted_text: str, round_trip: str | None) -> str:
    """Rows a conversion would lose: a source value there but NULL after it (overflow, bad text, whatever
    ANSI mode says, as TRY_CAST never raises), or a value the inverse does not give back."""
    present = exp.or_(*(exp.Not(this=exp.Is(this=column(s), expression=exp.Null())) for s in sources))
    lost: exp.Expr = exp.and_(
        exp.Paren(this=present), exp.Is(this=exp.Paren(this=parse(converted_text)), expression=exp.Null())
    )
    if round_trip is not None and len(sources) == 1:
        same = exp.NullSafeEQ(this=exp.Paren(this=parse(round_trip)), expression=column(sources[0]))
        lost = exp.or_(exp.Paren(this=lost), exp.Not(this=same))
    return sql(lost)


def view_query(source: Sequence[str], columns: Sequence[tuple[str, str]]) -> exp.Select:
    """A view's query; the columns are explicit because Spark freezes a view's schema at creation."""
    if not columns:
        return exp.Select(expressions=[exp.Star()]).from_(table(source))
    return exp.Select(
        expressions=[exp.Alias(this=parse(expr), alias=ident(name)) for name, expr in columns]
    ).from_(table(source))


def view_query_text(source: Sequence[str], columns: Sequence[tuple[str, str]]) -> str:
    return sql(view_query(source, columns))


def referenced_columns(expression_text: str) -> frozenset[str]:
    return frozenset(c.name.casefold() for c in parse(expression_text).find_all(exp.Column))


def canonical_expression(expression_text: str) -> str:
    """A user's expression re-generated by sqlglot: identifiers quoted, spacing canonical."""
    tree = parse(expression_text)
    for node in tree.find_all(exp.Identifier):
        node.set("quoted", True)
    return sql(tree)
