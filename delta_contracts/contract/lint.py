"""Semantic checks over loaded contracts: what the schema alone cannot tell.

Every finding is located (`path:line:col`) and names its field. One small checker per aspect (table name,
columns, column rules, layout, properties, constraints, quality), registered with `@checker`; every checker
runs on every contract, so one run reports every finding. Regexes are compiled with Python's `re`; Spark's
RLIKE uses Java regexes, which agree on everything but exotic constructs.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from delta_contracts.contract.delta_properties import is_bookkeeping
from delta_contracts.contract.errors import Problem, Severity, first_line, plain
from delta_contracts.contract.load import LoadedContract
from delta_contracts.contract.model import Column, Contract, printable
from delta_contracts.contract.nested import unknown_field_paths
from delta_contracts.contract.typecheck import invalid_types
from delta_contracts.contract.types import (
    INTEGRALS,
    PrimitiveType,
    SparkType,
    TypeParseError,
    canonical_or_text,
    is_numeric,
    is_string,
    parse_type,
    render_type,
)
from delta_contracts.sql.dialect import DIALECT

# Without column mapping Delta refuses these characters in column names (and Parquet stores them badly).
_UNSTORABLE = set(" ,;{}()\n\t=")
_RESERVED_PROPERTY_PREFIX = "delta_contracts."
# A name goes into the migration's `.sql` file back-quoted, and `spark-sql -f` drops every line that starts
# with `--` and then splits the rest into statements. Spark 3.5's splitter does not know back-quotes: a quote,
# `;`, `--` or `/*` inside a name opens a string or a comment, or ends the statement, there; Spark 4's still
# takes `\` for an escape. A line break can start a line that the reader drops. Spark also expands `${…}` in
# every statement it is given, names included.
_SPLITTER_MARKS = ("'", '"', ";", "\\", "--", "/*", "*/", "${")
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


def parse_expression(text: str) -> exp.Expr:
    """A Spark SQL expression (a generation expression, a default), or ValueError saying why not."""
    try:
        return sqlglot.parse_one(text, read=DIALECT)
    except (ParseError, TokenError) as err:
        raise ValueError(f"not a valid Spark SQL expression: {first_line(err)}") from None


def parse_boolean_expression(text: str) -> exp.Expr:
    """Parse a Spark SQL boolean expression; raise ValueError saying why it is not one."""
    try:
        statements = sqlglot.parse(text, read=DIALECT)
    except (ParseError, TokenError) as err:
        first = first_line(err)
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


Checker = Callable[[LoadedContract], Iterator[Problem]]
CHECKERS: list[Checker] = []


def checker(function: Checker) -> Checker:
    """Register one aspect of `lint`; checkers run in registration order."""
    CHECKERS.append(function)
    return function


def _lint(loaded: LoadedContract) -> Iterator[Problem]:
    for check in CHECKERS:
        yield from check(loaded)


def _column_names(contract: Contract) -> set[str]:
    return {column.name.casefold() for column in contract.columns}


@checker
def _table_name(loaded: LoadedContract) -> Iterator[Problem]:
    for part in loaded.contract.table_parts:
        if _UNSTORABLE & set(part) or not part.strip():
            yield _finding(loaded, ("id",), f"table name part '{part}' cannot be stored by Delta", "DC-L011")


def unwritable_in_sql(name: str) -> str | None:
    """Why `name` cannot be written into a `.sql` file that `spark-sql -f` runs, or None when it can."""
    controls = sorted({ch for ch in name if unicodedata.category(ch) in ("Cc", "Zl", "Zp")})
    if controls:
        return "it contains " + ", ".join(repr(ch) for ch in controls)
    marks = [mark for mark in _SPLITTER_MARKS if mark in name]
    if marks:
        return "it contains " + ", ".join(repr(mark) for mark in marks)
    return None


@checker
def _names_fit_sql_files(loaded: LoadedContract) -> Iterator[Problem]:
    c = loaded.contract
    named: list[tuple[tuple[str | int, ...], str, str]] = []
    for i, col in enumerate(c.columns):
        named.append((("columns", i, "name"), "column name", col.name))
        if col.renamed_from is not None:
            named.append((("columns", i, "renamed_from"), "renamed_from", col.renamed_from))
    for k, constraint in enumerate(c.constraints):
        named.append((("constraints", k, "name"), "constraint name", constraint.name))
    for path, what, name in named:
        why = unwritable_in_sql(name)
        if why is not None:
            shown = printable(name)
            message = f"{what} '{shown}' cannot be written into a migration's .sql file: {why}"
            yield _finding(loaded, path, message, "DC-L017")


@checker
def _column_names_and_references(loaded: LoadedContract) -> Iterator[Problem]:
    c = loaded.contract
    mapping = column_mapping_enabled(c)
    names = _column_names(c)
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
        if col.renamed_from is not None and col.renamed_from.casefold() in names:
            message = f"renamed_from '{col.renamed_from}' names a column that still exists"
            yield _finding(loaded, (*where, "renamed_from"), message, "DC-L007")
        replaced_by = col.deprecated.replaced_by if col.deprecated else None
        if replaced_by and replaced_by.casefold() not in names:
            message = f"replaced_by '{replaced_by}' is not a column of this contract"
            yield _finding(loaded, (*where, "deprecated", "replaced_by"), message, "DC-L012")


@checker
def _column_types(loaded: LoadedContract) -> Iterator[Problem]:
    return invalid_types(loaded)


@checker
def _column_types_and_rules(loaded: LoadedContract) -> Iterator[Problem]:
    for i, col in enumerate(loaded.contract.columns):
        where: tuple[str | int, ...] = ("columns", i)
        try:
            spark_type = parse_type(col.type)
        except TypeParseError:
            continue  # said by invalid_types
        for key, path, message in unknown_field_paths(spark_type, col.renamed_fields, col.deprecated_fields):
            yield _finding(loaded, (*where, key, path), message, "DC-L019")
        yield from _enum_rule(loaded, where, col, spark_type)
        yield from _bound_rules(loaded, where, col, spark_type)
        yield from _regex_rule(loaded, where, col, spark_type)
        if col.default is not None and not _default_fits(col.default, spark_type):
            message = f"default {col.default!r} does not fit type {col.type}"
            yield _finding(loaded, (*where, "default"), message, "DC-L016")


def _type_name(spark_type: SparkType) -> str:
    return spark_type.name if isinstance(spark_type, PrimitiveType) else render_type(spark_type)


def _literal_fits(value: object, spark_type: SparkType) -> bool:
    """Whether a YAML value is a literal of the column's type (the CHECK compares the two)."""
    name = _type_name(spark_type)
    if isinstance(value, bool):
        return name == "boolean"
    if is_numeric(spark_type):
        return isinstance(value, int) if name in INTEGRALS else isinstance(value, int | float)
    if is_string(spark_type):
        return isinstance(value, str)
    if name == "date":
        return isinstance(value, date) and not isinstance(value, datetime)
    if name in ("timestamp", "timestamp_ntz"):
        return isinstance(value, date)  # a date is midnight of that day
    return False


