"""One name per object, at the time of each read.

A statement names what it reads as its author wrote it: the contract's alias view (`logistics.shipments`),
a compatibility view, or a physical table (`logistics.shipments__v5`), maybe under a name a later migration
renamed. The data it read is a column of a physical table, and which one depends on when it ran: the alias
view served `__v4` until the cutover to `__v5`. The ledger records every view the toolkit (re)defined, every
table it created, renamed or dropped, and when; `Names` replays that history.

The canonical name of an object is the physical table that held the data when it was read, under the name
that table has now (after the renames the ledger records), followed by the column:
`logistics.shipments__v4.notes`. The readers log, the report and the sunset gate all use it, so "readers of
`logistics.shipments.notes`" and "readers of `logistics.shipments__v4.notes`" can no longer disagree.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# Views over views over views: a bound, so a cycle in a broken history cannot loop.
_MAX_DEPTH = 8
_DONE = frozenset({"succeeded", "skipped", "forced", "created"})


@dataclass(frozen=True, slots=True)
class Definition:
    """What a name denoted from `since` on: a table, a view over one table, or nothing (dropped, renamed)."""

    since: datetime
    view_of: str | None = None  # a view: the table it reads; None: a table (or nothing, when `gone`)
    columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # view column -> source columns
    star: bool = False  # `SELECT *`: every source column under its own name
    gone: bool = False

    def sources_of(self, column: str) -> tuple[str, ...] | None:
        """The source columns a view column is computed from; None when the view has no such column."""
        if column in self.columns:
            return self.columns[column]
        return (column,) if self.star else None


@dataclass(frozen=True, slots=True)
class Names:
    history: Mapping[str, tuple[Definition, ...]] = field(default_factory=dict)  # oldest first
    renames: tuple[tuple[datetime, str, str], ...] = ()  # (when, old name, new name), oldest first

    # -- building ------------------------------------------------------------------------------------------
    @classmethod
    def from_ledger(cls, entries: Iterable[Any]) -> Names:
        """From ledger entries (`LedgerEntry` or its dict rows): ops that finished, in time order."""
        events: dict[str, list[Definition]] = {}
        renames: list[tuple[datetime, str, str]] = []
        rows = [_row(e) for e in entries]
        finished = [r for r in rows if r["status"] in _DONE and isinstance(r["ended_at"], datetime)]
        for row in sorted(finished, key=lambda r: _utc(r["ended_at"])):
            when, kind, table = _utc(row["ended_at"]), str(row["op_kind"]), str(row["table"]).casefold()
            if kind == "create_view":
                view = _parse_view(str(row["sql"] or ""))
                if view is not None:
                    events.setdefault(table, []).append(Definition(when, *view))
            elif kind == "create_table":
                if not events.get(table) or events[table][-1].gone or events[table][-1].view_of:
                    events.setdefault(table, []).append(Definition(when))
            elif kind == "rename_table" and row["renamed_from"]:
                old = str(row["renamed_from"]).casefold()
                renames.append((when, old, table))
                events.setdefault(old, []).append(Definition(when, gone=True))
                events.setdefault(table, []).append(Definition(when))
            elif kind == "drop_table":
                events.setdefault(table, []).append(Definition(when, gone=True))
        return cls({k: tuple(v) for k, v in events.items()}, tuple(renames))

    @classmethod
    def load(cls, where: Path | Any) -> Names:
        """From the ledger in a state dir (`<state_dir>/ledger`) or a ledger state table; empty when none."""
        from delta_contracts.state.record import ledger_rows

        try:
            return cls.from_ledger(ledger_rows(where))
        except Exception:  # no ledger yet, or one this reader cannot open: no history to replay
            return cls()

    # -- questions -----------------------------------------------------------------------------------------
    def at(self, name: str, when: datetime | None) -> Definition | None:
        """What `name` denoted at `when` (its latest definition then; before its first, its first: a read
        from before the toolkit recorded anything is counted against the oldest known shape)."""
        defs = self.history.get(name.casefold())
        if not defs:
            return None
        if when is None:
            return defs[-1]
        index = bisect.bisect_right([d.since for d in defs], _utc(when)) - 1
        return defs[max(index, 0)]

    def canonical(self, obj: str, when: datetime | None) -> tuple[str, ...]:
        """The canonical names of what a read of `obj` (`table` or `table.column`) at `when` read: the
        physical table(s) under their current names. Empty when the name served no such column then (the
        statement failed: it read nothing)."""
        table, column = self._split(obj.casefold())
        return tuple(dict.fromkeys(self._resolve(table, column, when, 0)))

    def served_columns(self, name: str) -> tuple[str, ...]:
        """Every column a view ever served (what a statement through it may name, whenever it ran)."""
        out: list[str] = []
        for definition in self.history.get(name.casefold(), ()):
            out.extend(definition.columns)
        return tuple(dict.fromkeys(out))

    def views(self) -> tuple[str, ...]:
        return tuple(n for n, defs in self.history.items() if any(d.view_of for d in defs))

    def via(self, obj: str) -> tuple[str, ...]:
        """The other names under which a statement could have read `obj` at some time: the views that served
        its table (and, for a column, the view columns computed from it) and the table's earlier names."""
        found = [obj.casefold()]
        for _ in range(_MAX_DEPTH):
            before = len(found)
            for known in list(found):
                table, column = self._split(known)
                for _when, old, new in self.renames:
                    if new == table:
                        found.append(old if column is None else f"{old}.{column}")
                for view, defs in self.history.items():
                    for definition in defs:
                        if definition.view_of != table:
                            continue
                        if column is None:
                            found.append(view)
                            continue
                        for served, sources in definition.columns.items():
                            if column in sources:
                                found.append(f"{view}.{served}")
                        if definition.star:
                            found.append(f"{view}.{column}")
            found = list(dict.fromkeys(found))
            if len(found) == before:
                break
        return tuple(found[1:])

    # -- internals -----------------------------------------------------------------------------------------
    def _split(self, obj: str) -> tuple[str, str | None]:
        parent, _, leaf = obj.rpartition(".")
        if obj in self.history or not parent:
            return obj, None
        if parent in self.history or any(parent in (new, old) for _, old, new in self.renames):
            return parent, leaf
        return obj, None

    def _resolve(self, table: str, column: str | None, when: datetime | None, depth: int) -> list[str]:
        definition = self.at(table, when)
        if definition is None or definition.view_of is None or depth >= _MAX_DEPTH:
            current = self._renamed(table, when)
            return [current if column is None else f"{current}.{column}"]
        if column is None:
            return self._resolve(definition.view_of, None, when, depth + 1)
        sources = definition.sources_of(column)
        if sources is None:
            return []
        out: list[str] = []
        for source in sources:
            out.extend(self._resolve(definition.view_of, source, when, depth + 1))
        return out

    def _renamed(self, table: str, when: datetime | None) -> str:
        """The name the table has now: the renames after `when` moved it along."""
        name = table
        for at, old, new in self.renames:
            if (when is None or at > _utc(when)) and old == name:
                name = new
        return name


