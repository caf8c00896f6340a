"""Appending to the readers log and the source watermarks (delta-rs; each append is one atomic commit)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from delta_contracts.errors import InputError
from delta_contracts.telemetry.names import Names
from delta_contracts.telemetry.store import (
    STATEMENT_CHARS,
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
    statement: str | None = None  # its text, when the source has one

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


def append_readers(
    state_dir: Path, rows: Sequence[ReaderRow], collected_at: datetime, names: Names | None = None
) -> int:
    """Append the rows not logged yet, each under the canonical name of what it read at its statement's
    time (`names`: by default the history of the ledger beside the log); returns how many were appended."""
    return len(append_reader_rows(state_dir, rows, collected_at, names))


def append_reader_rows(
    state_dir: Path, rows: Sequence[ReaderRow], collected_at: datetime, names: Names | None = None
) -> list[ReaderRow]:
    """`append_readers`, returning the rows appended (as logged: under their canonical names)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    if not rows:
        return []
    rows = canonical_rows(rows, Names.load(state_dir) if names is None else names)
    seen: set[tuple[str, str, str, str]] = set()
    for source in {r.source for r in rows}:
        seen |= logged_keys(state_dir, source)
    fresh: list[ReaderRow] = []
    for row in rows:
        if row.key not in seen:
            seen.add(row.key)
            fresh.append(row)
    if not fresh:
        return []
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
                "statement": r.statement[:STATEMENT_CHARS] if r.statement else None,
            }
            for r in fresh
        ],
        schema=readers_schema(),
    )
    state_dir.mkdir(parents=True, exist_ok=True)
    # "merge": a log written before a column was added gains it (null in its older rows).
    write_deltalake(str(readers_path(state_dir)), data, mode="append", schema_mode="merge")
    return fresh


def canonical_rows(rows: Sequence[ReaderRow], names: Names) -> list[ReaderRow]:
    """Each row under the canonical name(s) of what it read then; a read of a view column the view did not
    serve at the time read nothing (the statement failed) and is dropped."""
    out: list[ReaderRow] = []
    for row in rows:
        for name in names.canonical(row.object, row.statement_time):
            out.append(row if name == row.object else replace(row, object=name))
    return out


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


RETIRED = "telemetry_retired"


class RetireError(InputError, ValueError):
    """A retirement that cannot be recorded: no reason given, or a source never collected."""


@dataclass(frozen=True, slots=True)
class Retirement:
    """A source nobody will collect again (a one-off export, a decommissioned cluster), said so on purpose."""

    source: str
    at: datetime
    reason: str
    user: str


def retired_path(state_dir: Path) -> Path:
    return state_dir / RETIRED


def retire_source(state_dir: Path, source: str, reason: str, user: str, at: datetime) -> Retirement:
    """Record that `source` is retired: the gate stops asking it to be fresh and to cover the window (its
    logged reads still count). Collecting it again later brings it back. One atomic delta-rs append."""
    import pyarrow as pa
    from deltalake import write_deltalake

    if not reason.strip():
        raise RetireError("a retirement needs a reason (it is recorded)")
    known = watermarks(state_dir)
    if source not in known:
        listed = ", ".join(sorted(known)) or "none"
        raise RetireError(f"no source {source!r} was ever collected (collected: {listed})")
    ts = pa.timestamp("us", tz="UTC")
    schema = pa.schema(
        [("source", pa.string()), ("retired_at", ts), ("reason", pa.string()), ("user", pa.string())]
    )
    row = {"source": source, "retired_at": _utc(at), "reason": reason.strip(), "user": user}
    write_deltalake(str(retired_path(state_dir)), pa.Table.from_pylist([row], schema=schema), mode="append")
    return Retirement(source, _utc(at) or at, reason.strip(), user)


def retirements(state_dir: Path) -> dict[str, Retirement]:
    """The newest retirement per source."""
    table = read_delta(retired_path(state_dir))
    out: dict[str, Retirement] = {}
    for row in table.to_pylist() if table is not None else []:
        mark = Retirement(row["source"], row["retired_at"], row["reason"], row["user"])
        if mark.source not in out or mark.at >= out[mark.source].at:
            out[mark.source] = mark
    return out
