"""Which watched objects a statement reads (pure): its table and column reads against the deprecated names."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from delta_contracts.sql.extract import names_match


@dataclass(frozen=True, slots=True)
class Targets:
    """The watched objects split into tables and columns, and where known tables live (path reads)."""

    tables: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]  # (table, column)
    locations: Mapping[str, str] = field(default_factory=dict)  # storage path -> table name

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
        return cls(tuple(table_objects), tuple(column_objects), dict(locations))


def _resolve(name: str, locations: Mapping[str, str]) -> str:
    if name.endswith("`") and ".`" in name:  # delta.`/path`
        path = name.split(".`", 1)[1][:-1].removeprefix("file:").rstrip("/")
        return locations.get(path, name)
    return name


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


def possible_in_text(text: str, targets: Targets) -> list[str]:
    """Watched objects a text that did not parse names: the table's name, and for a column also the column."""
    words = {w.casefold() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_$]*", text)}
    found = [t for t in targets.tables if t.rsplit(".", 1)[-1] in words]
    found += [f"{t}.{c}" for t, c in targets.columns if t.rsplit(".", 1)[-1] in words and c in words]
    return found