def _literal_kind(spark_type: SparkType) -> str:
    name = _type_name(spark_type)
    if is_numeric(spark_type):
        return "integers" if name in INTEGRALS else "numbers"
    if name == "date":
        return "dates (2024-01-31)"
    if name in ("timestamp", "timestamp_ntz"):
        return "timestamps (2024-01-31 10:00:00) or dates"
    return "strings" if is_string(spark_type) else f"{name} values"


def _enum_rule(
    loaded: LoadedContract, where: tuple[str | int, ...], col: Column, spark_type: SparkType
) -> Iterator[Problem]:
    values = col.checks.enum
    if values is None:
        return
    path = (*where, "checks", "enum")
    if not values:
        yield _finding(loaded, path, "enum is empty: no value could pass", "DC-L003")
    if not (is_string(spark_type) or is_numeric(spark_type) or _type_name(spark_type) == "boolean"):
        yield _finding(loaded, path, f"enum on a column of type {col.type}", "DC-L003")
        return
    for k, value in enumerate(values):
        if not _literal_fits(value, spark_type):
            kind = _literal_kind(spark_type)
            shown = repr(value) if isinstance(value, str) else plain(value)  # a string shows its quotes
            message = f"enum value {shown} is not of the column's type {col.type}: use {kind}"
            if isinstance(value, bool):
                message += " (YAML reads yes, no, on, off, true and false unquoted as booleans: quote it)"
            yield _finding(loaded, (*path, k), message, "DC-L003")


