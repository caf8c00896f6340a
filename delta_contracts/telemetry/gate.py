"""The readers gate `apply` asks before a drop: open only on evidence, never by default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from delta_contracts.telemetry.store import read_delta, readers_path, sources_path

# How recent a source's watermark must be, unless `contracts.yml` says otherwise (`telemetry.freshness`).
DEFAULT_FRESHNESS = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class ReadersVerdict:
    open: bool
    reasons: tuple[str, ...]
    # object -> its readers in the window ("user (client)"; possible readers end with " [possible]")
    readers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def covers(logged: str, wanted: str) -> bool:
    """A logged read of `logged` is a read of `wanted`: the object itself, or a column of a wanted table."""
    return logged == wanted or logged.startswith(wanted + ".")


def readers_gate(
    state_dir: Path,
    objects: Sequence[str],
    lookback: timedelta,
    now: datetime,
    freshness: timedelta = DEFAULT_FRESHNESS,
) -> ReadersVerdict:
    """Open when the log covers the whole window `[now - lookback, now]` and nobody read `objects` in it.

    `state_dir` is `<warehouse>/_delta_contracts`. Coverage, for every collected source (one no longer
    collected could hide readers): it delivered statements from the window's start or before, and up to
    `now - freshness` or later (a log collected days ago says nothing about the reads since). Possible
    readers (texts that name the object but did not parse) count as readers.
    """
    now = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    since = now - lookback
    wanted = sorted({o.strip().casefold() for o in objects if o.strip()})
    if not wanted:
        return ReadersVerdict(False, ("no objects to check readers of",), {})
    sources = read_delta(sources_path(state_dir))
    if sources is None or sources.num_rows == 0:
        return ReadersVerdict(
            False,
            (f"no telemetry collected: no source watermarks at {sources_path(state_dir)}",),
            {},
        )
    reasons = _coverage_problems(sources.to_pylist(), since, now - freshness)
    log = read_delta(readers_path(state_dir))
    if log is None:
        reasons.append(f"no readers log at {readers_path(state_dir)}")
        return ReadersVerdict(False, tuple(reasons), {})
    found: dict[str, set[str]] = {}
    for row in log.to_pylist():
        when = row["statement_time"]
        logged = str(row["object"]).casefold()
        if when is None or not since <= when <= now:
            continue
        for target in wanted:
            if covers(logged, target):
                who = f"{row['user'] or 'unknown user'} ({row['client'] or 'unknown client'})"
                found.setdefault(target, set()).add(who if row["kind"] == "read" else f"{who} [possible]")
    readers = {target: tuple(sorted(found[target])) for target in wanted if target in found}
    for target, names in readers.items():
        reasons.append(
            f"{target}: {len(names)} reader(s) since {since:%Y-%m-%d %H:%M} UTC: {', '.join(names)}"
        )
    if reasons:
        return ReadersVerdict(False, tuple(reasons), readers)
    return ReadersVerdict(
        True, (f"no readers of {', '.join(wanted)} since {since:%Y-%m-%d %H:%M} UTC",), readers
    )


def _coverage_problems(sources: list[dict[str, object]], since: datetime, fresh_from: datetime) -> list[str]:
    latest: dict[str, dict[str, object]] = {}
    for row in sources:  # one row per collection; the newest per source counts
        name = str(row["source"])
        if name not in latest or _time(row, "collected_at") >= _time(latest[name], "collected_at"):
            latest[name] = row
    problems = []
    for name, row in sorted(latest.items()):
        watermark, start = row["watermark"], row.get("covered_from")
        if not isinstance(watermark, datetime):
            problems.append(f"source {name} delivered no statement yet: the log covers nothing")
            continue
        if watermark < fresh_from:
            problems.append(
                f"stale readers log: source {name} was collected up to {watermark:%Y-%m-%d %H:%M} UTC, "
                f"before {fresh_from:%Y-%m-%d %H:%M} UTC (telemetry.freshness): reads since are unknown"
            )
        if not isinstance(start, datetime) or start > since:
            began = f"{start:%Y-%m-%d %H:%M} UTC" if isinstance(start, datetime) else "an unknown time"
            problems.append(
                f"source {name} starts at {began}, after the window's start {since:%Y-%m-%d %H:%M} UTC: "
                "earlier reads are unknown"
            )
    return problems


def _time(row: Mapping[str, object], key: str) -> datetime:
    value = row.get(key)
    return value if isinstance(value, datetime) else datetime.min.replace(tzinfo=UTC)
