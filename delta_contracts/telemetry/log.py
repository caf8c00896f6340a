"""Appending to the readers log and the source watermarks (delta-rs; each append is one atomic commit)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from delta_contracts.telemetry.store import (
    read_delta,
    readers_path,
    readers_schema,
    sources_path,
    sources_schema,
)


@dataclass(frozen=True, slots=True)
class ReaderRow:
    object: str
    kind: str  # 'read' | 'possible'
    user: str | None
    client: str | None
    statement_id: str
    statement_time: datetime | None
    source: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.source, self.statement_id, self.object, self.kind)


@dataclass(frozen=True, slots=True)
class Watermark:
    source: str
    watermark: datetime | None
    collected_at: datetime
    covered_from: datetime | None
    statements: int
    unparsed: int


def logged_keys(state_dir: Path, source: str) -> set[tuple[str, str, str, str]]:
    """(source, statement_id, object, kind) already in the log for `source`: what a re-run must not add."""
    import pyarrow.compute as pc

    table = read_delta(readers_path(state_dir))
    if table is None:
        return set()
    mine = table.filter(pc.equal(table["source"], source))
    return {
        (source, sid, obj, kind)
        for sid, obj, kind in zip(
            mine["statement_id"].to_pylist(),
            mine["object"].to_pylist(),
            mine["kind"].to_pylist(),
            strict=True,
        )
    }


def append_readers(state_dir: Path, rows: Sequence[ReaderRow], collected_at: datetime) -> int:
    """Append the rows not logged yet; returns how many were appended."""
    import pyarrow as pa
    from deltalake import write_deltalake

    if not rows:
        return 0
    seen: set[tuple[str, str, str, str]] = set()
    for source in {r.source for r in rows}:
        seen |= logged_keys(state_dir, source)
    fresh: list[ReaderRow] = []
    for row in rows:
        if row.key not in seen:
            seen.add(row.key)
            fresh.append(row)
    if not fresh:
        return 0
    data = pa.Table.from_pylist(
        [
            {
                "object": r.object.casefold(),
                "kind": r.kind,
                "user": r.user,
                "client": r.client,
                "statement_id": r.statement_id,
                "statement_time": _utc(r.statement_time),
                "source": r.source,
                "collected_at": _utc(collected_at),
            }
            for r in fresh
        ],
        schema=readers_schema(),
    )
    state_dir.mkdir(parents=True, exist_ok=True)
    write_deltalake(str(readers_path(state_dir)), data, mode="append")
    return len(fresh)


def watermarks(state_dir: Path) -> dict[str, Watermark]:
    """The newest watermark row per source."""
    table = read_delta(sources_path(state_dir))
    out: dict[str, Watermark] = {}
    for row in table.to_pylist() if table is not None else []:
        mark = Watermark(**row)
        if mark.source not in out or mark.collected_at >= out[mark.source].collected_at:
            out[mark.source] = mark
    return out


def record_watermark(state_dir: Path, mark: Watermark) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    row: Mapping[str, object] = {
        "source": mark.source,
        "watermark": _utc(mark.watermark),
        "collected_at": _utc(mark.collected_at),
        "covered_from": _utc(mark.covered_from),
        "statements": mark.statements,
        "unparsed": mark.unparsed,
    }
    ensure_readers_log(state_dir)
    write_deltalake(
        str(sources_path(state_dir)), pa.Table.from_pylist([row], schema=sources_schema()), mode="append"
    )


def ensure_readers_log(state_dir: Path) -> None:
    """An empty log is evidence (nobody read anything); a missing one is not."""
    from deltalake import DeltaTable

    state_dir.mkdir(parents=True, exist_ok=True)
    if not DeltaTable.is_deltatable(str(readers_path(state_dir))):
        DeltaTable.create(str(readers_path(state_dir)), readers_schema(), mode="ignore")


def read_rows(state_dir: Path) -> list[dict[str, object]]:
    table = read_delta(readers_path(state_dir))
    return table.to_pylist() if table is not None else []


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