def _parse_view(sql: str) -> tuple[str | None, dict[str, tuple[str, ...]], bool] | None:
    """(source table, view column -> source columns, star) of `CREATE VIEW v AS SELECT … FROM t`; None for a
    view that does not read exactly one table (the toolkit makes none such)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from delta_contracts.sql.dialect import DIALECT
    from delta_contracts.sql.extract import table_name

    try:
        statement = sqlglot.parse_one(sql, read=DIALECT)
    except (SqlglotError, RecursionError, ValueError):
        return None
    query = statement.expression if isinstance(statement, exp.Create) else None
    if not isinstance(query, exp.Select):
        return None
    tables = [t for t in query.find_all(exp.Table)]
    if len(tables) != 1 or (source := table_name(tables[0])) is None:
        return None
    columns: dict[str, tuple[str, ...]] = {}
    star = False
    for projection in query.expressions:
        if isinstance(projection, exp.Star):
            star = True
            continue
        name = projection.alias_or_name.casefold()
        columns[name] = tuple(dict.fromkeys(c.name.casefold() for c in projection.find_all(exp.Column)))
    return source, columns, star


def _row(entry: Any) -> Mapping[str, Any]:
    if isinstance(entry, Mapping):
        return entry
    keys = ("status", "ended_at", "op_kind", "table", "sql", "renamed_from")
    return {k: getattr(entry, k) for k in keys}


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
