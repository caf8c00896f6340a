"""CI integration on a temporary git repository: the pre-commit hooks as pre-commit runs them, the example
GitHub Actions workflow's steps, and `--format github` annotations on the changed line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / ".pre-commit-hooks.yaml"
WORKFLOW = ROOT / "docs" / "ci" / "github-actions.yml"
CONTRACT = Path("contracts/payments/transactions.yaml")


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(ROOT),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PRE_COMMIT_HOME=str(tmp / "pre-commit-home"),
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
        GIT_CONFIG_NOSYSTEM="1",
        HOME=str(tmp),
    )
    return env


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=_env(repo.parent))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A project with the example contracts and their migrations, committed on `main`."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(ROOT / "contracts", project / "contracts")
    shutil.copytree(ROOT / "migrations", project / "migrations")
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "contracts")
    return project


def _drop_legacy_channel(repo: Path, version: str) -> None:
    path = repo / CONTRACT
    text = re.sub(r"(?m)^version: .*$", f"version: {version}", path.read_text(encoding="utf-8"))
    text = re.sub(r"  - name: legacy_channel\n(?:    .*\n)+?(?=  - name)", "", text)
    path.write_text(text, encoding="utf-8")


def _line_of(repo: Path, file: Path, text: str) -> int:
    lines = (repo / file).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "delta_contracts", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=_env(repo.parent),
    )


def _try_repo(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`pre-commit try-repo` on a hooks repository holding this project's `.pre-commit-hooks.yaml`.

    (The manifest is copied into a repository of its own and committed, so the test sees the working
    tree's file whether or not it is committed here.)
    """
    hooks = repo.parent / "hooks"
    if not hooks.exists():
        hooks.mkdir()
        shutil.copy(HOOKS, hooks / HOOKS.name)
        _git(hooks, "init", "-q", "-b", "main")
        _git(hooks, "add", "-A")
        _git(hooks, "commit", "-q", "-m", "hooks")
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=_env(repo.parent),
        timeout=600,
    )


def _hook_results(output: str) -> dict[str, str]:
    found = re.findall(
        r"^(delta-contracts [^\n]*?)\.{3,}(Passed|Failed|\(no files to check\)Skipped)$", output, re.M
    )
    return {name.strip(): result for name, result in found}


def test_the_hooks_file_exposes_lint_diff_and_plan_check() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load(HOOKS.read_text(encoding="utf-8"))}
    assert hooks["delta-contracts-lint"]["entry"] == "delta-contracts lint"
    assert hooks["delta-contracts-diff"]["entry"] == "delta-contracts diff --base HEAD"
    assert hooks["delta-contracts-plan-check"]["entry"] == "delta-contracts plan --check"


def test_pre_commit_runs_the_hooks(repo: Path) -> None:
    clean = _try_repo(repo, "--all-files")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert _hook_results(clean.stdout) == {
        "delta-contracts lint": "Passed",
        "delta-contracts diff --base HEAD": "Passed",
        "delta-contracts plan --check": "Passed",
    }

    # A breaking change declared as a minor bump, with no migration planned: diff and plan --check refuse it.
    _drop_legacy_channel(repo, "2.5.0")
    _git(repo, "add", str(CONTRACT))
    broken = _try_repo(repo)
    assert broken.returncode == 1
    assert _hook_results(broken.stdout) == {
        "delta-contracts lint": "Passed",
        "delta-contracts diff --base HEAD": "Failed",
        "delta-contracts plan --check": "Failed",
    }
    assert "is a minor bump; the changes require major" in broken.stdout
    assert "payments.transactions 2.5.0: refused" in broken.stdout  # plan refuses what diff refuses

    # Declared major and planned: every hook passes again.
    _drop_legacy_channel(repo, "3.0.0")
    assert _cli(repo, "plan").returncode == 0
    _git(repo, "add", "-A")
    fixed = _try_repo(repo)
    assert fixed.returncode == 0, fixed.stdout
    assert set(_hook_results(fixed.stdout).values()) == {"Passed"}


