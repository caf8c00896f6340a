"""The readers gate `apply` asks before a drop: open only on evidence, never by default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from delta_contracts.telemetry.coverage import coverage
from delta_contracts.telemetry.log import retirements, watermarks
from delta_contracts.telemetry.names import Names
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
    names: Names | None = None,
) -> ReadersVerdict:
    """Open when the log covers the whole window `[now - lookback, now]` and nobody read `objects` in it.

    `state_dir` is `<warehouse>/_delta_contracts`. Coverage, for every collected source that is not retired
    (`telemetry retire`; one merely no longer collected could hide readers): it delivered statements from the
    window's start or before, and up to `now - freshness` or later (a log collected days ago says nothing
    about the reads since). Possible readers (texts that name the object but did not parse) count as
    readers, and so do the reads a retired source logged.

    Objects and logged reads are compared under one canonical name (`telemetry.names`): `names` is the
    history of views and tables (by default the ledger's beside the log), each object is resolved at `now`
    and each logged read at its statement's time, so `logistics.shipments.notes` and the physical
    `logistics.shipments__v5.notes` it stands for are one object.
    """
    now = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    since = now - lookback
    names = Names.load(state_dir) if names is None else names
    asked = sorted({o.strip().casefold() for o in objects if o.strip()})
    if not asked:
        return ReadersVerdict(False, ("no objects to check readers of",), {})
    wanted, shown = _canonical_objects(asked, names, now)
    sources = read_delta(sources_path(state_dir))
    if sources is None or sources.num_rows == 0:
        return ReadersVerdict(
            False,
            (f"no telemetry collected: no source watermarks at {sources_path(state_dir)}",),
            {},
        )
    retired = retirements(state_dir)
    reasons = list(coverage(watermarks(state_dir), since, now - freshness, retired).problems)
    log = read_delta(readers_path(state_dir))
    if log is None:
        reasons.append(f"no readers log at {readers_path(state_dir)}")
        return ReadersVerdict(False, tuple(reasons), {})
    found: dict[str, set[str]] = {}
    for row in log.to_pylist():
        when = row["statement_time"]
        if when is None or not since <= when <= now:
            continue
        for logged in names.canonical(str(row["object"]), when) or (str(row["object"]).casefold(),):
            for target in wanted:
                if covers(logged, target):
                    who = f"{row['user'] or 'unknown user'} ({row['client'] or 'unknown client'})"
                    label = shown[target]  # an object and its canonical name are one object
                    found.setdefault(label, set()).add(who if row["kind"] == "read" else f"{who} [possible]")
    readers = {
        label: tuple(sorted(found[label])) for label in dict.fromkeys(shown.values()) if label in found
    }
    for label, seen in readers.items():
        reasons.append(f"{label}: {len(seen)} reader(s) since {since:%Y-%m-%d %H:%M} UTC: {', '.join(seen)}")
    if reasons:
        return ReadersVerdict(False, tuple(reasons), readers)
    listed = ", ".join(dict.fromkeys(shown.values()))
    return ReadersVerdict(True, (f"no readers of {listed} since {since:%Y-%m-%d %H:%M} UTC",), readers)


def _canonical_objects(asked: Sequence[str], names: Names, now: datetime) -> tuple[list[str], dict[str, str]]:
    """The objects to look for (each as asked and under its canonical name now) and how each is named to
    the user: `logistics.shipments__v5.notes (logistics.shipments.notes)`."""
    wanted: list[str] = []
    shown: dict[str, str] = {}
    for obj in asked:
        canonical = [c for c in names.canonical(obj, now) if c != obj]
        label = f"{canonical[0]} ({obj})" if len(canonical) == 1 else obj
        for name in (obj, *canonical):
            if name not in shown:
                wanted.append(name)
                shown[name] = label
    return wanted, shown
