"""Typed migration operations: immutable values that know their phase and their conditions.

An op says what must become true of a live table (its postcondition) and what must hold before it may run
(its precondition). Rendering to SQL lives in `render`; running in `engine`.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import ClassVar

from delta_contracts.errors import DeltaContractsError, InputError
from delta_contracts.live import LiveTable
from delta_contracts.marks import (
    DEPRECATED_COLUMNS,
    DEPRECATED_SINCE,
    DEPRECATED_TABLE,
    STAMP_VERSION,
    column_mark_key,
)
from delta_contracts.plan.conditions import (
    AllOf,
    AnyOf,
    CheckAbsent,
    CheckIs,
    ClusteredBy,
    ColumnAbsent,
    ColumnCommentIs,
    ColumnDefaultIs,
    ColumnNullable,
    ColumnPresent,
    ColumnTypeIs,
    Condition,
    IdentityCoversRows,
    NoRowsWhere,
    PropertiesSet,
    RenamedColumnCarried,
    StampedAfter,
    TableAbsent,
    TableCommentIs,
    TableCondition,
    TableExists,
    UnchangedSinceFence,
    ViewDefined,
)
from delta_contracts.tableid import TableId


class Phase(StrEnum):
    EXPAND = "expand"
    POPULATE = "populate"
    CUTOVER = "cutover"
    CONTRACT = "contract"


PHASES = (Phase.EXPAND, Phase.POPULATE, Phase.CUTOVER, Phase.CONTRACT)


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    name: str
    type: str  # canonical Spark type
    nullable: bool = True
    comment: str | None = None
    default: str | None = None  # SQL expression text
    # ("always" | "by_default", start, step) of an identity column; its START is where the values continue
    identity: tuple[str, int, int] | None = None
    generated: str | None = None  # a generated column's expression (SQL text)
    # written to migration files only when set: files from before these fields stay byte for byte
    omitted_when_empty: ClassVar[tuple[str, ...]] = ("identity", "generated")


# Delta refuses to drop or retype a column a CHECK reads (DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE) unless
# this session setting (delta-spark 3.x and 4.x, default true) says not to look.
CHECK_DEPENDENT_EXPRESSIONS = "spark.databricks.delta.alterTable.changeColumn.checkExpressions"


def checks_not_checked() -> tuple[tuple[str, str, str], ...]:
    """The session setting (key, value, default) under which a widening keeps the CHECKs that read its column
    standing through the ALTER COLUMN … TYPE, and a closed column's drop runs while its closing CHECK stands
    (so that no commit can land between the CHECK and the drop: for the instant between the drop and the
    `DropCheck` after it, the CHECK reads a column that is gone and every write fails, and is retried by its
    producer, rather than commit a value the drop would lose). Measured on delta-spark 4.4: a retype then
    runs with the CHECKs standing (int -> bigint, a struct field's int -> bigint, date -> timestamp_ntz), and
    each still refuses a violating row after."""
    return ((CHECK_DEPENDENT_EXPRESSIONS, "false", "true"),)


@dataclass(frozen=True, slots=True)
class Gate:
    """What a destructive op waits for: time since the deprecation mark, and zero readers of `objects`."""

    deprecation_window: str  # ISO-8601 duration
    reader_lookback: str  # ISO-8601 duration
    deprecated_by: str  # the property whose setting commit starts the window
    objects: tuple[str, ...]  # fully qualified table or table.column names

    def describe(self) -> str:
        return (
            f"after {self.deprecation_window} since {self.deprecated_by} was set and zero readers of "
            f"{', '.join(self.objects)} in the last {self.reader_lookback} (or --force --reason)"
        )


class DuplicateOpKindError(DeltaContractsError, TypeError):
    """Two op classes claim the same `kind`: a migration file could not say which one it holds."""


class UnknownOpKindError(InputError, ValueError):
    """A migration file names an op kind no op class registered."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"unknown op kind '{kind}'")
        self.kind = kind


# Every op class by its `kind`, filled as each class is defined (see `Op.__init_subclass__`).
_OPS_BY_KIND: dict[str, type[Op]] = {}


def _define_every_op() -> None:
    """Import every module of the `plan` package, so that ops defined beside the recipe or statement they
    belong to (`catch_up`, `purge`, …) have registered themselves. A new op's module is found without being
    listed anywhere; the modules are pure and most are loaded by the time a kind is looked up."""
    import importlib
    import pkgutil

    import delta_contracts.plan as package

    for module in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
        importlib.import_module(module.name)


def registered_ops() -> Mapping[str, type[Op]]:
    """Every op class, by kind (those defined outside this module included)."""
    _define_every_op()
    return MappingProxyType(_OPS_BY_KIND)


def op_class(kind: str) -> type[Op]:
    if kind not in _OPS_BY_KIND:
        _define_every_op()  # only when the kind's module was not imported yet
    try:
        return _OPS_BY_KIND[kind]
    except KeyError:
        raise UnknownOpKindError(kind) from None


def _register(cls: type[Op]) -> None:
    kind = cls.__dict__.get("kind")
    if kind is None:  # an intermediate base without a kind of its own: nothing a migration file names
        return
    known = _OPS_BY_KIND.get(kind)
    # `@dataclass(slots=True)` builds a second class from the first one's namespace and that one replaces it:
    # it carries the first one's mark. Any other class claiming a known kind is a second op of that kind.
    if known is not None and cls.__dict__.get("_registered_as") is not known:
        raise DuplicateOpKindError(
            f"op kind '{kind}' of {cls.__module__}.{cls.__qualname__} is already the kind of "
            f"{known.__module__}.{known.__qualname__}"
        )
    _OPS_BY_KIND[kind] = cls
    cls._registered_as = cls


_TABLE_ID_FIELDS: dict[type, frozenset[str]] = {}


def table_id_fields(cls: type[Op]) -> frozenset[str]:
    """The fields of an op class that hold a table id (`TableId` or `TableId | None`)."""
    if cls not in _TABLE_ID_FIELDS:
        hints = typing.get_type_hints(cls)
        _TABLE_ID_FIELDS[cls] = frozenset(
            f.name for f in dataclasses.fields(cls) if hints[f.name] in (TableId, TableId | None)
        )
    return _TABLE_ID_FIELDS[cls]


@dataclass(frozen=True, slots=True, kw_only=True)
class Op:
    """The base of every op. A subclass that sets `kind` registers itself under it when it is defined, and
    so becomes an op a migration file can hold (`plan.serialize`); nothing else lists the ops."""

    kind: ClassVar[str] = "op"
    _registered_as: ClassVar[type[Op] | None] = None  # the class registered under `kind` (see `_register`)
    destructive: ClassVar[bool] = False
    # Run again (its postcondition checked) by every apply until the ops after it in its migration finished,
    # though the ledger says it finished: what it catches may arrive after it ran.
    checked_again: ClassVar[bool] = False
    # It updates or replaces rows the table holds (UPDATE, MERGE ... WHEN MATCHED, INSERT OVERWRITE), which
    # Delta refuses on an append-only table (`plan.table_limits`).
    rewrites_rows: ClassVar[bool] = False
    # It adds, retypes or drops a top-level column of a standing table (a stream reading the table stops at
    # it), or changes a field inside one: either changes the columns and types a view over the table froze.
    changes_columns: ClassVar[bool] = False
    changes_fields: ClassVar[bool] = False
    table: TableId
    phase: Phase
    reason: str = ""

    def __post_init__(self) -> None:
        # A table id given as a plain tuple (an op built by hand, or read from a file) becomes a TableId, so
        # that every message and ledger row spells it one way.
        for name in table_id_fields(type(self)):
            value = getattr(self, name)
            if value is not None and type(value) is not TableId:
                object.__setattr__(self, name, TableId(value))

    def postcondition(self) -> Condition | None:
        """What is true once the op has run; None when only running it can make it so (it is idempotent)."""
        return None

    def precondition(self) -> Condition | None:
        return None

    def result_condition(self) -> Condition | None:
        """What the table must show right after the op ran (engines verify it against the Delta log)."""
        return self.postcondition()

    def summary(self) -> str:
        return f"{self.kind} {self.table}"

    def order_columns(self, tables: dict[TableId, list[str]]) -> None:
        """What the op does to the top-level column order of the tables in `tables` (keyed by table id), as
        `plan.column_order` replays a history; most ops leave it."""

    def gated_by(self) -> Gate | None:
        """The gate the op waits at (a contract phase's drop, and what must run in the same run as it), or
        None: every caller asks the op, none its class."""
        return None

    def track_properties(self, tables: dict[TableId, dict[str, str]]) -> None:
        """What the op does to the table properties of the tables in `tables` (keyed by table id), as
        `plan.table_limits` follows a migration; most ops leave them."""

    def creates(self) -> tuple[ColumnSpec, ...] | None:
        """The columns of the table (`table`) the op creates; None when it creates none (a view is none)."""
        return None

    def reverse(self, reason: str) -> Op | None:
        """The op that takes back what this one did to a table no reader or producer was served yet (the new
        table of a discarded migration, of a create that failed); None: dropping that table takes it back."""
        return None

    def undone_by_discard(self) -> bool:
        """Whether `discard` may take the op back by dropping the new table it worked on: the work of the
        expand and populate phases, which nobody sees before the cutover."""
        return self.phase in (Phase.EXPAND, Phase.POPULATE)

    def marks(self, key: str) -> bool:
        """Whether the op sets the deprecation mark `key` (a gate's `deprecated_by`): its first successful
        run starts the gate's window."""
        return False

    def fills(self) -> str | None:
        """The column whose NULLs the op fills (a backfill), or None."""
        return None

    def adds_check(self) -> tuple[str, str] | None:
        """The CHECK constraint the op adds, (name, expression), or None."""
        return None

    def tightening_reads(self) -> frozenset[str] | None:
        """The columns a tightening (a CHECK added, NOT NULL set) reads: a row written with one of them NULL
        may break it (`apply.schedule.held_runs`); None: the op tightens nothing."""
        return None

    def copies_from(self) -> TableId | None:
        """The table the op copies rows from into `table` (a versioned migration's copy or catch-up), or
        None."""
        return None

    def switches_producers(self) -> bool:
        """Whether the op tells producers to write the new version from now on (the stamp)."""
        return False

    def session_settings(self) -> tuple[tuple[str, str, str], ...]:
        """(key, value, default): the Spark session settings the op's statement runs with."""
        return ()

    def file_guards(self, alias: TableId) -> tuple[tuple[str, str], ...]:
        """(why, statement) pairs a `.sql` file's cell runs before the op's statement, each failing on a
        state in which running the statement by hand (again) would do harm (`plan.guards`); `alias`: the
        contract's name."""
        return ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        # Not zero-argument super(): its `__class__` cell is the class `@dataclass(slots=True)` replaced.
        super(Op, cls).__init_subclass__(**kwargs)
        _register(cls)


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTable(Op):
    kind: ClassVar[str] = "create_table"
    columns: tuple[ColumnSpec, ...]
    partitioned_by: tuple[str, ...] = ()
    clustered_by: tuple[str, ...] = ()
    comment: str | None = None
    properties: tuple[tuple[str, str], ...] = ()

    def postcondition(self) -> Condition:
        return TableExists(self.table)

    def summary(self) -> str:
        return f"create table {self.table} ({len(self.columns)} columns)"

    def order_columns(self, tables: dict[TableId, list[str]]) -> None:
        tables[self.table] = [c.name for c in self.columns]

    def track_properties(self, tables: dict[TableId, dict[str, str]]) -> None:
        tables[self.table] = dict(self.properties)

    def creates(self) -> tuple[ColumnSpec, ...]:
        return self.columns

    def reverse(self, reason: str) -> DropTable:
        # Run by the engine itself, never scheduled by `apply`: no gate is evaluated, nobody read the table.
        gate = Gate("P0D", "P0D", "", (str(self.table),))
        return DropTable(table=self.table, phase=self.phase, gate=gate, reason=reason)


@dataclass(frozen=True, slots=True, kw_only=True)
class AddColumn(Op):
    kind: ClassVar[str] = "add_column"
    changes_columns: ClassVar[bool] = True
    column: ColumnSpec  # added nullable and without default: Delta's ADD COLUMNS allows nothing else
    # Where it goes, so that the table's column order is the contract's (a table created from the contract
    # has that order): after the column before it in the contract (`after`), first (`first`), or at the end
    # (neither: the contract's last column, and every migration planned before positions were).
    after: str = ""
    first: bool = False
    omitted_when_empty: ClassVar[tuple[str, ...]] = ("after", "first")

    def postcondition(self) -> Condition:
        return ColumnPresent(self.table, self.column.name)

    def summary(self) -> str:
        return f"add column {self.column.name} {self.column.type}{self.placement()}"

    def placement(self) -> str:
        """Where the column goes, as the summary says it ("" at the end)."""
        if self.first:
            return " first"
        return f" after {self.after}" if self.after else ""

    def order_columns(self, tables: dict[TableId, list[str]]) -> None:
        columns = tables.get(self.table)
        if columns is None:
            return
        folded = [c.casefold() for c in columns]
        if self.first:
            at = 0
        elif self.after and self.after.casefold() in folded:
            at = folded.index(self.after.casefold()) + 1
        else:
            at = len(columns)
        columns.insert(at, self.column.name)


@dataclass(frozen=True, slots=True, kw_only=True)
class SetColumnDefault(Op):
    kind: ClassVar[str] = "set_column_default"
    column: str
    default: str

    def postcondition(self) -> Condition:
        return ColumnDefaultIs(self.table, self.column, self.default)

    def summary(self) -> str:
        return f"set default of {self.column} to {self.default}"


@dataclass(frozen=True, slots=True, kw_only=True)
class DropColumnDefault(Op):
    kind: ClassVar[str] = "drop_column_default"
    column: str

    def postcondition(self) -> Condition:
        return ColumnDefaultIs(self.table, self.column, None)

    def summary(self) -> str:
        return f"drop default of {self.column}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SetColumnComment(Op):
    kind: ClassVar[str] = "set_column_comment"
    column: str
    comment: str

    def postcondition(self) -> Condition:
        return ColumnCommentIs(self.table, self.column, self.comment)

    def summary(self) -> str:
        return f"comment on column {self.column}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SetTableComment(Op):
    kind: ClassVar[str] = "set_table_comment"
    comment: str

    def postcondition(self) -> Condition:
        return TableCommentIs(self.table, self.comment)

    def summary(self) -> str:
        return "comment on table"


@dataclass(frozen=True, slots=True, kw_only=True)
class WidenType(Op):
    kind: ClassVar[str] = "widen_type"
    changes_columns: ClassVar[bool] = True
    column: str
    from_type: str
    to_type: str
    # The CHECKs that read the column and stand through the retype: Delta refuses ALTER COLUMN … TYPE of a
    # column a CHECK reads (DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE) unless told not to check them
    # (`Op.session_settings`); a widening keeps every value, so each still holds, and no CHECK is
    # ever absent. Written to migration files only when set, so files from before stay byte for byte.
    checks_kept: tuple[str, ...] = ()
    omitted_when_empty: ClassVar[tuple[str, ...]] = ("checks_kept",)

    def postcondition(self) -> Condition:
        return ColumnTypeIs(self.table, self.column, self.to_type)

    def summary(self) -> str:
        return f"widen {self.column} {self.from_type} -> {self.to_type}"

    def session_settings(self) -> tuple[tuple[str, str, str], ...]:
        return checks_not_checked() if self.checks_kept else ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SetProperties(Op):
    """Table properties, protocol features included (column mapping, type widening, column defaults)."""

    kind: ClassVar[str] = "set_properties"
    properties: tuple[tuple[str, str], ...]

    def postcondition(self) -> Condition:
        return PropertiesSet(self.table, self.properties)

    def summary(self) -> str:
        return "set " + ", ".join(f"{k}={v}" for k, v in self.properties)

    def track_properties(self, tables: dict[TableId, dict[str, str]]) -> None:
        tables.setdefault(self.table, {}).update(self.properties)


@dataclass(frozen=True, slots=True)
class FeatureAbsent(TableCondition):
    """The table's protocol lists no feature of this name (reader or writer); a gone table has none."""

    table: TableId
    feature: str
    when_absent: ClassVar[bool] = True

    def holds_on(self, live: LiveTable) -> bool:
        listed = (*live.reader_features, *live.writer_features)
        return self.feature.casefold() not in {f.casefold() for f in listed}

    def describe(self) -> str:
        return f"the protocol of {self.table} lists no feature {self.feature}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncIdentity(Op):
    """ALTER TABLE … ALTER COLUMN c SYNC IDENTITY: after rows were copied into a new table with their identity
    values (explicit values leave Delta's high-water mark where it was), the values Delta assigns next
    continue above the largest one the table holds. It runs whenever a row holds a value beyond the mark."""

    kind: ClassVar[str] = "sync_identity"
    column: str

    def postcondition(self) -> Condition:
        return IdentityCoversRows(self.table, self.column)

    def summary(self) -> str:
        return f"continue identity {self.column} above its largest value"


@dataclass(frozen=True, slots=True, kw_only=True)
class DropFeature(Op):
    """ALTER TABLE … DROP FEATURE: takes a table feature out of the protocol, so that readers which lack it
    can read the table again. Delta first removes the feature's traces (for type widening: rewrites the files
    written before a widening and unsets the property); on Delta 4 the history stays readable (checkpoint
    protection), so time travel and running readers keep working."""

    kind: ClassVar[str] = "drop_feature"
    feature: str  # the feature's name in the protocol, e.g. typeWidening

    def postcondition(self) -> Condition:
        # Delta refuses to drop a feature the protocol does not list: a re-run must skip, not fail.
        return FeatureAbsent(self.table, self.feature)

    def summary(self) -> str:
        return f"drop feature {self.feature}"


@dataclass(frozen=True, slots=True)
class MarksSet(TableCondition):
    """The table carries the deprecation marks: each property as set, and a list naming each of its columns
    the table still has; a column dropped since (`UnlistDeprecated` took it out) need not be named, so a
    finished migration applied again finds its mark done instead of listing a gone column again."""

    table: TableId
    properties: tuple[tuple[str, str], ...]

    def holds_on(self, live: LiveTable) -> bool:
        present = {c.name.casefold() for c in live.columns}
        for key, value in self.properties:
            if key != DEPRECATED_COLUMNS:
                if live.properties.get(key) != value:
                    return False
                continue
            try:
                wanted = {str(n).casefold() for n in json.loads(value)}
                have = {str(n).casefold() for n in json.loads(live.properties.get(key) or "[]")}
            except (ValueError, TypeError):
                return False
            if not (wanted & present) <= have:
                return False
        return True

    def describe(self) -> str:
        pairs = ", ".join(f"{k} = {v}" for k, v in self.properties)
        return f"{self.table} has the deprecation marks ({pairs}), of columns it still has"


@dataclass(frozen=True, slots=True, kw_only=True)
class MarkDeprecated(SetProperties):
    """Records in TBLPROPERTIES which columns (or the whole table) are on their way out, and since when."""

    kind: ClassVar[str] = "mark_deprecated"

    @classmethod
    def of(
        cls,
        table: TableId,
        *,
        columns: tuple[str, ...] = (),
        newly: tuple[str, ...] = (),
        window: str | None = None,
        whole_table: bool = False,
        since: str,
        reason: str,
    ) -> MarkDeprecated:
        """`columns`: every column marked (earlier marks included, so none is lost); `newly`: those marked by
        this op, each getting its own mark (since, window), whose setting commit starts its own clock."""
        props: list[tuple[str, str]] = []
        if columns:
            props.append((DEPRECATED_COLUMNS, json.dumps(sorted(columns), ensure_ascii=False)))
        for name in sorted(newly):
            mark = json.dumps({"since": since, "window": window}, ensure_ascii=False, sort_keys=True)
            props.append((column_mark_key(name), mark))
        if whole_table:
            props.append((DEPRECATED_TABLE, "true"))
        props.append((DEPRECATED_SINCE, since))
        return cls(table=table, phase=Phase.CUTOVER, properties=tuple(props), reason=reason)

    def postcondition(self) -> Condition:
        # A retired table may already be gone (its gated drop ran): then there is nothing left to mark.
        marks = MarksSet(self.table, self.properties)
        if (DEPRECATED_TABLE, "true") in self.properties:
            return AnyOf((TableAbsent(self.table), marks))
        return marks

    def summary(self) -> str:
        return "mark deprecated: " + ", ".join(f"{k}={v}" for k, v in self.properties)

    def marks(self, key: str) -> bool:
        return key in dict(self.properties)


@dataclass(frozen=True, slots=True)
class NotListed(TableCondition):
    """The table's deprecation list does not name the column; a gone table lists nothing."""

    table: TableId
    column: str
    when_absent: ClassVar[bool] = True

    def holds_on(self, live: LiveTable) -> bool:
        try:
            listed = json.loads(live.properties.get(DEPRECATED_COLUMNS) or "[]")
        except ValueError:
            return True  # not a list the toolkit wrote: nothing of it to take out
        return not isinstance(listed, list) or self.column.casefold() not in {
            str(n).casefold() for n in listed
        }

    def describe(self) -> str:
        return f"{self.table}: {DEPRECATED_COLUMNS} does not list {self.column}"


@dataclass(frozen=True, slots=True, kw_only=True)
class UnlistDeprecated(SetProperties):
    """The deprecation list without a column just dropped (the list as this migration leaves it), right after
    the drop and only when it ran (the contract ops after a held drop wait). Done once the table's list no
    longer names the column, or once a later migration stamped the table: its cutover set the list as that
    migration planned it (this drop was held meanwhile), and this op's list, planned before, would lose
    columns that later mark added; it is kept as it is."""

    kind: ClassVar[str] = "unlist_deprecated"
    column: str
    version: str = ""  # the migration's contract version; migration files from before lack it

    def postcondition(self) -> Condition:
        unlisted = NotListed(self.table, self.column)
        if not self.version:
            return unlisted
        return AnyOf((unlisted, StampedAfter(self.table, STAMP_VERSION, self.version)))

    def summary(self) -> str:
        return f"unlist deprecated {self.column}: " + ", ".join(f"{k}={v}" for k, v in self.properties)


@dataclass(frozen=True, slots=True, kw_only=True)
class StampContract(SetProperties):
    kind: ClassVar[str] = "stamp_contract"

    def postcondition(self) -> Condition:
        # Never move a stamp backwards: replaying an old migration on a table stamped with a later version
        # skips the old stamp.
        version = dict(self.properties).get(STAMP_VERSION)
        stamped = PropertiesSet(self.table, self.properties)
        if version is None:
            return stamped
        return AnyOf((stamped, StampedAfter(self.table, STAMP_VERSION, version)))

    def summary(self) -> str:
        return "stamp " + ", ".join(f"{k}={v}" for k, v in self.properties)

    def undone_by_discard(self) -> bool:
        # Producers read the stamp to learn which contract version the table is at: once set, it was seen.
        return False

    def switches_producers(self) -> bool:
        return True


@dataclass(frozen=True, slots=True, kw_only=True)
class SetClustering(Op):
    """Liquid clustering keys change in place (ALTER TABLE … CLUSTER BY); new writes use them."""

    kind: ClassVar[str] = "set_clustering"
    columns: tuple[str, ...]

    def postcondition(self) -> Condition:
        return ClusteredBy(self.table, self.columns)

    def summary(self) -> str:
        return f"cluster by {', '.join(self.columns)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class AddCheck(Op):
    """ADD CONSTRAINT … CHECK: scans the table, so it runs only once no row violates it (precondition)."""

    kind: ClassVar[str] = "add_check"
    name: str
    expression: str
    # A bridge: the CHECK that stands while another is swapped (a rule rewritten: added under this name
    # before the old one is dropped; a renamed column's rule over both columns until the contract phase),
    # then dropped once the rule `stands_in_for` holds `final_expression`. Done once that one stands, so a
    # re-run never adds the bridge again (its expression may read a column dropped since).
    stands_in_for: str = ""
    final_expression: str = ""
    omitted_when_empty: ClassVar[tuple[str, ...]] = ("stands_in_for", "final_expression")

    def postcondition(self) -> Condition:
        own = CheckIs(self.table, self.name, self.expression)
        if not self.stands_in_for:
            return own
        return AnyOf((own, CheckIs(self.table, self.stands_in_for, self.final_expression)))

    def result_condition(self) -> Condition:
        return CheckIs(self.table, self.name, self.expression)

    def precondition(self) -> Condition:
        # Delta treats NULL as a violation, so the violating rows are those where the rule is not TRUE.
        return NoRowsWhere(self.table, violation_predicate(self.expression))

    def summary(self) -> str:
        return f"add check {self.name}: {self.expression}"

    def adds_check(self) -> tuple[str, str]:
        return self.name, self.expression

    def tightening_reads(self) -> frozenset[str]:
        from delta_contracts.sql.expressions import referenced_columns

        return frozenset(referenced_columns(self.expression))


def violation_predicate(expression: str) -> str:
    from delta_contracts.sql.expressions import not_true

    return not_true(expression)


@dataclass(frozen=True, slots=True, kw_only=True)
class DropCheck(Op):
    kind: ClassVar[str] = "drop_check"
    name: str
    replaced_by: str | None = None  # the rule's new expression, re-added later in the same migration
    # Columns (and their new types) the rule reads that are retyped between the drop and the re-add.
    retyped: tuple[tuple[str, str], ...] = ()

    def postcondition(self) -> Condition:
        # A rule swapped for a new one is done once the new one is in place (after the retype, for a rule
        # dropped so that its columns can be retyped): dropping it again on a re-run would only make the
        # re-add scan the table a second time.
        absent = CheckAbsent(self.table, self.name)
        if self.replaced_by is None:
            return absent
        done: Condition = CheckIs(self.table, self.name, self.replaced_by)
        if self.retyped:
            retyped = tuple(ColumnTypeIs(self.table, c, t) for c, t in self.retyped)
            done = AllOf((done, *retyped))
        return AnyOf((absent, done))

    def summary(self) -> str:
        return f"drop check {self.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SetNotNull(Op):
    """ALTER COLUMN SET NOT NULL, where the target has it (Databricks); elsewhere the planner adds a CHECK."""

    kind: ClassVar[str] = "set_not_null"
    column: str

    def postcondition(self) -> Condition:
        return ColumnNullable(self.table, self.column, False)

    def precondition(self) -> Condition:
        from delta_contracts.sql.expressions import is_null

        return NoRowsWhere(self.table, is_null(self.column))

    def summary(self) -> str:
        return f"set {self.column} NOT NULL"

    def tightening_reads(self) -> frozenset[str]:
        return frozenset((self.column,))


@dataclass(frozen=True, slots=True, kw_only=True)
class DropNotNull(Op):
    kind: ClassVar[str] = "drop_not_null"
    column: str

    def postcondition(self) -> Condition:
        # Relaxing a deprecated column is moot once the contract phase dropped it.
        return AnyOf((ColumnAbsent(self.table, self.column), ColumnNullable(self.table, self.column, True)))

    def summary(self) -> str:
        return f"drop NOT NULL of {self.column}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Backfill(Op):
    """UPDATE … SET column = expression WHERE column IS NULL: resumable, and a no-op once complete."""

    kind: ClassVar[str] = "backfill"
    rewrites_rows: ClassVar[bool] = True
    column: str
    expression: str

    def postcondition(self) -> Condition:
        from delta_contracts.sql.expressions import backfill_pending, referenced_columns

        # Once a source column is dropped (the contract phase ran) there is nothing left to copy.
        gone = tuple(ColumnAbsent(self.table, c) for c in sorted(referenced_columns(self.expression)))
        return AnyOf((*gone, NoRowsWhere(self.table, backfill_pending(self.column, self.expression))))

    def summary(self) -> str:
        return f"backfill {self.column} = {self.expression}"

    def fills(self) -> str:
        return self.column


@dataclass(frozen=True, slots=True, kw_only=True)
class LastCatchUp(Backfill):
    """The contract phase's last copy of a renamed column, right before the old one is dropped: rows an old
    producer wrote after the cutover carry only the old column. Held by the drop's gate, so that it runs in
    the same run as the drop, not in an earlier one that left the drop held."""

    kind: ClassVar[str] = "last_catch_up"
    checked_again: ClassVar[bool] = True
    gate: Gate

    def gated_by(self) -> Gate:
        return self.gate

    def postcondition(self) -> Condition:
        # Rows with the new column still NULL, and (with a unique key) rows whose old column an upserting
        # old producer updated after the cutover's backfill (`RenamedColumnCarried`).
        done = Backfill.postcondition(self)
        assert isinstance(done, AnyOf)
        *gone, pending = done.conditions
        carried = RenamedColumnCarried(self.table, self.column, self.expression)
        return AnyOf((*gone, AllOf((pending, carried))))

    def summary(self) -> str:
        return f"last catch-up {self.column} = {self.expression}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CopyRows(Op):
    """INSERT OVERWRITE target SELECT …: rerunnable, so a crashed copy is simply repeated."""

    kind: ClassVar[str] = "copy_rows"
    rewrites_rows: ClassVar[bool] = True  # INSERT OVERWRITE, of an empty table too
    source: TableId
    mapping: tuple[tuple[str, str], ...]  # (target column, SQL expression over the source)
    # Rows of the source the target would refuse or that a conversion would lose (a predicate over the
    # source): checked on the rows to be copied, since the new table is still empty.
    rejects: str | None = None
    # What each kind of rejected row breaks, (why, predicate over the source): their OR is `rejects`. Named
    # in the refusal, counted only once the pre-check has failed.
    reasons: tuple[tuple[str, str], ...] = ()
    # (column, predicate over the source): the rows whose value the column's declared `lossy` conversion
    # changes, counted before the copy and reported (apply's output, the ledger).
    lossy: tuple[tuple[str, str], ...] = ()

    def postcondition(self) -> Condition:
        # The copy reruns for as long as its source is a table — the cutover copy exists to catch rows written
        # after the populate copy, and an overwrite is idempotent. Once the source was renamed away or
        # dropped (cutover or contract ran), copying is over.
        return TableAbsent(self.source)

    def precondition(self) -> Condition:
        return copy_precondition(self.source, self.table, self.rejects, self.reasons)

    def result_condition(self) -> Condition:
        # The postcondition (source gone) only becomes true at cutover; right after a copy both tables stand.
        return AllOf((TableExists(self.source), TableExists(self.table)))

    def summary(self) -> str:
        return f"copy rows {self.source} -> {self.table}"

    def copies_from(self) -> TableId:
        return self.source

    def file_guards(self, alias: TableId) -> tuple[tuple[str, str], ...]:
        from delta_contracts.plan.guards import copy_guards

        return copy_guards(self.source, self.table, alias, fence=False)


def copy_precondition(
    source: TableId, target: TableId, rejects: str | None, reasons: tuple[tuple[str, str], ...] = ()
) -> Condition:
    """Both tables stand, and no row of the source is one the target would refuse (`rejects`, whose parts
    `reasons` name), for every op that copies rows from a source table into a new one."""
    tables: tuple[Condition, ...] = (TableExists(source), TableExists(target))
    if rejects is None:
        return AllOf(tables)
    return AllOf((*tables, NoRowsWhere(source, rejects, reasons)))


@dataclass(frozen=True, slots=True, kw_only=True)
class RenameTable(Op):
    kind: ClassVar[str] = "rename_table"
    new_name: TableId

    def postcondition(self) -> Condition:
        # No table left under the old name: renamed already (the name may now be the alias view), or the
        # renamed table has since been dropped by the contract phase. Or the new name is there: renamed,
        # and a producer's create-if-missing write has since made a new table under the old name, which
        # the alias view's op takes back (`engine.spark.name_taken`).
        return AnyOf((TableAbsent(self.table), TableExists(self.new_name)))

    def summary(self) -> str:
        return f"rename table {self.table} -> {self.new_name}"

    def order_columns(self, tables: dict[TableId, list[str]]) -> None:
        if self.table in tables:
            tables[self.new_name] = tables.pop(self.table)

    def track_properties(self, tables: dict[TableId, dict[str, str]]) -> None:
        if self.table in tables:
            tables[self.new_name] = tables.pop(self.table)


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateView(Op):
    """The alias view (or a compatibility view). `table` is the view; `replace_existing` swaps it in place."""

    kind: ClassVar[str] = "create_view"
    source: TableId
    columns: tuple[tuple[str, str], ...] = ()  # (view column, expression); empty: SELECT *
    alter_existing: bool = False  # ALTER VIEW … AS keeps Unity Catalog grants (Databricks)
    # The columns of a later view of this migration that replaces this one (done once that one is in place).
    superseded_by: tuple[tuple[str, str], ...] = ()

    def postcondition(self) -> Condition:
        from delta_contracts.sql.expressions import view_query_text

        defined = ViewDefined(self.table, view_query_text(self.source, self.columns))
        if not self.superseded_by:
            return defined
        later = ViewDefined(self.table, view_query_text(self.source, self.superseded_by))
        return AnyOf((defined, later))

    def summary(self) -> str:
        return f"view {self.table} -> {self.source}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CloseColumn(AddCheck):
    """The CHECK that closes a renamed column's old column to values the new one lacks, right before the
    drop: Delta checks every row when it is added and every commit after, so no old-shape row can land
    between the drop's check and the drop (the drop removes the column while it stands, then `DropCheck`
    removes it). Held by the drop's gate, as the last catch-up before it."""

    kind: ClassVar[str] = "close_column"
    gate: Gate

    def gated_by(self) -> Gate:
        return self.gate

    def postcondition(self) -> Condition:
        from delta_contracts.sql.expressions import referenced_columns

        # Once the old column is dropped the CHECK is gone with it: there is nothing left to close.
        gone = tuple(ColumnAbsent(self.table, c) for c in sorted(referenced_columns(self.expression)))
        return AnyOf((*gone, CheckIs(self.table, self.name, self.expression)))

    def result_condition(self) -> Condition:
        return CheckIs(self.table, self.name, self.expression)

    def summary(self) -> str:
        return f"close the old column: check {self.name}: {self.expression}"


@dataclass(frozen=True, slots=True, kw_only=True)
class DropColumns(Op):
    kind: ClassVar[str] = "drop_columns"
    destructive: ClassVar[bool] = True
    changes_columns: ClassVar[bool] = True
    columns: tuple[str, ...]
    gate: Gate

    def gated_by(self) -> Gate:
        return self.gate

    # (new column, expression over a dropped one) for a renamed column: a row where the new column is NULL
    # and the expression is not would lose its value, so the drop refuses while any is left.
    copies: tuple[tuple[str, str], ...] = ()
    # The CHECKs (`CloseColumn`) that closed the columns to new values: the drop runs while they stand (Delta
    # refuses it unless told not to check them, see `Op.session_settings`), and a `DropCheck` after
    # it removes them. Written to migration files only when set, so files from before stay byte for byte.
    closed_by: tuple[str, ...] = ()
    omitted_when_empty: ClassVar[tuple[str, ...]] = ("closed_by",)

    def postcondition(self) -> Condition:
        return AllOf(tuple(ColumnAbsent(self.table, c) for c in self.columns))

    def precondition(self) -> Condition | None:
        from delta_contracts.sql.expressions import backfill_pending

        if not self.copies:
            return None
        return AllOf(tuple(NoRowsWhere(self.table, backfill_pending(c, e)) for c, e in self.copies))

    def summary(self) -> str:
        return f"drop columns {', '.join(self.columns)}"

    def session_settings(self) -> tuple[tuple[str, str, str], ...]:
        return checks_not_checked() if self.closed_by else ()

    def order_columns(self, tables: dict[TableId, list[str]]) -> None:
        dropped = {c.casefold() for c in self.columns}
        if self.table in tables:
            tables[self.table] = [c for c in tables[self.table] if c.casefold() not in dropped]


@dataclass(frozen=True, slots=True, kw_only=True)
class DropTable(Op):
    kind: ClassVar[str] = "drop_table"
    destructive: ClassVar[bool] = True
    gate: Gate

    def gated_by(self) -> Gate:
        return self.gate

    # An old version's table: its rows the new version lacks (a predicate over this table), which the drop
    # would delete for good, so it refuses while any is left (see `plan.catch_up.left_behind`).
    left_behind: str | None = None

    def postcondition(self) -> Condition:
        return TableAbsent(self.table)

    def order_columns(self, tables: dict[TableId, list[str]]) -> None:
        tables.pop(self.table, None)

    def track_properties(self, tables: dict[TableId, dict[str, str]]) -> None:
        tables.pop(self.table, None)

    def precondition(self) -> Condition | None:
        if self.left_behind is None:
            return None
        # By key (or whole row) against the new table, and by key and value against what the fence carried:
        # a row changed on the old table after the fence is lost by the drop as surely as a row added.
        return AllOf((NoRowsWhere(self.table, self.left_behind), UnchangedSinceFence(self.table)))

    def summary(self) -> str:
        return f"drop table {self.table}"

    def file_guards(self, alias: TableId) -> tuple[tuple[str, str], ...]:
        from delta_contracts.plan.guards import table_guard

        return table_guard(self.table)


@dataclass(frozen=True, slots=True)
class Migration:
    """The ops that take one table from one contract version to the next, in phase order."""

    table: TableId
    from_version: str | None
    to_version: str
    strategy: str  # in_place | versioned
    ops: tuple[Op, ...]
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def phase(self, phase: Phase) -> tuple[Op, ...]:
        return tuple(op for op in self.ops if op.phase is phase)
