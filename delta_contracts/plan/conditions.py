"""Pre- and postconditions of ops: predicates over live tables, as data.

Metadata conditions are decided from the Delta log alone (`holds`); the data condition `NoRowsWhere` needs a
query, which the engine runs. An op whose postcondition already holds is skipped,
which is what makes a crashed apply safe to resume.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from delta_contracts.live import Commit, LiveTable
from delta_contracts.sql.normalize import same_expression
from delta_contracts.tableid import TableId


class TableCondition(ABC):
    """A metadata condition on one table that decides itself: an op whose pre- or postcondition the conditions
    below cannot say defines one beside it (`plan/ops.py`), and every engine checks it with no change here or
    in the engine (engines read the table a condition names, then call `holds`)."""

    table: TableId
    when_absent: ClassVar[bool] = False  # what it says of a table that does not exist

    @abstractmethod
    def holds_on(self, live: LiveTable) -> bool:
        """Whether it holds of the table as its Delta log describes it."""

    def describe(self) -> str:
        """It in plain words, as a user reads it (a pre-check of `apply --dry-run`, an error): by default the
        first sentence of the class's docstring, naming the table."""
        doc = (type(self).__doc__ or type(self).__name__).strip().split("\n\n")[0]
        sentence = " ".join(doc.split()).split("; ")[0].rstrip(".")
        return f"{self.table}: {sentence[:1].lower()}{sentence[1:]}"


class HistoryCondition(TableCondition):
    """A condition on one table decided from its commits (its Delta history) rather than its state: what an
    op that leaves no trace in the table's metadata did (a rewrite of its files). Engines read the history of
    the table it names and call `holds_in`; of a table that does not exist it says `when_absent`."""

    @abstractmethod
    def holds_in(self, commits: Sequence[Commit]) -> bool:
        """Whether it holds of the table's commits, oldest first."""

    def holds_on(self, live: LiveTable) -> bool:
        # The table's state alone cannot say: read without its history (a status from metadata), it is
        # taken not to hold, so the op is shown pending rather than done.
        return False


@dataclass(frozen=True, slots=True)
class TableExists:
    table: TableId


@dataclass(frozen=True, slots=True)
class TableAbsent:
    table: TableId


@dataclass(frozen=True, slots=True)
class ViewDefined:
    view: TableId
    query: str


@dataclass(frozen=True, slots=True)
class ColumnPresent:
    table: TableId
    column: str


@dataclass(frozen=True, slots=True)
class ColumnAbsent:
    table: TableId
    column: str


@dataclass(frozen=True, slots=True)
class ColumnTypeIs:
    table: TableId
    column: str
    type: str


@dataclass(frozen=True, slots=True)
class ColumnNullable:
    table: TableId
    column: str
    nullable: bool


@dataclass(frozen=True, slots=True)
class ColumnCommentIs:
    table: TableId
    column: str
    comment: str | None


@dataclass(frozen=True, slots=True)
class ColumnDefaultIs:
    table: TableId
    column: str
    default: str | None


@dataclass(frozen=True, slots=True)
class CheckIs:
    table: TableId
    name: str
    expression: str


@dataclass(frozen=True, slots=True)
class CheckAbsent:
    table: TableId
    name: str


@dataclass(frozen=True, slots=True)
class PropertiesSet:
    table: TableId
    properties: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ClusteredBy:
    """The table's liquid clustering keys are exactly these, in this order."""

    table: TableId
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TableCommentIs:
    table: TableId
    comment: str | None


@dataclass(frozen=True, slots=True)
class StampedAfter:
    """The table carries a contract stamp (`key`) of a semantic version strictly above `version`."""

    table: TableId
    key: str
    version: str


@dataclass(frozen=True, slots=True)
class NoRowsWhere:
    """Data condition: `SELECT count(*) FROM table WHERE predicate` is 0. `parts`, when given, say what the
    rows break: (why, predicate) pairs whose OR is `predicate`, counted one by one only when it fails."""

    table: TableId
    predicate: str
    parts: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class IdentityCoversRows:
    """Data condition: no value of the identity column lies beyond Delta's high-water mark (above it for a
    positive step), so the next value Delta assigns is one no row holds."""

    table: TableId
    column: str


