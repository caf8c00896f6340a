"""The readers of what a pull request changes, as text (the job log) and Markdown (the PR comment)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from delta_contracts.telemetry.impact import READ, UNKNOWN, UNREAD, ObjectReaders, Telemetry
from delta_contracts.telemetry.report import Reader

TITLE = "Readers of what changes"


def _when(value: datetime | None) -> str:
    return f"{value:%Y-%m-%d %H:%M} UTC" if value else "unknown time"


def _changes(item: ObjectReaders) -> str:
    return "; ".join(f"{c.code} {c.message}" for c in item.affected.changes)


def _window(item: ObjectReaders) -> str:
    return f"reader_lookback {item.lookback}, since {item.since:%Y-%m-%d %H:%M} UTC"


def _source_line(telemetry: Telemetry) -> str:
    if telemetry.watches_all:
        return f"read from {telemetry.where} for the changed objects"
    return f"from the readers log at {telemetry.where}"


def _reader_text(r: Reader) -> str:
    possible = f" ({r.possible} possible: the text names it but did not parse)" if r.possible else ""
    sample = f", e.g. statement {r.samples[0]}" if r.samples else ""
    return f"{r.user} ({r.client}): {r.reads} statement(s){possible}, last read {_when(r.last)}{sample}"


def render_text(items: Sequence[ObjectReaders], telemetry: Telemetry) -> str:
    if not items:
        return f"{TITLE}: no change removes, renames, retypes, tightens or deprecates anything read."
    lines = ["", f"{TITLE} ({_source_line(telemetry)}):"]
    lines += [f"  {line}" for line in _coverage_lines(items)]
    for item in items:
        lines.append(f"{item.name} [{_changes(item)}] ({_window(item)}):")
        if item.status == READ:
            for reader in item.unknown_readers:
                lines.append(f"  UNKNOWN reader (not a declared consumer): {_reader_text(reader)}")
            for reader in item.declared_readers:
                lines.append(f"  declared consumer: {_reader_text(reader)}")
            if item.read_as != (item.name,):
                lines.append(f"  read as {', '.join(item.read_as)}")
        elif item.status == UNREAD:
            lines.append(f"  {item.unread}")
        lines.extend(f"  {note}" for note in item.notes)
    return "\n".join(lines)


def _coverage_lines(items: Sequence[ObjectReaders]) -> list[str]:
    """Each source's span (the same for every object: one log)."""
    shared = next((i.coverage for i in items if i.coverage is not None), None)
    return [f"source {s.line()}" for s in shared.sources] if shared is not None else []


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("`", "'")


def _rows(readers: Sequence[Reader]) -> list[str]:
    lines = [
        "| user | client | statements | last read | sample statement |",
        "| --- | --- | ---: | --- | --- |",
    ]
    for r in readers:
        count = f"{r.reads} ({r.possible} possible)" if r.possible else str(r.reads)
        sample = _cell(r.samples[0]) if r.samples else "-"
        lines.append(f"| {_cell(r.user)} | {_cell(r.client)} | {count} | {_when(r.last)} | {sample} |")
    return lines


def render_markdown(items: Sequence[ObjectReaders], telemetry: Telemetry) -> str:
    lines = [f"## {TITLE}", ""]
    if not items:
        lines.append("No change removes, renames, retypes, tightens or deprecates an object.")
        return "\n".join(lines)
    lines.append(f"Reads within each contract's `reader_lookback`, {_cell(_source_line(telemetry))}.")
    covered = _coverage_lines(items)
    if covered:
        lines += ["", *(f"- {_cell(line)}" for line in covered)]
    for item in items:
        lines += ["", f"### `{_cell(item.name)}`", "", _cell(_changes(item)) + f" ({_window(item)})", ""]
        if item.status == READ:
            unknown, declared = item.unknown_readers, item.declared_readers
            if unknown:
                lines += [
                    "**Unknown readers** (not among the contract's consumers):",
                    "",
                    *_rows(unknown),
                    "",
                ]
            if declared:
                lines += ["**Declared consumers** reading it:", "", *_rows(declared), ""]
            else:
                shown = ", ".join(_cell(d) for d in item.declared) or "none declared"
                lines += [f"Declared consumers seen reading it: none ({shown}).", ""]
            if item.read_as != (item.name,):
                lines += ["Read as " + ", ".join(f"`{_cell(n)}`" for n in item.read_as) + ".", ""]
        elif item.status == UNREAD:
            lines += [f"**{_cell(item.unread[:1].upper() + item.unread[1:])}.**", ""]
        notes = list(item.notes)
        if item.status == UNKNOWN and notes:
            head, _, why = notes.pop(0).partition(": ")
            lines += [f"**{_cell(head[:1].upper() + head[1:])}**: {_cell(why)}", ""]
        lines += [f"- {_cell(note)}" for note in notes]
    return "\n".join(lines).rstrip()


def to_json(items: Sequence[ObjectReaders], telemetry: Telemetry) -> dict[str, object]:
    return {"from": telemetry.where, "objects": [item.to_json() for item in items]}
