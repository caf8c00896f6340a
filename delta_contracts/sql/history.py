"""Views created by earlier statements of the same history, carried along in statement-time order (pure).

`CREATE VIEW revenue0 AS SELECT ... FROM lineitem` at 10:00, then `SELECT ... FROM revenue0` at 10:05: the
second statement reads `lineitem`. Extraction of one text already reads through the views created earlier
in that text; across statements the caller carries them:

    history = ViewHistory()
    for when, text in statements_in_time_order:      # or: first collect every `views_changed`
        got = extract(text, history.catalog_at(catalog, when))
        history.record(when, got.views_changed)

A pipeline that extracts each distinct text once, in parallel, can extract without history first, then
`record` the `views_changed` of every statement with its time and pass each statement's `tables_read`
through `expand(tables_read, when, catalog)`: a read of a history view adds what the view read then.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from delta_contracts.sql.extract import Catalog, Extraction, FallbackParser, extract, names_match

_MAX_DEPTH = 16
_NO_TIME = datetime.min.replace(tzinfo=UTC)


@dataclass(slots=True)
class ViewHistory:
    """Every view definition a history made, by the time it was made (None: dropped)."""

    _changes: list[tuple[datetime, int, str, str | None]] = field(default_factory=list)

    def record(self, when: datetime | None, changes: Iterable[tuple[str, str | None]]) -> None:
        """A statement at `when` created (name, SQL) or dropped (name, None) these views, in this order."""
        instant = _instant(when)
        for name, sql in changes:
            self._changes.append((instant, len(self._changes), name.casefold(), sql))
        self._changes.sort(key=lambda change: (change[0], change[1]))

    def __bool__(self) -> bool:
        return bool(self._changes)

    def names(self) -> frozenset[str]:
        return frozenset(change[2] for change in self._changes)

    def views_at(self, when: datetime | None) -> dict[str, str | None]:
        """The views as the history left them at `when` (a statement sees the changes made up to its time);
        a view dropped by then maps to None."""
        instant = _instant(when)
        upto = bisect_right([c[0] for c in self._changes], instant)
        state: dict[str, str | None] = {}
        for _, _, name, sql in self._changes[:upto]:
            state[name] = sql
        return state

    def catalog_at(self, catalog: Catalog, when: datetime | None) -> Catalog:
        """`catalog` with the history's views at `when` (they shadow the catalog's views of the same name)."""
        if not self._changes:
            return catalog
        return catalog.with_views(self.views_at(when))

    def expand(self, tables_read: Sequence[str], when: datetime | None, catalog: Catalog) -> tuple[str, ...]:
        """`tables_read` plus what the history views among them read at `when`, recursively."""
        if not self._changes or not tables_read:
            return tuple(tables_read)
        history_names = [n.split(".") for n in self.names()]
        if not any(names_match(read.split("."), n) for read in tables_read for n in history_names):
            return tuple(tables_read)
        local = self.catalog_at(catalog, when)
        reads = set(tables_read)
        pending = list(tables_read)
        depth = 0
        while pending and depth < _MAX_DEPTH:
            depth += 1
            found: set[str] = set()
            for name in pending:
                view_sql = local.view(name)
                if view_sql is not None:
                    found |= set(extract(view_sql, Catalog(schemas=local.schemas)).tables_read)
            pending = sorted(found - reads)
            reads |= found
        return tuple(sorted(reads))


def extract_history(
    statements: Iterable[tuple[datetime | None, str]],
    catalog: Catalog | None = None,
    *,
    fallback_parser: FallbackParser | None = None,
) -> list[Extraction]:
    """Extraction of every statement of a history, each reading through the views created before it.

    Statements are taken in time order (ties: as given); the results come back in the order given. A text
    is parsed once per state of the history's views.
    """
    catalog = catalog or Catalog()
    items = list(statements)
    order = sorted(range(len(items)), key=lambda i: (_instant(items[i][0]), i))
    history = ViewHistory()
    results: list[Extraction | None] = [None] * len(items)
    cache: dict[tuple[str, int], Extraction] = {}
    epoch = 0
    for index in order:
        when, text = items[index]
        key = (text, epoch)
        got = cache.get(key)
        if got is None:
            got = extract(text, history.catalog_at(catalog, when), fallback_parser=fallback_parser)
            cache[key] = got
        results[index] = got
        if got.views_changed:
            history.record(when, got.views_changed)
            epoch += 1
    return [r if r is not None else Extraction() for r in results]


def _instant(when: datetime | None) -> datetime:
    if when is None:
        return _NO_TIME
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
