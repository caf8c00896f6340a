"""Located problems: every message a user sees names the file, line, column and field."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum

from delta_contracts.errors import InputError


@dataclass(frozen=True, slots=True, order=True)
class Location:
    path: str
    line: int  # 1-based
    column: int  # 1-based

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"


class Severity(StrEnum):
    ERROR = "error"  # the file cannot be used: YAML syntax or schema violation
    FINDING = "finding"  # a semantic lint finding


@dataclass(frozen=True, slots=True)
class Problem:
    location: Location
    field: str  # dotted contract path, e.g. columns[2].checks.min ("" for the document)
    message: str
    code: str
    severity: Severity = Severity.ERROR

    def __str__(self) -> str:
        where = f"{self.field}: " if self.field else ""
        return f"{self.location}: {where}{self.message}"

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.location.path,
            "line": self.location.line,
            "column": self.location.column,
            "field": self.field,
            "code": self.code,
            "severity": str(self.severity),
            "message": self.message,
        }


class ContractError(InputError):
    """Raised when a file cannot be turned into a contract; carries every problem found."""

    def __init__(self, problems: Iterable[Problem], partial: object = None) -> None:
        self.problems = tuple(problems)
        # The contract read with its invalid fields left out, when that is possible: `lint` checks it too, so
        # that one run reports every problem of a file, not only the first kind.
        self.partial = partial
        super().__init__("\n".join(str(p) for p in self.problems))


def field_path(parts: Iterable[str | int]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def first_line(err: BaseException) -> str:
    """The first non-blank line of an error's message, or its class name when the message is empty."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    return lines[0].strip() if lines else type(err).__name__


def plain(value: object) -> str:
    """A value in a message as a user writes it in YAML or reads it in a query result, never a Python repr
    (`true`, not `True`; `2026-11-01 10:00:00`, not `datetime.datetime(2026, 11, 1, 10, 0)`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {plain(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple | set | frozenset):
        return "[" + ", ".join(plain(v) for v in value) + "]"
    if isinstance(value, str):
        import yaml

        try:
            reads_back = yaml.safe_load(value)
        except yaml.YAMLError:
            reads_back = None
        # quoted only where YAML would read it as something else: '2', 'true', '' stay strings
        return value if reads_back == value else "'" + value.replace("'", "''") + "'"
    return str(value)
