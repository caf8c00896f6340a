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

# KeywordStatement is re-exported: the plan's Delta statements subclass it
from delta_contracts.sql.dialect import DIALECT
from delta_contracts.sql.dialect import KeywordStatement as KeywordStatement


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


class SyncIdentity(KeywordStatement):
    """Delta's `ALTER COLUMN c SYNC IDENTITY` action: raises the identity column's high-water mark to the
    largest value its rows hold."""

    template = "ALTER COLUMN {} SYNC IDENTITY"


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


def closed_to(name: str, expression_text: str) -> str:
    """A CHECK no row pending a backfill passes (`backfill_pending` is its violation): `name` is set, or the
    expression over the old column has nothing to give it. Never NULL, so Delta reads it as written."""
    value = exp.Paren(this=parse(expression_text))
    closed = exp.or_(
        exp.Not(this=exp.Is(this=column(name), expression=exp.Null())),
        exp.Is(this=value, expression=exp.Null()),
    )
    return sql(closed)


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


def either_shape(expression_text: str, renamed: dict[str, str]) -> str:
    """A rule over a renamed column read over both shapes of a row: each new column `n` in `renamed` (new
    name → the old column's value as the new type) read as `COALESCE(n, old)`, so an old producer's row
    (only the old column set) is held to the rule as a new producer's is."""
    values = {
        new: sql(exp.Coalesce(this=column(new), expressions=[parse(old)])) for new, old in renamed.items()
    }
    return substitute_columns(expression_text, values)


def reading_table(expression_text: str, old: Sequence[str], new: Sequence[str]) -> str:
    """`expression_text` with every table reference to `old` (a subquery's FROM) made a reference to `new`:
    a check written against a table's name, run once that name means another object."""
    tree = parse(expression_text)
    wanted = [p.casefold() for p in old]

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and [p.name.casefold() for p in node.parts] == wanted:
            replacement = table(new)
            if node.alias:
                replacement.set("alias", node.args["alias"].copy())
            return replacement
        return node

    return sql(tree.transform(swap))


def any_of(predicates: Sequence[str]) -> str | None:
    """One predicate true where any of them is (None for none)."""
    if not predicates:
        return None
    return sql(exp.or_(*(exp.Paren(this=parse(p)) for p in predicates)))


# Arithmetic that overflows wraps silently with ANSI off and fails the query with ANSI on; its `try_`
# function (Spark >= 3.3) gives NULL instead, whatever the mode.
_TRYING: dict[type[exp.Expr], str] = {
    exp.Add: "TRY_ADD",
    exp.Sub: "TRY_SUBTRACT",
    exp.Mul: "TRY_MULTIPLY",
    exp.Div: "TRY_DIVIDE",
}
_RAISE_ERROR = "RAISE_ERROR"


def never_raising(expression_text: str) -> str:
    """The expression with every CAST made a TRY_CAST and every `+ - * /` its `try_` function: NULL where a
    value does not fit, whatever the session's ANSI mode (ANSI off, a CAST or a product that overflows wraps
    silently; ANSI on, it fails the query). A `refusing_loss` conversion's RAISE_ERROR becomes that NULL."""

    def soften(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
            return exp.TryCast(this=node.this, to=node.to)
        trying = _TRYING.get(type(node))
        if trying is not None and isinstance(node, exp.Binary):
            return exp.Anonymous(this=trying, expressions=[node.this, node.expression])
        if _is_raise(node):
            return exp.Null()
        return node

    tree = parse(expression_text)
    for case in list(tree.find_all(exp.Case)):
        if case.args.get("ifs") and all(_is_raise(branch.args.get("true")) for branch in case.args["ifs"]):
            # a `refusing_loss` conversion: what it refuses is NULL here, as in its ELSE
            tree = tree if case is not tree else case.args["default"]
            case.replace(case.args["default"])
    # Children before their parents: a replaced node's children are not visited by `transform`.
    for node in reversed(list(tree.dfs())):
        softened = soften(node)
        if softened is not node:
            tree = softened if node is tree else tree
            node.replace(softened)
    return sql(tree)


def _is_raise(node: object) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).upper() == _RAISE_ERROR


def refusing_loss(expression_text: str, type_text: str, message: str) -> str:
    """A user's conversion to `type_text` that fails the statement (RAISE_ERROR) on a row whose value it would
    lose — overflow, text that is no number — where a bare CAST wraps silently with ANSI off: the populate
    copy stays right when run without its pre-check (by hand), whatever the session's ANSI mode."""
    attempt = parse(never_raising(cast_text(expression_text, type_text)))
    sources = sorted(referenced_columns(expression_text))
    if not sources:
        return sql(attempt)
    present = exp.or_(*(exp.Not(this=exp.Is(this=column(s), expression=exp.Null())) for s in sources))
    lost = exp.and_(exp.Paren(this=present), exp.Is(this=attempt.copy(), expression=exp.Null()))
    refusal = exp.Anonymous(this=_RAISE_ERROR, expressions=[exp.Literal.string(message)])
    return sql(exp.Case(ifs=[exp.If(this=lost, true=refusal)], default=attempt))


def overflowed(sources: Sequence[str], converted_text: str) -> str:
    """Rows a conversion loses: a source value there but NULL after it (overflow, bad text, whatever ANSI
    mode says, as TRY_CAST never raises)."""
    present = exp.or_(*(exp.Not(this=exp.Is(this=column(s), expression=exp.Null())) for s in sources))
    return sql(
        exp.and_(
            exp.Paren(this=present), exp.Is(this=exp.Paren(this=parse(converted_text)), expression=exp.Null())
        )
    )


def not_given_back(source: str, round_trip: str) -> str:
    """Rows whose value the conversion changes: the way back (`round_trip`, over the source row) does not give
    the source value again (NULL-safe: a NULL that stays NULL is given back)."""
    same = exp.NullSafeEQ(this=exp.Paren(this=parse(round_trip)), expression=column(source))
    return sql(exp.Not(this=same))


def lost_in_conversion(overflow: str, changed: str) -> str:
    """The rows a conversion refuses: those it overflows, or whose value it changes (`overflowed`,
    `not_given_back`)."""
    return sql(exp.or_(exp.Paren(this=parse(overflow)), parse(changed)))


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


def referenced_roots(expression_text: str) -> frozenset[str]:
    """The top-level columns an expression over one table's row reads, folded: `addr`.`zip` reads addr (a
    struct's field, where `referenced_columns` names the field)."""
    return frozenset(c.parts[0].name.casefold() for c in parse(expression_text).find_all(exp.Column))


def canonical_expression(expression_text: str) -> str:
    """A user's expression re-generated by sqlglot: identifiers quoted, spacing canonical."""
    tree = parse(expression_text)
    for node in tree.find_all(exp.Identifier):
        node.set("quoted", True)
    return sql(tree)
