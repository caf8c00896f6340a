"""A contract file's versions in git, each with the changes from the one before, classified. Pure but for git.

One `git log` lists the commits touching the file and one `git cat-file --batch` reads every version of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from delta_contracts.contract.errors import ContractError
from delta_contracts.contract.load import LoadedContract, LoadedProject, parse_contract
from delta_contracts.diff.changes import Change
from delta_contracts.diff.gitbase import GitError, _git, _read_blobs, _relative, _top_level


@dataclass(frozen=True, slots=True)
class ContractVersion:
    commit: str  # a short commit id; "working tree" for uncommitted edits
    date: str  # ISO-8601 commit date
    subject: str
    version: str | None  # None when the file did not parse at that commit
    required: str  # the bump the changes require: major | minor | patch | none | new
    changes: tuple[Change, ...]
    error: str = ""


def contract_history(path: Path, project: LoadedProject | None, limit: int = 50) -> list[ContractVersion]:
    """The versions of the contract at `path`, newest first (at most `limit`); [] outside a git repository."""
    from delta_contracts.diff import diff, verdict

    try:
        top = _top_level(path.parent.resolve())
        relative = _relative(path, top)
        log = _git(
            ["log", f"-{limit}", "--follow", "--format=%h%x09%cI%x09%s", "--name-only", "--", relative], top
        )
    except GitError:
        return []
    entries: list[tuple[str, str, str, str]] = []  # commit, date, subject, path at that commit
    lines = [line for line in log.decode(errors="replace").splitlines() if line.strip()]
    for index, line in enumerate(lines):
        parts = line.split("\t")
        if len(parts) == 3 and index + 1 < len(lines) and "\t" not in lines[index + 1]:
            entries.append((parts[0], parts[1], parts[2], lines[index + 1]))
    blobs = _read_blobs([f"{c}:{p}" for c, _, _, p in entries], top) if entries else []
    texts = [
        (c, d, s, b.decode("utf-8", errors="replace")) for (c, d, s, _), b in zip(entries, blobs, strict=True)
    ]
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if current is not None and (not texts or texts[0][3] != current):
        texts.insert(0, ("working tree", "", "uncommitted", current))
    parsed: list[tuple[str, str, str, LoadedContract | None, str]] = []
    for commit, date, subject, text in texts:
        try:
            parsed.append(
                (commit, date, subject, parse_contract(text, Path(f"{commit}:{relative}"), project), "")
            )
        except ContractError as err:
            parsed.append(
                (commit, date, subject, None, str(err.problems[0]) if err.problems else "unreadable")
            )
    out: list[ContractVersion] = []
    for index, (commit, date, subject, loaded, error) in enumerate(parsed):
        before = next((p[3] for p in parsed[index + 1 :] if p[3] is not None), None)
        if loaded is None:
            out.append(ContractVersion(commit, date, subject, None, "-", (), error))
            continue
        if before is None:
            out.append(ContractVersion(commit, date, subject, loaded.contract.version, "new", ()))
            continue
        result = verdict(before.contract, loaded.contract, diff(before.contract, loaded.contract))
        required = result.required.value if result.required else "none"
        out.append(ContractVersion(commit, date, subject, loaded.contract.version, required, result.changes))
    return out