def test_lint_annotates_the_line_of_each_problem(repo: Path) -> None:
    path = repo / "contracts/sales/orders.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("type: date", "type: dat"), encoding="utf-8")
    done = _cli(repo, "lint", "--format", "github")
    assert done.returncode == 1
    line = _line_of(repo, Path("contracts/sales/orders.yaml"), "type: dat")
    column = (repo / "contracts/sales/orders.yaml").read_text().splitlines()[line - 1].index("dat") + 1
    annotations = [a for a in done.stdout.splitlines() if a.startswith("::")]
    assert annotations == [
        f"::error file=contracts/sales/orders.yaml,line={line},col={column},title=DC-L002::"
        "columns[5].type: invalid type 'dat': unknown type 'dat' (did you mean 'date'?)"
    ]


def test_diff_annotates_the_changed_lines(repo: Path) -> None:
    path = repo / CONTRACT
    _drop_legacy_channel(repo, "2.5.0")
    path.write_text(path.read_text().replace("checks: {min: 1}", "checks: {min: 5}"), encoding="utf-8")
    done = _cli(repo, "diff", "--base", "main", "--format", "github")
    assert done.returncode == 1
    annotations = [a for a in done.stdout.splitlines() if a.startswith("::")]
    file = CONTRACT.as_posix()
    version_line = _line_of(repo, CONTRACT, "version: 2.5.0")
    min_line = _line_of(repo, CONTRACT, "checks: {min: 5}")
    columns_line = _line_of(repo, CONTRACT, "columns:")
    assert annotations[0].startswith(f"::error file={file},line={version_line},col=10,title=version bump::")
    by_code = {re.search(r"title=(DC-\w+)", a).group(1): a for a in annotations[1:]}  # type: ignore[union-attr]
    assert by_code.keys() == {"DC-DS103", "DC-CK303"}
    assert by_code["DC-CK303"].startswith(f"::error file={file},line={min_line},col=")
    assert "min tightened 1 -> 5: breaking" in by_code["DC-CK303"]
    assert by_code["DC-DS103"].startswith(f"::error file={file},line={columns_line},col=1,")
    # The job log still gets the readable summary after the annotations.
    assert "1 failing" in done.stdout.splitlines()[-1]


def test_two_refused_changes_of_one_code_each_get_their_own_message(repo: Path) -> None:
    path = repo / CONTRACT
    text = path.read_text().replace("version: 2.4.0", "version: 2.5.0")
    text = text.replace("checks: {enum: [INR, USD, EUR],", "checks: {enum: [INR, USD],")
    text = text.replace("checks: {enum: [card, upi, netbanking]}", "checks: {enum: [card, upi]}")
    path.write_text(text, encoding="utf-8")
    done = _cli(repo, "diff", "--base", "main", "--format", "github")
    assert done.returncode == 1
    refused = [a for a in done.stdout.splitlines() if a.startswith("::error") and "title=DC-" in a]
    assert len(refused) == 2
    currency_line = _line_of(repo, CONTRACT, "checks: {enum: [INR, USD],")
    method_line = _line_of(repo, CONTRACT, "checks: {enum: [card, upi]}")
    by_line = {int(re.search(r",line=(\d+),", a).group(1)): a for a in refused}  # type: ignore[union-attr]
    assert by_line.keys() == {currency_line, method_line}
    # each annotation's message names the value removed on its own line, not the other one's
    assert "EUR" in by_line[currency_line] and "netbanking" not in by_line[currency_line]
    assert "netbanking" in by_line[method_line] and "EUR" not in by_line[method_line]


def test_diff_notices_accepted_changes(repo: Path) -> None:
    path = repo / CONTRACT
    text = path.read_text().replace("version: 2.4.0", "version: 2.4.1")
    path.write_text(text.replace("description: Settlement status.", "description: Settlement state."))
    done = _cli(repo, "diff", "--base", "main", "--format", "github")
    assert done.returncode == 0
    line = _line_of(repo, CONTRACT, "description: Settlement state.")
    assert f"::notice file={CONTRACT.as_posix()},line={line},col=18,title=DC-DC605 patch%3A" in done.stdout


def test_plan_check_annotates_the_version_line(repo: Path) -> None:
    _drop_legacy_channel(repo, "3.0.0")
    done = _cli(repo, "plan", "--check", "--format", "github")
    assert done.returncode == 1
    line = _line_of(repo, CONTRACT, "version: 3.0.0")
    assert (
        f"::error file={CONTRACT.as_posix()},line={line},col=10,title=plan%3A missing migration::"
        "payments.transactions: needs migration 0002_2.4.0_to_3.0.0"
    ) in done.stdout.splitlines()