@dataclass(frozen=True, slots=True)
class UnchangedSinceFence:
    """Data condition on an old version's table: its rows, compared by every column it has, are those of
    the version the cutover's fence carried into the new table (the commit that set `marks.FENCED_INTO`);
    holds of a table no fence marked."""

    table: TableId


@dataclass(frozen=True, slots=True)
class RenamedColumnCarried:
    """Data condition of an in-place rename's last catch-up: no key's new `column` still holds what it held
    at the old column's deprecation mark while the old column (`expression`) now says otherwise (an old
    producer's update since the cutover's backfill); holds of a table with no unique key in its stamp, or no
    mark."""

    table: TableId
    column: str
    expression: str


@dataclass(frozen=True, slots=True)
class AllOf:
    conditions: tuple[Condition, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    """Holds when one of its conditions holds; evaluated in order, so cheap metadata checks go first."""

    conditions: tuple[Condition, ...]


Condition = (
    TableExists
    | TableAbsent
    | ViewDefined
    | ColumnPresent
    | ColumnAbsent
    | ColumnTypeIs
    | ColumnNullable
    | ColumnCommentIs
    | ColumnDefaultIs
    | CheckIs
    | CheckAbsent
    | PropertiesSet
    | TableCondition
    | ClusteredBy
    | TableCommentIs
    | StampedAfter
    | NoRowsWhere
    | IdentityCoversRows
    | UnchangedSinceFence
    | RenamedColumnCarried
    | AllOf
    | AnyOf
)


def _quoted(text: str) -> str:
    """A text as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def describe(condition: Condition) -> str:
    """The condition in plain words (a data condition with its SQL predicate): what a user is shown, never
    the dataclass's repr."""
    match condition:
        case AllOf(conditions):
            return ", and ".join(_part(c) for c in conditions)
        case AnyOf(conditions):
            return " or ".join(_part(c) for c in conditions)
        case TableCondition():
            return condition.describe()
        case TableExists(table):
            return f"table {table} exists"
        case TableAbsent(table):
            return f"no table {table} (gone, or a view by now)"
        case ViewDefined(view, query):
            return f"view {view} is defined as {query}"
        case NoRowsWhere(table, predicate):
            return f"no row of {table} where {predicate}"
        case IdentityCoversRows(table, name):
            return f"no value of the identity column {name} of {table} lies beyond its high-water mark"
        case RenamedColumnCarried(table, name, expression):
            return (
                f"no key of {table} whose {name} was left behind by an update of {expression} since the "
                "old column was marked deprecated"
            )
        case UnchangedSinceFence(table):
            return f"no row of {table} changed, added or deleted since the cutover's fence read it"
    column = f"column {getattr(condition, 'column', '')} of {condition.table}"
    match condition:
        case ColumnPresent(table, name):
            return f"{table} has a column {name}"
        case ColumnAbsent(table, name):
            return f"{table} has no column {name}"
        case ColumnTypeIs(_, _, type_):
            return f"{column} has type {type_}"
        case ColumnNullable(_, _, nullable):
            return f"{column} is {'nullable' if nullable else 'NOT NULL'}"
        case ColumnCommentIs(_, _, comment):
            return f"{column} has the comment {_quoted(comment)}" if comment else f"{column} has no comment"
        case ColumnDefaultIs(_, _, default):
            return f"{column} has DEFAULT {default}" if default is not None else f"{column} has no default"
        case CheckIs(table, name, expression):
            return f"{table} has CHECK {name} ({expression})"
        case CheckAbsent(table, name):
            return f"{table} has no CHECK {name}"
        case PropertiesSet(table, properties):
            pairs = ", ".join(f"{_quoted(k)} = {_quoted(v)}" for k, v in properties)
            return f"{table} has TBLPROPERTIES ({pairs})"
        case ClusteredBy(table, columns):
            return (
                f"{table} is clustered by ({', '.join(columns)})" if columns else f"{table} is not clustered"
            )
        case TableCommentIs(table, comment):
            return (
                f"table {table} has the comment {_quoted(comment)}" if comment else f"{table} has no comment"
            )
        case StampedAfter(table, key, version):
            return f"{table} is stamped ({key}) with a version above {version}"
    raise TypeError(f"no words for the condition kind {type(condition).__name__}")


def _part(condition: Condition) -> str:
    """A part of AllOf/AnyOf, in parentheses when it is a group itself."""
    text = describe(condition)
    return f"({text})" if isinstance(condition, AllOf | AnyOf) else text


def holds(condition: Condition, tables: Mapping[TableId, LiveTable], views: Mapping[TableId, str]) -> bool:
    """Decide a metadata condition from the live tables and views (keyed by table id)."""
    match condition:
        case AllOf(conditions):
            return all(holds(c, tables, views) for c in conditions)
        case AnyOf(conditions):
            return any(holds(c, tables, views) for c in conditions)
        case TableExists(table):
            return table in tables
        case TableAbsent(table):
            return table not in tables  # a view of that name is not the table (the alias after a rename)
        case ViewDefined(view, query):
            return view in views and same_expression(views[view], query)
        case NoRowsWhere() | IdentityCoversRows():
            raise ValueError(f"{condition} needs a query: the engine evaluates it")
    live = tables.get(condition.table)
    if isinstance(condition, TableCondition):
        return condition.when_absent if live is None else condition.holds_on(live)
    if live is None:
        return isinstance(condition, ColumnAbsent | CheckAbsent)
    match condition:
        case ColumnPresent(_, column):
            return live.column(column) is not None
        case ColumnAbsent(_, column):
            return live.column(column) is None
        case ColumnTypeIs(_, column, type_):
            col = live.column(column)
            return col is not None and col.type == type_
        case ColumnNullable(_, column, nullable):
            col = live.column(column)
            return col is not None and col.nullable == nullable
        case ColumnCommentIs(_, column, comment):
            col = live.column(column)
            return col is not None and (col.comment or None) == (comment or None)
        case ColumnDefaultIs(_, column, default):
            col = live.column(column)
            if col is None:
                return False
            if col.default is None or default is None:
                return col.default is None and default is None
            return same_expression(col.default, default)
        case CheckIs(_, name, expression):
            found = live.check(name)
            return found is not None and same_expression(found, expression)
        case CheckAbsent(_, name):
            return live.check(name) is None
        case PropertiesSet(_, properties):
            return all(_property_holds(live, k, v) for k, v in properties)
        case ClusteredBy(_, columns):
            return [c.casefold() for c in live.clustering_columns] == [c.casefold() for c in columns]
        case TableCommentIs(_, comment):
            return (live.comment or None) == (comment or None)
        case StampedAfter(_, key, version):
            return _newer(live.properties.get(key), version)
    raise TypeError(f"unknown condition {condition!r}")


def _newer(stamped: str | None, version: str) -> bool:
    from delta_contracts.contract.model import semver_tuple

    try:
        return stamped is not None and semver_tuple(stamped) > semver_tuple(version)
    except ValueError:
        return False  # a stamp that is no version is not newer: the op runs and fixes it


# Protocol versions are set like properties but live in the protocol, where a higher version also satisfies.
_PROTOCOL_KEYS = {
    "delta.minReaderVersion": "min_reader_version",
    "delta.minWriterVersion": "min_writer_version",
}


# `delta.feature.<name> = supported` is no property at all once committed: Delta moves it into the protocol's
# features and never keeps it in the metadata (delta-spark OptimisticTransaction.scala, "Table features Part
# 2"; actions.scala asserts no `delta.feature.` key remains in the configuration).
FEATURE_PREFIX = "delta.feature."


def _property_holds(live: LiveTable, key: str, value: str) -> bool:
    if key in _PROTOCOL_KEYS:
        return value.isdigit() and int(getattr(live, _PROTOCOL_KEYS[key])) >= int(value)
    if key.startswith(FEATURE_PREFIX) and value in ("supported", "enabled"):
        name = key.removeprefix(FEATURE_PREFIX).casefold()
        features = {f.casefold() for f in (*live.reader_features, *live.writer_features)}
        return name in features or live.properties.get(key) == value
    return live.properties.get(key) == value