def _bound_rules(
    loaded: LoadedContract, where: tuple[str | int, ...], col: Column, spark_type: SparkType
) -> Iterator[Problem]:
    checks = col.checks
    orderable = is_numeric(spark_type) or _type_name(spark_type) in ("date", "timestamp", "timestamp_ntz")
    fitting = []
    for bound in ("min", "max"):
        value = getattr(checks, bound)
        if value is None:
            continue
        if not orderable:
            message = (
                f"{bound} on a column of type {col.type}: min/max apply to numbers, dates and timestamps"
            )
            yield _finding(loaded, (*where, "checks", bound), message, "DC-L005")
        elif not _literal_fits(value, spark_type):
            message = (
                f"{bound} {value!r} is not a literal of type {col.type}: use {_literal_kind(spark_type)}"
            )
            yield _finding(loaded, (*where, "checks", bound), message, "DC-L005")
        else:
            fitting.append(bound)
    if fitting == ["min", "max"] and _above(checks.min, checks.max):
        message = f"min {checks.min} is greater than max {checks.max}"
        yield _finding(loaded, (*where, "checks", "min"), message, "DC-L004")


def _as_moment(value: date) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo is None else value.astimezone(UTC).replace(tzinfo=None)
    return datetime(value.year, value.month, value.day)


def _above(low: object, high: object) -> bool:
    """`low > high` for two bounds that fit one column: both numbers, or both dates/timestamps."""
    if isinstance(low, date) and isinstance(high, date):
        return _as_moment(low) > _as_moment(high)
    if isinstance(low, int | float) and isinstance(high, int | float):
        return low > high
    return False


def _regex_rule(
    loaded: LoadedContract, where: tuple[str | int, ...], col: Column, spark_type: SparkType
) -> Iterator[Problem]:
    pattern = col.checks.regex
    if pattern is None:
        return
    if not is_string(spark_type):
        yield _finding(
            loaded, (*where, "checks", "regex"), f"regex on a column of type {col.type}", "DC-L006"
        )
    try:
        re.compile(pattern)
    except re.error as err:
        yield _finding(loaded, (*where, "checks", "regex"), f"regex does not compile: {err}", "DC-L006")


@checker
def _layout(loaded: LoadedContract) -> Iterator[Problem]:
    c = loaded.contract
    names = _column_names(c)
    for field in ("partitioned_by", "clustered_by"):
        for j, name in enumerate(getattr(c.table, field)):
            if name.casefold() not in names:
                yield _finding(loaded, ("table", field, j), f"'{name}' is not a column", "DC-L009")
    if c.table.partitioned_by and c.table.clustered_by:
        message = "a Delta table is either partitioned or clustered, not both"
        yield _finding(loaded, ("table", "clustered_by"), message, "DC-L009")


@checker
def _properties(loaded: LoadedContract) -> Iterator[Problem]:
    for key in loaded.contract.table.properties:
        where = ("table", "properties", key)
        if key.startswith(_RESERVED_PROPERTY_PREFIX):
            message = f"'{key}': delta_contracts.* properties are set by the toolkit (the contract stamp)"
            yield _finding(loaded, where, message, "DC-L013")
        if key.startswith("delta.constraints."):
            yield _finding(
                loaded, where, "CHECK constraints go under `constraints:`, not properties", "DC-L013"
            )
        if is_bookkeeping(key):
            message = (
                f"'{key}' is Delta's own bookkeeping, set by Delta for this one table: "
                "a contract never declares it (remove it)"
            )
            yield _finding(loaded, where, message, "DC-L013")


