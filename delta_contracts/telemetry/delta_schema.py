"""The logical names of a column-mapped Delta table's physical columns, as its Delta log names them at a time.

With column mapping on (`delta.columnMapping.mode` `name` or `id`), the Parquet files hold each column under
its physical name (`col-<uuid>`), kept in the schema as `delta.columnMapping.physicalName`; a rename changes
the logical name only. A plan that shows physical names is mapped back here, to the logical name the column
had when the statement ran (the last schema committed before it). Plain file reads of the table's log
(commit JSON and, for a log whose early commits were cleaned up, the checkpoint Parquet).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

PHYSICAL = re.compile(r"^col-[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$")
_MAPPING_KEY = "delta.columnMapping.physicalName"

Schemas = tuple[tuple[int, tuple[tuple[str, str], ...]], ...]  # (commit millis, (physical, logical)...)


def is_physical(column: str) -> bool:
    return bool(PHYSICAL.match(column))


def logical_name(location: str, physical: str, at_millis: int | None) -> str | None:
    """The logical name of `physical` in the table at `location` when the statement ran (`at_millis`; the
    newest schema when unknown), or None when the log cannot say (gone, unreadable, not a mapped column)."""
    log = Path(location) / "_delta_log"
    try:
        stamp = log.stat().st_mtime_ns
    except OSError:
        return None
    schemas = _schemas(str(log), stamp)
    before = [m for at, m in schemas if at_millis is None or at <= at_millis]
    for mapping in reversed(before or [m for _, m in schemas[:1]]):
        found = dict(mapping).get(physical)
        if found is not None:
            return found
    return None


@lru_cache(maxsize=64)
def _schemas(log: str, stamp: int) -> Schemas:
    """Every schema the log committed, oldest first; `stamp` (the folder's mtime) renews the cache."""
    folder = Path(log)
    out: list[tuple[int, tuple[tuple[str, str], ...]]] = []
    commits = sorted(folder.glob("*.json"), key=lambda p: p.name)
    if not commits or not commits[0].name.startswith("0" * 20):
        out.extend((0, m) for m in _checkpoint_schemas(folder))
    for commit in commits:
        try:
            lines = commit.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        at: int | None = None
        mapping: tuple[tuple[str, str], ...] | None = None
        for line in lines:
            try:
                action = json.loads(line)
            except json.JSONDecodeError:
                continue
            info = action.get("commitInfo") if isinstance(action, dict) else None
            if isinstance(info, dict):
                when = info.get("inCommitTimestamp") or info.get("timestamp")
                at = when if isinstance(when, int) else at
            meta = action.get("metaData") if isinstance(action, dict) else None
            if isinstance(meta, dict) and isinstance(meta.get("schemaString"), str):
                mapping = _mapping(meta["schemaString"])
        if mapping is not None:
            out.append((at if at is not None else int(commit.stat().st_mtime * 1000), mapping))
    return tuple(out)


def _checkpoint_schemas(folder: Path) -> list[tuple[tuple[str, str], ...]]:
    """The schema in the newest checkpoint (what remains of the log's early commits once cleaned up)."""
    import pyarrow.parquet as pq

    parts = sorted(folder.glob("*.checkpoint*.parquet"), key=lambda p: p.name)
    if not parts:
        return []
    version = parts[-1].name.split(".", 1)[0]
    for part in (p for p in parts if p.name.startswith(version)):
        try:
            table = pq.read_table(part, columns=["metaData"])
        except (OSError, ValueError, KeyError):
            continue
        for meta in table.column("metaData").to_pylist():
            if isinstance(meta, dict) and isinstance(meta.get("schemaString"), str):
                return [_mapping(meta["schemaString"])]
    return []


def _mapping(schema: str) -> tuple[tuple[str, str], ...]:
    try:
        fields = json.loads(schema).get("fields", [])
    except (json.JSONDecodeError, AttributeError):
        return ()
    out = []
    for item in fields:
        metadata = item.get("metadata") if isinstance(item, dict) else None
        physical = metadata.get(_MAPPING_KEY) if isinstance(metadata, dict) else None
        if isinstance(physical, str) and isinstance(item.get("name"), str):
            out.append((physical.casefold(), item["name"].casefold()))
    return tuple(out)
