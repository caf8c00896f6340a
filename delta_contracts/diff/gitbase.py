"""Contracts as they were at a git ref, read with one `git ls-tree` and one `git cat-file --batch`.

One process per file would cost a fork and an object lookup each: on 500 contracts that alone is seconds.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from delta_contracts.contract.errors import ContractError, Location, Problem
from delta_contracts.contract.load import (
    CONTRACT_SUFFIXES,
    LoadedContract,
    LoadedProject,
    parse_contract,
    parse_project,
)
from delta_contracts.contract.project import PROJECT_FILE
from delta_contracts.errors import InputError


class GitError(InputError):
    pass


class GitMissingError(GitError):
    pass


@dataclass(frozen=True)
class BaseContracts:
    contracts: list[LoadedContract]
    problems: list[Problem]
    unchanged: list[Path]  # working-tree files byte-identical to the ref, under identical contracts.yml


def _same_bytes(path: Path, blob: bytes) -> bool:
    try:
        return path.read_bytes() == blob
    except OSError:
        return False


def _git(args: list[str], cwd: Path, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)
    except FileNotFoundError:
        raise GitMissingError(
            "git is not installed: --base needs it (or compare two files: diff OLD NEW)"
        ) from None
    if done.returncode != 0:
        raise GitError(done.stderr.decode(errors="replace").strip() or f"git {' '.join(args)} failed")
    return done.stdout


def _top_level(cwd: Path) -> Path:
    try:
        return Path(_git(["rev-parse", "--show-toplevel"], cwd).decode().strip())
    except GitMissingError:
        raise
    except GitError:
        raise GitError(
            f"{cwd} is not inside a git repository: --base compares with a git ref; run it in the "
            "repository, or compare two files with `delta-contracts diff OLD NEW`"
        ) from None


def _check_ref(ref: str, top: Path) -> None:
    """Name the ref and what to do, instead of git's `fatal: Needed a single revision`."""
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], top)
    except GitError:
        pass
    else:
        return
    try:
        _git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], top)
    except GitError:
        raise GitError(
            f"--base {ref}: the repository has no commit yet; commit the contracts first, then compare"
        ) from None
    if "~" in ref or "^" in ref:
        raise GitError(
            f"--base {ref}: no such commit; the history is shorter than that (a first commit has no parent). "
            "Use a commit that exists (git log --oneline lists them), or compare two files with diff OLD NEW"
        )
    raise GitError(
        f"--base {ref}: not a commit, branch or tag of this repository; "
        "check the name (git log --oneline, git branch -a, git tag list them)"
    )


def _relative(root: Path, top: Path) -> str:
    try:
        return str(PurePosixPath(root.resolve().relative_to(top.resolve())))
    except ValueError:
        raise GitError(
            f"{root} is outside the git repository at {top}: --base reads files of that repository"
        ) from None


def _read_blobs(specs: list[str], cwd: Path) -> list[bytes]:
    """`git cat-file --batch` output for each `<ref>:<path>`, in order."""
    out = _git(["cat-file", "--batch"], cwd, ("\n".join(specs) + "\n").encode())
    blobs: list[bytes] = []
    pos = 0
    for _ in specs:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        if len(header) < 3 or header[1] != b"blob":
            raise GitError(f"cannot read {header[0].decode(errors='replace')} from git")
        size = int(header[2])
        blobs.append(out[end + 1 : end + 1 + size])
        pos = end + 1 + size + 1
    return blobs


def contracts_at(ref: str, roots: list[Path]) -> BaseContracts:
    """Every contract under `roots` as it was at `ref` (paths as they are in the working tree).

    A file byte-identical in the working tree, under unchanged project files, cannot have changed: it is
    listed as unchanged and not parsed at all, which is what keeps a large repository fast.
    """
    cwd = Path.cwd()
    top = _top_level(cwd)
    _check_ref(ref, top)
    relative = [_relative(r, top) for r in roots]
    # contracts.yml files above the roots hold defaults too: list them along with the roots.
    ancestors = {str(PurePosixPath(r).parent / PROJECT_FILE) for r in relative}
    for r in relative:
        ancestors |= {str(a / PROJECT_FILE) for a in PurePosixPath(r).parents}
    pathspec = sorted({*relative, *(a.removeprefix("./") for a in ancestors)})
    listing = _git(["ls-tree", "-r", "--name-only", ref, "--", *pathspec], top).decode().splitlines()
    listing = sorted(set(listing))
    wanted = [p for p in listing if p.endswith(CONTRACT_SUFFIXES) and PurePosixPath(p).name != PROJECT_FILE]
    projects = sorted({p for p in listing if PurePosixPath(p).name == PROJECT_FILE}, key=len)
    blobs = _read_blobs([f"{ref}:{p}" for p in [*projects, *wanted]], top)
    project_texts = dict(zip(projects, blobs[: len(projects)], strict=True))
    contracts: list[LoadedContract] = []
    problems: list[Problem] = []
    unchanged: list[Path] = []
    loaded_projects: dict[str, LoadedProject] = {}
    projects_same = all(_same_bytes(top / p, b) for p, b in project_texts.items())
    for path, blob in zip(wanted, blobs[len(projects) :], strict=True):
        if projects_same and _same_bytes(top / path, blob):
            unchanged.append((top / path).resolve())
            continue
        shown = Path(f"{ref}:{path}")
        try:
            project = _project_for(path, project_texts, loaded_projects, ref, top)
            contracts.append(parse_contract(blob.decode("utf-8"), shown, project))
        except UnicodeDecodeError:
            problems.append(Problem(Location(str(shown), 1, 1), "", "not UTF-8 text", "DC-IO"))
        except ContractError as err:
            problems.extend(err.problems)
    return BaseContracts(contracts, problems, unchanged)


def _project_for(
    path: str, texts: dict[str, bytes], cache: dict[str, LoadedProject], ref: str, top: Path
) -> LoadedProject | None:
    folder = PurePosixPath(path).parent
    for candidate in (folder, *folder.parents):
        key = str(candidate / PROJECT_FILE) if str(candidate) != "." else PROJECT_FILE
        if key in texts:
            if key not in cache:
                cache[key] = parse_project(texts[key].decode("utf-8"), Path(f"{ref}:{key}"))
            return cache[key]
    return None
