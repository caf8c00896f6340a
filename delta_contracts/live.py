"""What a live Delta table looks like, as the engine reads it from the Delta log.

Pure values: the planner's pre/postconditions and drift are evaluated over these, and only the engine layer
knows how to fill them in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# What legacy protocol versions (no feature lists) imply, as the Delta protocol defines them (delta-spark's
# Protocol.implicitlySupportedFeatures; DESCRIBE DETAIL lists them as the table's features).
_WRITER_2 = frozenset({"appendOnly", "invariants"})
_WRITER_3 = _WRITER_2 | {"checkConstraints"}
_WRITER_4 = _WRITER_3 | {"changeDataFeed", "generatedColumns"}
_WRITER_5 = _WRITER_4 | {"columnMapping"}
LEGACY_WRITER_FEATURES: Mapping[int, frozenset[str]] = {
    2: _WRITER_2,
    3: _WRITER_3,
    4: _WRITER_4,
    5: _WRITER_5,
    6: _WRITER_5 | {"identityColumns"},
}
LEGACY_READER_FEATURES: Mapping[int, frozenset[str]] = {2: frozenset({"columnMapping"})}


@dataclass(frozen=True, slots=True)
class LiveColumn:
    name: str
    type: str  # canonical Spark DDL type, e.g. bigint, decimal(12,2), array<string>
    nullable: bool = True
    comment: str | None = None
    default: str | None = None  # SQL expression text Delta stores (CURRENT_DEFAULT)
    # An identity column's ("always" | "by_default", start, step), from `delta.identity.*`
    identity: tuple[str, int, int] | None = None
    # The largest value Delta has assigned (None: it assigned none yet; given values never move it)
    identity_high_water_mark: int | None = None
    generated: str | None = None  # a generated column's expression (`delta.generationExpression`)


@dataclass(frozen=True, slots=True)
class LiveTable:
    name: str
    location: str
    columns: tuple[LiveColumn, ...]
    properties: Mapping[str, str] = field(default_factory=dict)  # without delta.constraints.*
    checks: Mapping[str, str] = field(default_factory=dict)  # constraint name -> expression
    partition_columns: tuple[str, ...] = ()
    clustering_columns: tuple[str, ...] = ()
    min_reader_version: int = 1
    min_writer_version: int = 2
    reader_features: tuple[str, ...] = ()
    writer_features: tuple[str, ...] = ()
    version: int | None = 0  # None: not read (`Engine.describe(..., with_version=False)`)
    comment: str | None = None

    def column(self, name: str) -> LiveColumn | None:
        folded = name.casefold()
        return next((c for c in self.columns if c.name.casefold() == folded), None)

    def check(self, name: str) -> str | None:
        folded = name.casefold()
        return next((expr for n, expr in self.checks.items() if n.casefold() == folded), None)


@dataclass(frozen=True, slots=True)
class Commit:
    """One entry of a table's Delta history."""

    version: int
    operation: str
    timestamp_ms: int
    user_metadata: str | None
    engine_info: str | None
    # What the operation was given, as Delta records it (OPTIMIZE's `isFull`, CLUSTER BY's new columns);
    # values are JSON text, as in DESCRIBE HISTORY.
    parameters: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)


def _json_text(value: Any) -> str:
    # DESCRIBE HISTORY gives every parameter as JSON text; delta-rs parses some (`isFull: True`).
    return value if isinstance(value, str) else json.dumps(value)


def commits_from_history(entries: Iterable[Mapping[str, Any]]) -> list[Commit]:
    """Delta history rows (delta-rs `history()`, or DESCRIBE HISTORY with `timestamp` in epoch milliseconds)
    as commits, oldest first: the one conversion every engine uses."""
    commits = [
        Commit(
            version=int(entry["version"]),
            operation=str(entry.get("operation") or ""),
            timestamp_ms=int(entry.get("timestamp") or 0),
            user_metadata=entry.get("userMetadata"),
            engine_info=entry.get("engineInfo"),
            parameters={str(k): _json_text(v) for k, v in (entry.get("operationParameters") or {}).items()},
        )
        for entry in entries
    ]
    return sorted(commits, key=lambda c: c.version)


def property_set_by(commits: Iterable[Commit], key: str, value: str | None = None) -> int | None:
    """The version of the first commit (oldest first) that set table property `key` (to `value`, when
    given), as its operation parameters record it (SET TBLPROPERTIES: `properties`, JSON text)."""
    for commit in commits:
        raw = commit.parameters.get("properties")
        if not raw:
            continue
        try:
            properties = json.loads(raw)
        except ValueError:
            continue
        found = isinstance(properties, dict) and key in properties
        if found and (value is None or str(properties[key]) == value):
            return commit.version
    return None


def held_until(value: str | None) -> datetime | None:
    """The instant a producer hold's value names (`marks.HOLD`, set by `apply`: engine/spark/hold.py), or
    None when there is none or it cannot be read (a producer then writes: the hold only ever helps a
    statement of `apply` find a gap)."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
