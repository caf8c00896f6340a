"""`--format github`: GitHub Actions workflow commands (`::error file=…,line=…,col=…::…`).

GitHub shows each one as an annotation on that line of the pull request's diff. Field paths of diff changes
(`columns[2].type`) are mapped back to lines through the contract's source map.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from delta_contracts.contract.errors import Location, Problem
    from delta_contracts.contract.load import LoadedContract
    from delta_contracts.diff.report import ContractDiff

_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
# Changes whose field indexes the OLD contract: the column is gone from the new file.
_OLD_SIDE = {"DC-DS103"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, where: Location | None = None, title: str | None = None) -> str:
    """One workflow command; `level` is error, warning or notice."""
    props: list[str] = []
    if where is not None:
        props += [f"file={_property(where.path)}", f"line={where.line}", f"col={where.column}"]
    if title:
        props.append(f"title={_property(title)}")
    head = f"::{level} {','.join(props)}" if props else f"::{level}"
    return f"{head}::{_data(message)}"


def field_parts(field: str) -> tuple[str | int, ...]:
    """`columns[2].checks.min` → ('columns', 2, 'checks', 'min')."""
    return tuple(name if name else int(index) for name, index in _PART.findall(field))


def problem_annotations(problems: list[Problem]) -> list[str]:
    out = []
    for problem in problems:
        message = f"{problem.field}: {problem.message}" if problem.field else problem.message
        out.append(annotation("error", message, problem.location, problem.code))
    return out


def diff_annotations(
    results: list[tuple[ContractDiff, LoadedContract | None, LoadedContract | None]],
) -> list[str]:
    """Per changed contract: the bump problem on its `version` line, each change on its own line.

    Changes the policy refuses are errors; the others are notices saying how they were classified.
    """
    out: list[str] = []
    for result, old, new in results:
        if new is None:
            where = old.locate("id") if old is not None else None
            message = f"contract {result.contract_id} deleted: retire it through lifecycle first"
            out.append(annotation("error", message, None if where is None else where, "DC-DS101"))
            continue
        verdict = result.verdict
        if verdict is None:
            continue
        if not verdict.declared_ok:
            required = verdict.required.value if verdict.required else "none"
            message = (
                f"version {result.old_version} -> {result.new_version} is a {verdict.declared} bump; "
                f"the changes require {required}"
            )
            out.append(annotation("error", message, new.locate("version"), "version bump"))
        # Two refused changes may share a code: each violation goes to the change it was written for.
        unclaimed = list(verdict.violations)
        for change in verdict.changes:
            parts = ("columns",) if change.code in _OLD_SIDE else field_parts(change.field)
            where = new.locate(*parts, key=change.code in _OLD_SIDE)
            title = f"{change.code} {change.change_class.value}: {change.title}"
            claimed = next((v for v in unclaimed if v.startswith(f"{change.code} {change.message}:")), None)
            if claimed is not None:
                unclaimed.remove(claimed)
                out.append(annotation("error", claimed, where, title))
            else:
                out.append(annotation("notice", change.message, where, title))
    return out