@checker
def _generated_values(loaded: LoadedContract) -> Iterator[Problem]:
    """Identity, generated columns and defaults: what Delta accepts of each, and of them together."""
    c = loaded.contract
    names = _column_names(c)
    partition = {n.casefold() for n in c.table.partitioned_by}
    for i, column in enumerate(c.columns):
        where = ("columns", i)
        ways = [
            w
            for w, value in (
                ("default", column.default),
                ("default_expression", column.default_expression),
                ("identity", column.identity),
                ("generated", column.generated),
            )
            if value is not None
        ]
        if len(ways) > 1:
            message = f"a column takes its value one way: {' and '.join(ways)} together"
            yield _finding(loaded, (*where, ways[1]), message, "DC-L018")
        if column.identity is not None:
            if canonical_or_text(column.type) != "bigint":
                message = f"an identity column is bigint in Delta, not {column.type}"
                yield _finding(loaded, (*where, "type"), message, "DC-L018")
            if column.identity.step == 0:
                yield _finding(loaded, (*where, "identity", "step"), "step must not be 0", "DC-L018")
            if column.name.casefold() in partition:
                message = "Delta refuses an identity column as a partition column"
                yield _finding(loaded, (*where, "identity"), message, "DC-L018")
        for key in ("generated", "default_expression"):
            text = getattr(column, key)
            if text is None:
                continue
            try:
                parsed = parse_expression(text)
            except ValueError as err:
                yield _finding(loaded, (*where, key), str(err), "DC-L018")
                continue
            for ref in parsed.find_all(exp.Column):
                if ref.name.casefold() not in names:
                    yield _finding(loaded, (*where, key), f"'{ref.name}' is not a column", "DC-L018")
                elif key == "generated" and ref.name.casefold() == column.name.casefold():
                    message = "a generated column cannot read itself"
                    yield _finding(loaded, (*where, key), message, "DC-L018")


@checker
def _constraints(loaded: LoadedContract) -> Iterator[Problem]:
    c = loaded.contract
    names = _column_names(c)
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
                message = f"'{ref.name}' is not a column"
                yield _finding(loaded, ("constraints", k, "expression"), message, "DC-L008")


@checker
def _quality(loaded: LoadedContract) -> Iterator[Problem]:
    q = loaded.contract.quality
    names = _column_names(loaded.contract)
    if q.freshness and q.freshness.column.casefold() not in names:
        message = f"'{q.freshness.column}' is not a column"
        yield _finding(loaded, ("quality", "freshness", "column"), message, "DC-L015")
    for k, comp in enumerate(q.completeness):
        if comp.column.casefold() not in names:
            message = f"'{comp.column}' is not a column"
            yield _finding(loaded, ("quality", "completeness", k, "column"), message, "DC-L015")
    for k, key_columns in enumerate(q.unique):
        for j, name in enumerate(key_columns):
            if name.casefold() not in names:
                yield _finding(loaded, ("quality", "unique", k, j), f"'{name}' is not a column", "DC-L015")
    volume = q.volume
    if volume and volume.min_rows is not None and volume.max_rows is not None:  # noqa: SIM102
        if volume.min_rows > volume.max_rows:
            message = "min_rows is greater than max_rows"
            yield _finding(loaded, ("quality", "volume", "min_rows"), message, "DC-L004")


def _default_fits(value: object, spark_type: SparkType) -> bool:
    if is_numeric(spark_type):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if is_string(spark_type):
        return isinstance(value, str)
    if render_type(spark_type) == "boolean":
        return isinstance(value, bool)
    return isinstance(value, str)  # dates, timestamps, binary: a literal Spark casts


def as_contract(contract: Contract | str | Path) -> Contract:
    if isinstance(contract, Contract):
        return contract
    """The API's argument as a contract: a Contract as it is, else the contract file at that path, loaded and
    linted (ContractError with every problem)."""
    from delta_contracts.contract.errors import ContractError
    from delta_contracts.contract.load import load_contract

    loaded = load_contract(Path(contract))
    findings: list[Problem] = lint(loaded)
    if findings:
        raise ContractError(findings)
    return loaded.contract
