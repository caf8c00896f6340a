"""Who reads each deprecated object, from the readers log (pure over the log's rows)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from delta_contracts.telemetry.coverage import Coverage
from delta_contracts.telemetry.gate import covers
from delta_contracts.telemetry.names import Names

SAMPLES = 3
SAMPLE_CHARS = 160  # a sample statement's text, shortened to one line of a report


@dataclass(frozen=True, slots=True)
class Reader:
    user: str
    client: str
    reads: int  # distinct statements
    possible: int  # of which did not parse but name the object
    first: datetime | None
    last: datetime | None
    samples: tuple[str, ...]  # the ids of its latest statements, newest first
    declared: bool  # listed among the contract's consumers
    texts: tuple[str, ...] = ()  # the samples' texts ("" where the source or an older log has none)

    def examples(self) -> list[str]:
        """Its sample statements as shown: the text on one line (shortened), then the id."""
        out = []
        for index, sid in enumerate(self.samples):
            text = " ".join(self.texts[index].split()) if index < len(self.texts) else ""
            if len(text) > SAMPLE_CHARS:
                text = text[: SAMPLE_CHARS - 1] + "…"
            out.append(f'"{text}" ({sid})' if text else sid)
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "user": self.user,
            "client": self.client,
            "reads": self.reads,
            "possible": self.possible,
            "first": _iso(self.first),
            "last": _iso(self.last),
            "sample_statement_ids": list(self.samples),
            "sample_statements": [
                {"id": sid, "text": self.texts[i] if i < len(self.texts) and self.texts[i] else None}
                for i, sid in enumerate(self.samples)
            ],
            "declared_consumer": self.declared,
        }


@dataclass(frozen=True, slots=True)
class ObjectReport:
    name: str
    readers: tuple[Reader, ...]
    daily: Mapping[str, Mapping[str, int]]  # day (YYYY-MM-DD) -> reader label -> statements
    coverage: Coverage | None = None  # what the log can know of the window (None: not asked)

    @property
    def gap(self) -> str | None:
        """What the log cannot say about this object's readers (a source younger than the window, …)."""
        return self.coverage.gap() if self.coverage is not None else None

    @property
    def no_readers(self) -> str:
        """The sentence for an object without readers: "no readers" only when the log covers the window."""
        return self.coverage.no_readers() if self.coverage is not None else "no reads in the log"

    @property
    def reads(self) -> int:
        return sum(r.reads for r in self.readers)

    @property
    def possible(self) -> int:
        return sum(r.possible for r in self.readers)

    @property
    def first(self) -> datetime | None:
        return min((r.first for r in self.readers if r.first), default=None)

    @property
    def last(self) -> datetime | None:
        return max((r.last for r in self.readers if r.last), default=None)

    @property
    def unknown(self) -> tuple[Reader, ...]:
        return tuple(r for r in self.readers if not r.declared)

    def to_json(self) -> dict[str, object]:
        return {
            "object": self.name,
            "reads": self.reads,
            "possible_reads": self.possible,
            "first_read": _iso(self.first),
            "last_read": _iso(self.last),
            "readers": [r.to_json() for r in self.readers],
            "unknown_readers": [f"{r.user} ({r.client})" for r in self.unknown],
            "reads_per_day": {day: dict(v) for day, v in sorted(self.daily.items())},
            "verdict": self.no_readers if not self.readers else self.gap,
            "coverage": self.coverage.to_json() if self.coverage is not None else None,
        }


def label(user: str, client: str) -> str:
    return f"{user} ({client})"


def build_report(
    rows: Iterable[Mapping[str, object]],
    objects: Sequence[str],
    consumers: Mapping[str, Sequence[str]],
    since: datetime | None = None,
    coverage: Coverage | None = None,
) -> list[ObjectReport]:
    """One report per object in `objects` (all logged objects when empty), readers sorted by reads;
    `coverage`: what the log can know of the window, said by every view."""
    rows = [r for r in rows if since is None or _when(r) is None or _when(r) >= since]  # type: ignore[operator]
    wanted = [o.casefold() for o in objects] or sorted({str(r["object"]) for r in rows})
    reports = []
    for target in dict.fromkeys(wanted):
        mine = [r for r in rows if covers(str(r["object"]), target)]
        declared = {c.casefold() for c in consumers.get(target, ())}
        grouped: dict[tuple[str, str], list[Mapping[str, object]]] = {}
        for row in mine:
            key = (str(row["user"] or "unknown user"), str(row["client"] or "unknown client"))
            grouped.setdefault(key, []).append(row)
        readers = []
        daily: dict[str, dict[str, int]] = {}
        for (user, client), group in grouped.items():
            statements = {str(r["statement_id"]) for r in group}
            latest = _latest_statements(group)
            possible = {str(r["statement_id"]) for r in group if r["kind"] == "possible"} - {
                str(r["statement_id"]) for r in group if r["kind"] == "read"
            }
            times = sorted(t for r in group if (t := _when(r)) is not None)
            readers.append(
                Reader(
                    user,
                    client,
                    len(statements),
                    len(possible),
                    times[0] if times else None,
                    times[-1] if times else None,
                    tuple(sid for sid, _ in latest),
                    user.casefold() in declared or client.casefold() in declared,
                    tuple(text for _, text in latest),
                )
            )
            for r in group:
                when = _when(r)
                if when is not None:
                    day = daily.setdefault(f"{when:%Y-%m-%d}", {})
                    day[label(user, client)] = day.get(label(user, client), 0) + 1
        readers.sort(key=lambda r: (-r.reads, r.user, r.client))
        reports.append(ObjectReport(target, tuple(readers), daily, coverage))
    return reports


