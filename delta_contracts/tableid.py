"""The name of a table or view: `(schema, table)` or `(catalog, schema, table)`, each part unquoted.

One spelling for one idea: a `TableId` is made with `TableId(parts)` or `TableId.parse("schema.table")` and
shown with `str(table)` ("schema.table"), never joined or split by hand. It is a tuple, so that it hashes and
compares equal to the plain tuple of its parts (ids read back from a migration file, the ledger or a
journal are found in the same dicts), serializes to JSON as a list, and unpacks or indexes as before.

The parts are the names themselves, not SQL: a part may hold a space, a backtick or any other character, and
quoting it is sqlglot's job where SQL is built. Only the dotted text form cannot hold a part with a dot, which
is why parsing a name the user typed is the one place that splits.

This module imports nothing of the package but its errors, so that any module may import it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from delta_contracts.errors import InputError


class BadTableIdError(InputError, ValueError):
    """A table id that is not two or three non-empty names (schema.table or catalog.schema.table)."""


def _shown(value: object) -> str:
    return repr(value) if not isinstance(value, str) else f"'{value}'"


class TableId(tuple[str, ...]):
    """A table's name as its parts: `TableId(("sales", "orders"))`, `TableId.parse("main.sales.orders")`."""

    __slots__ = ()

    def __new__(cls, parts: Iterable[str]) -> TableId:
        if isinstance(parts, TableId):
            return parts
        if isinstance(parts, str) or not isinstance(parts, Iterable):
            raise BadTableIdError(
                f"{_shown(parts)} is not a table id: give its parts (schema, table) or use TableId.parse"
            )
        found = tuple(parts)
        if not 2 <= len(found) <= 3 or not all(isinstance(p, str) and p for p in found):
            raise BadTableIdError(
                f"{_shown(found)} is not a table id: it takes two or three non-empty names "
                "(schema, table) or (catalog, schema, table)"
            )
        return super().__new__(cls, found)

    @classmethod
    def parse(cls, text: Any) -> TableId:
        """The id a dotted name spells: "schema.table" or "catalog.schema.table" (unquoted)."""
        if not isinstance(text, str):
            raise BadTableIdError(f"{_shown(text)} is not a table id: expected a name like schema.table")
        parts = text.split(".")
        if not 2 <= len(parts) <= 3 or not all(parts):
            raise BadTableIdError(
                f"'{text}' is not a table id: use schema.table or catalog.schema.table, no part empty"
            )
        return super().__new__(cls, parts)

    def __str__(self) -> str:
        return ".".join(self)

    @property
    def name(self) -> str:
        """The table's own name, the last part."""
        return self[-1]

    @property
    def schema(self) -> str:
        """The schema (database) that holds the table."""
        return self[-2]

    @property
    def catalog(self) -> str | None:
        """The catalog, when the id names one."""
        return self[0] if len(self) == 3 else None
