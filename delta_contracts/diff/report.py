"""Diff results as text, JSON or a Markdown pull-request comment (violations first)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from delta_contracts.diff.changes import Change
from delta_contracts.diff.policy import Verdict, refusals


@dataclass(frozen=True)
class ContractDiff:
    contract_id: str
    status: str  # changed | unchanged | new | deleted
    old_version: str | None
    new_version: str | None
    verdict: Verdict | None  # None for new contracts
    deleted_change: Change | None = None
    # What the migration this change plans cannot keep (row ids, a Change Data Feed consumer's position),
    # from the plan's warnings: a reviewer sees it before the PR merges.
    not_kept: tuple[str, ...] = ()
    # What the table becomes when the plan serves the change as a versioned table (the name a view, producers
    # writing to `<table>__vN`): the reviewer reads it in the PR comment, not first in `plan`'s warnings.
    becomes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        if self.status == "deleted":
            return False
        return self.verdict is None or self.verdict.ok

    @property
    def changes(self) -> tuple[Change, ...]:
        if self.deleted_change is not None:
            return (self.deleted_change,)
        return self.verdict.changes if self.verdict else ()


def _required(d: ContractDiff) -> str:
    if d.status == "deleted":
        return "major"
    if d.verdict is None or d.verdict.required is None:
        return "none"
    return d.verdict.required.value


def _declared(d: ContractDiff) -> str:
    return d.verdict.declared if d.verdict else "-"


def _problems(d: ContractDiff) -> list[str]:
    if d.status == "deleted":
        return [
            "contract deleted: the table loses its contract "
            "(a major change; retire it through lifecycle first)"
        ]
    if d.verdict is None:
        return []
    return refusals(d.verdict, d.old_version or "", d.new_version or "")


def _bumps_in_words(d: ContractDiff) -> str:
    """`requires minor, declared patch`; never `requires none` or `declared none`."""
    required = _required(d)
    needs = "requires no bump" if required == "none" else f"requires {required}"
    declared = _declared(d)
    said = {"none": "version unchanged", "-": "new"}.get(declared, f"declared {declared}")
    return f"{needs}, {said}"


def render_text(diffs: list[ContractDiff], unchanged_files: int = 0) -> str:
    lines = []
    for d in diffs:
        mark = "ok" if d.ok else "FAIL"
        versions = f"{d.old_version or '(new)'} -> {d.new_version or '(deleted)'}"
        lines.append(f"{d.contract_id} {versions}: {d.status}, {_bumps_in_words(d)} [{mark}]")
        problems = _problems(d)
        unclaimed = list(problems)
        refused: dict[int, list[str]] = {}  # change index -> the refusals written for it
        for i, c in enumerate(d.changes):
            claimed = [p for p in unclaimed if p.startswith(f"{c.code} {c.message}: ")]
            if claimed:
                refused[i] = claimed
                unclaimed = [p for p in unclaimed if p not in claimed]
        lines += [f"  ✗ {problem}" for problem in unclaimed]
        # A refused change is said once: its refusal, which names it (code and message), not again below.
        for i, c in enumerate(d.changes):
            if i in refused:
                first, *more = refused[i]
                lines.append(f"  ✗ {first}")
                lines += [f"      and: {m.removeprefix(f'{c.code} {c.message}: ')}" for m in more]
        for i, c in enumerate(d.changes):
            if i not in refused:
                lines.append(f"  {c.code} {c.change_class.value:<5} {c.field}: {c.message}")
        lines += [f"  table: {b}" for b in d.becomes]
        lines += [f"  not kept by the migration: {n}" for n in d.not_kept]
    failing = sum(not d.ok for d in diffs)
    lines.append(f"{len(diffs) + unchanged_files} contract(s) compared, {failing} failing")
    return "\n".join(lines)


def render_json(diffs: list[ContractDiff], unchanged_files: int = 0) -> str:
    payload = [
        {
            "contract": d.contract_id,
            "status": d.status,
            "old_version": d.old_version,
            "new_version": d.new_version,
            "required": _required(d),
            "declared": _declared(d),
            "ok": d.ok,
            "violations": _problems(d),
            "changes": [c.to_json() for c in d.changes],
            "not_kept": list(d.not_kept),
            "table_becomes": list(d.becomes),
        }
        for d in diffs
    ]
    return json.dumps(
        {"ok": all(d.ok for d in diffs), "unchanged_files": unchanged_files, "contracts": payload}, indent=2
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(diffs: list[ContractDiff], unchanged_files: int = 0) -> str:
    ordered = sorted(diffs, key=lambda d: (d.ok, d.contract_id))
    failing = [d for d in ordered if not d.ok]
    lines = ["## Data contract changes", ""]
    lines.append(
        f"**{len(failing)} failing** of {len(diffs)} changed contract(s)."
        if failing
        else f"All {len(diffs)} changed contract(s) pass."
    )
    if unchanged_files:
        lines.append(f"{unchanged_files} contract file(s) unchanged.")
    for d in ordered:
        if d.status == "unchanged":
            continue
        icon = "✅" if d.ok else "❌"
        lines += [
            "",
            f"### {icon} `{d.contract_id}` {d.old_version or 'new'} → {d.new_version or 'deleted'}",
            "",
        ]
        lines.append(f"Bump: {_bumps_in_words(d)}")
        problems = _problems(d)
        if problems:
            lines += ["", "Violations:"] + [f"- {_cell(p)}" for p in problems]
        if d.becomes:
            lines += ["", "What the table becomes:"] + [f"- {_cell(b)}" for b in d.becomes]
        if d.not_kept:
            lines += ["", "Not kept by the migration:"] + [f"- {_cell(n)}" for n in d.not_kept]
        if d.changes:
            lines += ["", "| code | class | field | change |", "| --- | --- | --- | --- |"]
            lines += [
                f"| {c.code} | {c.change_class.value} | `{_cell(c.field)}` | {_cell(c.message)} |"
                for c in d.changes
            ]
    return "\n".join(lines)