def _latest_statements(group: Sequence[Mapping[str, object]]) -> list[tuple[str, str]]:
    """The reader's SAMPLES latest statements, newest first (undated ones last, ids in natural order
    then): (id, text)."""
    import re

    def natural(sid: str) -> tuple[object, ...]:
        return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", sid))

    texts: dict[str, str] = {}
    when: dict[str, datetime] = {}
    for row in group:
        sid = str(row["statement_id"])
        text = row.get("statement")
        if isinstance(text, str) and text and not texts.get(sid):
            texts[sid] = text
        at = _when(row)
        if at is not None and (sid not in when or at > when[sid]):
            when[sid] = at
        texts.setdefault(sid, "")
    epoch = datetime.min.replace(tzinfo=UTC)
    order = sorted(texts, key=natural)
    order.sort(key=lambda sid: when.get(sid, epoch), reverse=True)  # stable: ties keep natural order
    return [(sid, texts[sid]) for sid in order[:SAMPLES]]


def coverage_of(reports: Sequence[ObjectReport]) -> Coverage | None:
    """The sources' coverage the reports share (one log)."""
    return next((r.coverage for r in reports if r.coverage is not None), None)


def render_text(reports: Sequence[ObjectReport]) -> str:
    lines = []
    shared = coverage_of(reports)
    if shared is not None:
        lines += ["Telemetry coverage:", *(f"  {line}" for line in shared.lines()), ""]
    for report in reports:
        if not report.readers:
            lines.append(f"{report.name}: {report.no_readers}")
            continue
        gap = f"; {report.gap}" if report.gap else ""
        lines.append(
            f"{report.name}: {len(report.readers)} reader(s), {report.reads} read(s) "
            f"({report.possible} possible), first {_iso(report.first)}, last {_iso(report.last)}{gap}"
        )
        for r in report.readers:
            mark = "" if r.declared else "  UNKNOWN (not a declared consumer)"
            possible = f", {r.possible} possible" if r.possible else ""
            lines.append(
                f"  {label(r.user, r.client)}: {r.reads} read(s){possible}, last {_iso(r.last)}, "
                f"e.g. {'; '.join(r.examples())}{mark}"
            )
    return "\n".join(lines)


def render_markdown(reports: Sequence[ObjectReport]) -> str:
    lines = ["# Readers of deprecated objects", ""]
    shared = coverage_of(reports)
    if shared is not None:
        lines += ["## Telemetry coverage", "", *(f"- {_cell(line)}" for line in shared.lines()), ""]
    for report in reports:
        lines += [f"## `{report.name}`", ""]
        if not report.readers:
            text = report.no_readers
            lines += [f"{text[:1].upper()}{text[1:]}.", ""]
            continue
        gap = f" **{report.gap[:1].upper()}{report.gap[1:]}.**" if report.gap else ""
        lines += [
            f"{report.reads} read(s), {report.possible} possible, first {_iso(report.first)}, "
            f"last {_iso(report.last)}.{gap}",
            "",
            "| user | client | reads | possible | first | last | samples | declared consumer |",
            "|---|---|---:|---:|---|---|---|---|",
        ]
        for r in report.readers:
            lines.append(
                f"| {_cell(r.user)} | {_cell(r.client)} | {r.reads} | {r.possible} | {_iso(r.first)} | "
                f"{_iso(r.last)} | {_cell('; '.join(r.examples()))} | {'yes' if r.declared else '**no**'} |"
            )
        lines.append("")
    return "\n".join(lines)


def render_json(reports: Sequence[ObjectReport]) -> str:
    shared = coverage_of(reports)
    payload = {
        "coverage": shared.to_json() if shared is not None else None,
        "objects": [r.to_json() for r in reports],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _when(row: Mapping[str, object]) -> datetime | None:
    value = row.get("statement_time")
    return value if isinstance(value, datetime) else None


def _iso(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "-"


def canonical_input(
    rows: Iterable[Mapping[str, object]],
    objects: Sequence[str],
    consumers: Mapping[str, Sequence[str]],
    names: Names,
    now: datetime,
) -> tuple[list[dict[str, object]], list[str], dict[str, tuple[str, ...]]]:
    """The log's rows, the objects and the consumers under one canonical name per object (the physical
    table that held the data: rows at their statement's time, objects now), as the gate names them."""
    out_rows: list[dict[str, object]] = []
    for row in rows:
        when = _when(row)
        for name in names.canonical(str(row["object"]), when) or (str(row["object"]),):
            out_rows.append({**row, "object": name})
    out_objects: list[str] = []
    out_consumers: dict[str, tuple[str, ...]] = {k.casefold(): tuple(v) for k, v in consumers.items()}
    for obj in objects:
        for name in names.canonical(obj, now) or (obj.casefold(),):
            out_objects.append(name)
            if obj.casefold() in out_consumers:
                out_consumers.setdefault(name, out_consumers[obj.casefold()])
    return out_rows, list(dict.fromkeys(out_objects)), out_consumers
