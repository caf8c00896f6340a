"""What the readers log can know about a window: each source's span, and the one wording every view uses.

The gate, `telemetry report` (text, JSON, Markdown, HTML), the site and `diff --readers` all say the same
thing from here: an object nobody read is "no readers" only when every source covers the window; otherwise
its readers are unknown before (or after) an instant, never an empty list that reads as "nobody".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from delta_contracts.telemetry.log import Retirement, Watermark


def when(value: datetime | None) -> str:
    return f"{value:%Y-%m-%d %H:%M} UTC" if value is not None else "an unknown time"


@dataclass(frozen=True, slots=True)
class SourceCoverage:
    """One source as last collected: the statements it delivered span `covered_from` to `watermark`."""

    source: str
    covered_from: datetime | None
    watermark: datetime | None
    collected_at: datetime | None = None
    retired: bool = False

    def line(self) -> str:
        if self.watermark is None:
            span = "no statement delivered yet"
        else:
            span = f"statements from {when(self.covered_from)} to {when(self.watermark)}"
        retired = ", retired" if self.retired else ""
        collected = f" (collected {when(self.collected_at)}{retired})" if self.collected_at else ""
        return f"{self.source}: {span}{collected}"

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "covered_from": _iso(self.covered_from),
            "watermark": _iso(self.watermark),
            "collected_at": _iso(self.collected_at),
            "retired": self.retired,
        }


@dataclass(frozen=True, slots=True)
class Coverage:
    """The sources' coverage of the window `[since, now]` (`since` None: no window was asked)."""

    since: datetime | None
    sources: tuple[SourceCoverage, ...]
    problems: tuple[str, ...]  # why the log cannot vouch for the window, one sentence each
    unknown_before: datetime | None  # reads before this instant are unknown (None: the window is covered)
    unknown_after: datetime | None  # reads after this instant are unknown (a source not collected lately)

    @property
    def complete(self) -> bool:
        return not self.problems

    def gap(self) -> str | None:
        """What the log cannot say: "readers unknown before …" (None when it covers the window)."""
        if not self.sources:
            return "readers unknown: no telemetry collected"
        if self.complete:
            return None
        gaps = []
        if self.unknown_before is not None:
            gaps.append(f"unknown before {when(self.unknown_before)}")
        if self.unknown_after is not None:
            gaps.append(f"unknown after {when(self.unknown_after)}")
        return f"readers {' and '.join(gaps) or 'unknown'}"  # none: every source retired, or none delivered

    def no_readers(self) -> str:
        """What a view says of an object with no read in the log."""
        gap = self.gap()
        if gap is None:
            return f"no readers since {when(self.since)}" if self.since is not None else "no readers"
        return gap if not self.sources else f"no reads recorded; {gap}"

    def lines(self) -> list[str]:
        """Each source's span, then what the log cannot say."""
        if not self.sources:
            return ["no telemetry source collected: readers are unknown"]
        return [f"source {s.line()}" for s in self.sources] + list(self.problems)

    def to_json(self) -> dict[str, object]:
        return {
            "since": _iso(self.since),
            "complete": self.complete,
            "unknown_before": _iso(self.unknown_before),
            "unknown_after": _iso(self.unknown_after),
            "sources": [s.to_json() for s in self.sources],
            "problems": list(self.problems),
        }


def coverage(
    marks: Mapping[str, Watermark],
    since: datetime | None,
    fresh_from: datetime | None,
    retired: Mapping[str, Retirement] | None = None,
) -> Coverage:
    """`marks`: each source's newest watermark. A source retired after its last collection no longer has to
    cover anything (collected again, it counts); a window no active source covers is unknown before the
    latest start among them."""
    retired = retired or {}
    sources: list[SourceCoverage] = []
    active: list[SourceCoverage] = []
    for name, mark in sorted(marks.items()):
        gone = name in retired and retired[name].at >= mark.collected_at
        source = SourceCoverage(name, mark.covered_from, mark.watermark, mark.collected_at, gone)
        sources.append(source)
        if not gone:
            active.append(source)
    if sources and not active:
        problem = (
            "every telemetry source is retired: nothing covers the window "
            f"(retired: {', '.join(s.source for s in sources)}); collect a source that sees the reads"
        )
        return Coverage(since, tuple(sources), (problem,), None, None)
    problems: list[str] = []
    before: list[datetime] = []
    after: list[datetime] = []
    for source in active:
        name, start, watermark = source.source, source.covered_from, source.watermark
        if watermark is None:
            problems.append(f"source {name} delivered no statement yet: the log covers nothing")
            before.append(datetime.max.replace(tzinfo=UTC))
            continue
        if fresh_from is not None and watermark < fresh_from:
            problems.append(
                f"stale readers log: source {name} was collected up to {when(watermark)}, "
                f"before {when(fresh_from)} (telemetry.freshness): reads since are unknown"
            )
            after.append(watermark)
        if since is not None and (start is None or start > since):
            problems.append(
                f"source {name} starts at {when(start)}, after the window's start {when(since)}: "
                "earlier reads are unknown"
            )
            before.append(start or watermark)
    never = datetime.max.replace(tzinfo=UTC)
    unknown_before = max(before, default=None)
    return Coverage(
        since,
        tuple(sources),
        tuple(problems),
        None if unknown_before == never else unknown_before,
        min(after, default=None),
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