def test_plan_check_annotates_a_tampered_migration(repo: Path) -> None:
    sql = repo / "migrations/sales.orders/0002_1.0.0_to_1.1.0.sql"
    sql.write_text(sql.read_text() + "-- edited\n")
    done = _cli(repo, "plan", "--check", "--format", "github")
    assert done.returncode == 1
    shown = sql.relative_to(repo).as_posix()
    assert f"::error file={shown},line=1,col=1,title=plan%3A tampered migration::" in done.stdout


def test_annotation_escapes_what_github_would_misread() -> None:
    from delta_contracts.cli.github import annotation, field_parts
    from delta_contracts.contract.errors import Location

    line = annotation("error", "50% done\nnext", Location("a,b:c.yaml", 3, 4), "t:1,2")
    assert line == "::error file=a%2Cb%3Ac.yaml,line=3,col=4,title=t%3A1%2C2::50%25 done%0Anext"
    assert annotation("notice", "plain") == "::notice::plain"
    assert field_parts("columns[12].checks.min") == ("columns", 12, "checks", "min")


def _steps() -> list[dict[str, object]]:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    job = workflow["jobs"]["contracts"]
    return list(job["steps"])


def _run_step(repo: Path, step: dict[str, object], base: str) -> int:
    env = _env(repo.parent) | {"BASE": base, "PR": "1"}
    done = subprocess.run(["bash", "-e", "-c", str(step["run"])], cwd=repo, env=env, capture_output=True)
    return done.returncode


def test_the_example_workflow_runs_on_pull_requests_and_comments_the_diff(repo: Path) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    assert workflow["permissions"]["pull-requests"] == "write"
    runs = {str(s.get("name")): str(s.get("run", "")) for s in _steps()}
    assert "--format github" in runs["lint"] and "--format github" in runs["diff"]
    assert "plan --check --format github" in runs["plan --check"]
    assert "--body-file contract-diff.md" in runs["post the comment"]

    ours = [s for s in _steps() if str(s.get("run", "")).startswith("delta-contracts")]
    assert [s["name"] for s in ours] == ["lint", "diff", "plan --check", "render the comment"]
    _git(repo, "checkout", "-q", "-b", "change")
    _drop_legacy_channel(repo, "2.5.0")
    _git(repo, "commit", "-q", "-am", "drop legacy_channel")
    codes = {str(s["name"]): _run_step(repo, s, "main") for s in ours}
    assert codes == {"lint": 0, "diff": 1, "plan --check": 1, "render the comment": 0}
    comment = (repo / "contract-diff.md").read_text(encoding="utf-8")
    assert comment.startswith("## Data contract changes")
    assert "❌ `payments.transactions` 2.4.0 → 2.5.0" in comment
    # the readers of the dropped column: no readers log in this repository, and the comment says so
    readers = comment[comment.index("## Readers of what changes") :]
    assert "### `payments.transactions.legacy_channel`" in readers
    assert "**No telemetry for this table**" in readers


def _yaml_blocks(page: Path) -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```", page.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)


@pytest.mark.parametrize("page", [ROOT / "README.md", ROOT / "docs" / "ci.md"], ids=["README", "docs/ci"])
def test_the_documented_pre_commit_config_works(repo: Path, page: Path) -> None:
    """The snippet users copy is what `init --pre-commit` writes: local hooks, no repository to fetch
    (issue 47 item 1: it named https://github.com/example/delta-contracts)."""
    from delta_contracts.cli.start import pre_commit_config

    snippet = next(b for b in _yaml_blocks(page) if "delta-contracts-lint" in b)
    assert yaml.safe_load(snippet) == yaml.safe_load(pre_commit_config())
    assert [r["repo"] for r in yaml.safe_load(snippet)["repos"]] == ["local"]
    (repo / ".pre-commit-config.yaml").write_text(snippet, encoding="utf-8")
    _drop_legacy_channel(repo, "2.5.0")
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=_env(repo.parent),
        timeout=600,
    )
    assert done.returncode == 1
    assert _hook_results(done.stdout) == {
        "delta-contracts lint": "Passed",
        "delta-contracts diff --base HEAD": "Failed",
        "delta-contracts plan --check": "Failed",
    }
