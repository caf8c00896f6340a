"""Column types that are not Spark types, as located problems: shared by `lint` and by `diff`, which must not
read a typo as a type change (and must not import lint's SQL parser to find one)."""

from __future__ import annotations

from collections.abc import Iterator

from delta_contracts.contract.errors import Problem, Severity, field_path
from delta_contracts.contract.load import LoadedContract
from delta_contracts.contract.types import TypeParseError, parse_type

INVALID_TYPE = "DC-L002"


def invalid_types(loaded: LoadedContract) -> Iterator[Problem]:
    for i, col in enumerate(loaded.contract.columns):
        try:
            parse_type(col.type)
        except TypeParseError as err:
            path = ("columns", i, "type")
            message = f"invalid type '{col.type}': {err.message}"
            where = loaded.source.locate(path)
            yield Problem(where, field_path(path), message, INVALID_TYPE, Severity.FINDING)
