"""Which watched objects a statement reads (pure): its table and column reads against the deprecated names."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from delta_contracts.sql.extract import names_match
from delta_contracts.sql.names import path_key, path_of

# A column entry `<table>.*`: the statement read the table's columns, which ones is not known.
SOME_COLUMNS = "*"


@dataclass(frozen=True, slots=True)
class Targets:
    """The watched objects split into tables and columns, and where known tables live (path reads)."""

    tables: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]  # (table, column)
    locations: Mapping[str, str] = field(default_factory=dict)  # `path_key` of a location -> table name

    @classmethod
    def of(cls, objects: Iterable[str], known_tables: Iterable[str], locations: Mapping[str, str]) -> Targets:
        tables = {t.casefold() for t in known_tables}
        table_objects, column_objects = [], []
        for obj in objects:
            parent, _, leaf = obj.casefold().rpartition(".")
            if parent and parent in tables:
                column_objects.append((parent, leaf))
            else:
                table_objects.append(obj.casefold())
        keyed = {path_key(path): table for path, table in locations.items()}
        return cls(tuple(table_objects), tuple(column_objects), keyed)


def _resolve(name: str, locations: Mapping[str, str]) -> str:
    """A path read (``delta.`file:///p` ``, a bare path) as the name of the table at that location."""
    path = path_of(name)
    return name if path is None else locations.get(path, name)


def reads_of(tables_read: Iterable[str], columns_read: Iterable[str], targets: Targets) -> list[str]:
    """The watched objects these reads touch."""
    found: list[str] = []
    reads = [_resolve(t, targets.locations).split(".") for t in tables_read]
    for table in targets.tables:
        parts = table.split(".")
        if any(names_match(parts, r) for r in reads):
            found.append(table)
    for table, column in targets.columns:
        parts = table.split(".")
        for read in columns_read:
            owner, _, name = read.casefold().rpartition(".")
            if name == column and names_match(parts, _resolve(owner, targets.locations).split(".")):
                found.append(f"{table}.{column}")
                break
    return found


def possible_reads(
    tables_read: Iterable[str], columns_read: Iterable[str], targets: Targets, found: Iterable[str] = ()
) -> list[str]:
    """The watched columns a statement may have read: it reads their table, but which columns is unknown
    (`<table>.*`: a plan answered from the Delta log's statistics, a physical column name the table's log
    cannot map; or no column known at all: a table-lineage row, a statement whose columns could not be
    resolved). Never none: a gate must stay shut on it. A statement that knows some columns and reads a
    table only under a view whose columns it knows (the alias view) read those."""
    seen = set(found)
    reads = [_resolve(t, targets.locations).split(".") for t in tables_read]
    owners: list[tuple[list[str], bool]] = []  # (table, whether its columns are unknown)
    for read in columns_read:
        owner, _, name = read.casefold().rpartition(".")
        owners.append((_resolve(owner, targets.locations).split("."), name == SOME_COLUMNS))
    out: list[str] = []
    for table, column in targets.columns:
        obj = f"{table}.{column}"
        parts = table.split(".")
        if obj in seen or not any(names_match(parts, r) for r in reads + [o for o, _ in owners]):
            continue
        if not owners or any(unknown for owner, unknown in owners if names_match(parts, owner)):
            out.append(obj)
    return out


def possible_in_text(text: str, targets: Targets) -> list[str]:
    """Watched objects a text that did not parse names: the table's name, and for a column also the column."""
    words = {w.casefold() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_$]*", text)}
    found = [t for t in targets.tables if t.rsplit(".", 1)[-1] in words]
    found += [f"{t}.{c}" for t, c in targets.columns if t.rsplit(".", 1)[-1] in words and c in words]
    return found
