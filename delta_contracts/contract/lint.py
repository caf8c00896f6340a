"""Semantic checks over loaded contracts: what the schema alone cannot tell.

Every finding is located (`path:line:col`) and names its field. Regexes are compiled with Python's `re`;
Spark's RLIKE uses Java regexes, which agree on everything but exotic constructs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from delta_contracts.contract.errors import Problem, Severity
from delta_contracts.contract.load import LoadedContract
from delta_contracts.contract.model import Contract
from delta_contracts.contract.types import (
    SparkType,
    TypeParseError,
    is_numeric,
    is_orderable,
    is_string,
    parse_type,
    render_type,
)

# Without column mapping Delta refuses these characters in column names (and Parquet stores them badly).
_UNSTORABLE = set(" ,;{}()\n\t=")
_RESERVED_PROPERTY_PREFIX = "delta_contracts."
_BOOLEAN_NODES = (
    exp.Predicate,
    exp.Connector,
    exp.Not,
    exp.Boolean,
    exp.Between,
    exp.In,
    exp.Is,
    exp.Like,
    exp.ILike,
    exp.RegexpLike,
    exp.Exists,
)


def column_mapping_enabled(contract: Contract) -> bool:
    return contract.table.properties.get("delta.columnMapping.mode", "none") in {"name", "id"}


def parse_boolean_expression(text: str) -> exp.Expr:
    """Parse a Spark SQL boolean expression; raise ValueError saying why it is not one."""
    try:
        statements = sqlglot.parse(text, read="databricks")
    except (ParseError, TokenError) as err:
        first = str(err).splitlines()[0] if str(err) else "syntax error"
        raise ValueError(f"not a valid Spark SQL expression: {first}") from None
    found = [s for s in statements if s is not None]
    if len(found) != 1:
        raise ValueError("must be exactly one expression (no ';')")
    expression = found[0]
    while isinstance(expression, exp.Paren):
        expression = expression.this
    if not isinstance(expression, _BOOLEAN_NODES):
        raise ValueError(f"'{text}' is not a boolean expression")
    if expression.find(exp.Select, exp.Subquery) is not None and not isinstance(expression, exp.Exists):
        raise ValueError("a CHECK cannot contain a subquery")
    return found[0]


def lint(loaded: LoadedContract) -> list[Problem]:
    return list(_lint(loaded))


def lint_many(contracts: Iterable[LoadedContract]) -> list[Problem]:
    """Lint each contract, then what spans files: two contracts for one table."""
    problems: list[Problem] = []
    first_by_id: dict[str, LoadedContract] = {}
    for loaded in contracts:
        problems.extend(_lint(loaded))
        key = loaded.contract.id.casefold()
        if key in first_by_id:
            other = first_by_id[key]
            problems.append(
                _finding(
                    loaded,
                    ("id",),
                    f"contract id '{loaded.contract.id}' is also declared in {other.source.file}",
                    "DC-L010",
                )
            )
        else:
            first_by_id[key] = loaded
    return problems


def _finding(loaded: LoadedContract, path: tuple[str | int, ...], message: str, code: str) -> Problem:
    from delta_contracts.contract.errors import field_path

    return Problem(loaded.source.locate(path), field_path(path), message, code, Severity.FINDING)


def _lint(loaded: LoadedContract) -> Iterator[Problem]:
    c = loaded.contract
    mapping = column_mapping_enabled(c)
    names = {col.name.casefold(): col.name for col in c.columns}

    for part in c.table_parts:
        if _UNSTORABLE & set(part) or not part.strip():
            yield _finding(loaded, ("id",), f"table name part '{part}' cannot be stored by Delta", "DC-L011")

    seen: dict[str, int] = {}
    for i, col in enumerate(c.columns):
        where = ("columns", i)
        folded = col.name.casefold()
        if folded in seen:
            first = c.columns[seen[folded]].name
            yield _finding(
                loaded,
                (*where, "name"),
                f"duplicate column '{col.name}': Delta column names are case-insensitive and "
                f"columns[{seen[folded]}] is '{first}'",
                "DC-L001",
            )
        else:
            seen[folded] = i
        bad = sorted(_UNSTORABLE & set(col.name))
        if bad and not mapping:
            shown = ", ".join(repr(ch) for ch in bad)
            yield _finding(
                loaded,
                (*where, "name"),
                f"column name contains {shown}, which Delta stores only with column mapping "
                "(set table.properties delta.columnMapping.mode: name)",
                "DC-L011",
            )
        yield from _lint_column_type(loaded, i)
        if col.renamed_from is not None and col.renamed_from.casefold() in names:
            yield _finding(
                loaded,
                (*where, "renamed_from"),
                f"renamed_from '{col.renamed_from}' names a column that still exists",
                "DC-L007",
            )
        if (
            col.deprecated
            and col.deprecated.replaced_by
            and col.deprecated.replaced_by.casefold() not in names
        ):
            yield _finding(
                loaded,
                (*where, "deprecated", "replaced_by"),
                f"replaced_by '{col.deprecated.replaced_by}' is not a column of this contract",
                "DC-L012",
            )

    for field in ("partitioned_by", "clustered_by"):
        for j, name in enumerate(getattr(c.table, field)):
            if name.casefold() not in names:
                yield _finding(loaded, ("table", field, j), f"'{name}' is not a column", "DC-L009")
    if c.table.partitioned_by and c.table.clustered_by:
        yield _finding(
            loaded,
            ("table", "clustered_by"),
            "a Delta table is either partitioned or clustered, not both",
            "DC-L009",
        )
    for key in c.table.properties:
        if key.startswith(_RESERVED_PROPERTY_PREFIX):
            yield _finding(
                loaded,
                ("table", "properties", key),
                f"'{key}': delta_contracts.* properties are set by the toolkit (the contract stamp)",
                "DC-L013",
            )
        if key.startswith("delta.constraints."):
            yield _finding(
                loaded,
                ("table", "properties", key),
                "CHECK constraints go under `constraints:`, not properties",
                "DC-L013",
            )

    constraint_names: dict[str, int] = {}
    derived = {
        f"{col.name}_{rule}".casefold() for col in c.columns for rule in ("min", "max", "enum", "regex")
    }
    for k, constraint in enumerate(c.constraints):
        folded = constraint.name.casefold()
        if folded in constraint_names or folded in derived:
            yield _finding(
                loaded,
                ("constraints", k, "name"),
                f"constraint name '{constraint.name}' is used twice "
                "(column checks are named <column>_<rule>)",
                "DC-L014",
            )
        constraint_names[folded] = k
        try:
            parsed = parse_boolean_expression(constraint.expression)
        except ValueError as err:
            yield _finding(loaded, ("constraints", k, "expression"), str(err), "DC-L008")
            continue
        for ref in parsed.find_all(exp.Column):
            if ref.name.casefold() not in names:
                yield _finding(
                    loaded, ("constraints", k, "expression"), f"'{ref.name}' is not a column", "DC-L008"
                )

    q = c.quality
    if q.freshness and q.freshness.column.casefold() not in names:
        yield _finding(
            loaded, ("quality", "freshness", "column"), f"'{q.freshness.column}' is not a column", "DC-L015"
        )
    for k, comp in enumerate(q.completeness):
        if comp.column.casefold() not in names:
            yield _finding(
                loaded,
                ("quality", "completeness", k, "column"),
                f"'{comp.column}' is not a column",
                "DC-L015",
            )
    for k, key_columns in enumerate(q.unique):
        for j, name in enumerate(key_columns):
            if name.casefold() not in names:
                yield _finding(loaded, ("quality", "unique", k, j), f"'{name}' is not a column", "DC-L015")
    volume = q.volume
    if volume and volume.min_rows is not None and volume.max_rows is not None:  # noqa: SIM102
        if volume.min_rows > volume.max_rows:
            yield _finding(
                loaded, ("quality", "volume", "min_rows"), "min_rows is greater than max_rows", "DC-L004"
            )


def _lint_column_type(loaded: LoadedContract, i: int) -> Iterator[Problem]:
    col = loaded.contract.columns[i]
    where: tuple[str | int, ...] = ("columns", i)
    try:
        spark_type = parse_type(col.type)
    except TypeParseError as err:
        yield _finding(loaded, (*where, "type"), f"invalid type '{col.type}': {err.message}", "DC-L002")
        return
    checks = col.checks
    if checks.enum is not None:
        if not is_string(spark_type):
            yield _finding(
                loaded, (*where, "checks", "enum"), f"enum on a non-string column ({col.type})", "DC-L003"
            )
        elif any(not isinstance(v, str) for v in checks.enum):
            yield _finding(
                loaded,
                (*where, "checks", "enum"),
                "enum values of a string column must be strings",
                "DC-L003",
            )
        if not checks.enum:
            yield _finding(
                loaded, (*where, "checks", "enum"), "enum is empty: no value could pass", "DC-L003"
            )
    for bound in ("min", "max"):
        if getattr(checks, bound) is not None and not is_orderable(spark_type):
            yield _finding(
                loaded, (*where, "checks", bound), f"{bound} on a column of type {col.type}", "DC-L005"
            )
    if checks.min is not None and checks.max is not None and checks.min > checks.max:
        yield _finding(
            loaded, (*where, "checks", "min"), f"min {checks.min} is greater than max {checks.max}", "DC-L004"
        )
    if checks.regex is not None:
        if not is_string(spark_type):
            yield _finding(
                loaded, (*where, "checks", "regex"), f"regex on a column of type {col.type}", "DC-L006"
            )
        try:
            re.compile(checks.regex)
        except re.error as err:
            yield _finding(loaded, (*where, "checks", "regex"), f"regex does not compile: {err}", "DC-L006")
    if col.default is not None and not _default_fits(col.default, spark_type):
        yield _finding(
            loaded, (*where, "default"), f"default {col.default!r} does not fit type {col.type}", "DC-L016"
        )


def _default_fits(value: object, spark_type: SparkType) -> bool:
    if is_numeric(spark_type):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if is_string(spark_type):
        return isinstance(value, str)
    if render_type(spark_type) == "boolean":
        return isinstance(value, bool)
    return isinstance(value, str)  # dates, timestamps, binary: a literal Spark casts
