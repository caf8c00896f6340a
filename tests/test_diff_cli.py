from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "contracts", tmp_path / "contracts")
    git(tmp_path, "init", "-q")
    git(tmp_path, "-c", "user.email=t@example.com", "-c", "user.name=t", "add", "-A")
    git(tmp_path, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "base")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def commit(repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "edit")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_two_files(tmp_path: Path) -> None:
    old = REPO / "contracts/sales/customers.yaml"
    new = tmp_path / "contracts/sales/customers.yaml"
    new.parent.mkdir(parents=True)
    shutil.copy(REPO / "contracts/contracts.yml", tmp_path / "contracts/contracts.yml")
    new.write_text(
        old.read_text()
        .replace("version: 1.2.0", "version: 1.3.0")
        .replace("  - name: created_at", "  - name: note\n    type: string\n  - name: created_at")
    )
    code, out = run("diff", str(old), str(new))
    assert code == 0, out
    assert "DC-AD201" in out and "requires minor, declared minor [ok]" in out


def test_unreadable_input_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: [")
    code, out = run("diff", str(bad), str(REPO / "contracts/sales/customers.yaml"))
    assert code == 2 and "bad.yaml:2:1: YAML syntax error" in out and "Traceback" not in out


def test_base_ref_with_added_edited_and_deleted(repo: Path) -> None:
    edit(repo / "contracts/sales/customers.yaml", "version: 1.2.0", "version: 1.3.0")
    edit(repo / "contracts/sales/customers.yaml", "checks: {min: 0}", "checks: {min: 0, max: 1000000}")
    (repo / "contracts/payments/transactions.yaml").unlink()
    (repo / "contracts/sales/returns.yaml").write_text(
        "apiVersion: delta-contracts/v1\nid: sales.returns\nversion: 1.0.0\n"
        "columns:\n  - {name: return_id, type: bigint}\n"
    )
    commit(repo)
    code, out = run("diff", "--base", "HEAD~1", "--format", "json")
    payload = json.loads(out)
    by_id = {c["contract"]: c for c in payload["contracts"]}
    assert code == 1
    assert by_id["sales.returns"]["status"] == "new" and by_id["sales.returns"]["ok"]
    assert by_id["payments.transactions"]["status"] == "deleted"
    assert by_id["payments.transactions"]["changes"][0]["code"] == "DC-DS101"
    customers = by_id["sales.customers"]
    assert [c["code"] for c in customers["changes"]] == ["DC-CK301"]
    assert customers["required"] == "major" and customers["declared"] == "minor" and not customers["ok"]
    assert "sales.orders" not in by_id and payload["unchanged_files"] == 1  # identical bytes: not parsed


def test_base_ref_clean_change_passes(repo: Path) -> None:
    edit(repo / "contracts/sales/customers.yaml", "version: 1.2.0", "version: 1.2.1")
    edit(repo / "contracts/sales/customers.yaml", "Marketing segment.", "Marketing segment (CRM).")
    code, out = run("diff", "--base", "HEAD")  # uncommitted working tree against HEAD
    assert code == 0, out
    assert "sales.customers 1.2.0 -> 1.2.1: changed, requires patch, declared patch [ok]" in out


def test_markdown_lists_violations_first(repo: Path) -> None:
    edit(repo / "contracts/sales/customers.yaml", "version: 1.2.0", "version: 1.2.1")
    edit(repo / "contracts/sales/customers.yaml", "checks: {min: 1}", "checks: {min: 10}")
    edit(repo / "contracts/sales/orders.yaml", "version: 3.0.0", "version: 3.0.1")
    edit(repo / "contracts/sales/orders.yaml", "Order number.", "Order number, unique.")
    code, out = run("diff", "--base", "HEAD", "-f", "markdown")
    assert code == 1
    assert out.index("❌ `sales.customers`") < out.index("✅ `sales.orders`")
    assert "| DC-CK303 | major | `columns[0].checks.min` |" in out


def test_bad_ref_is_exit_2(repo: Path) -> None:
    code, out = run("diff", "--base", "no-such-ref")
    assert code == 2 and "error:" in out


def test_console_script_end_to_end(repo: Path) -> None:
    edit(repo / "contracts/sales/customers.yaml", "version: 1.2.0", "version: 1.2.1")
    done = subprocess.run(
        [sys.executable, "-m", "delta_contracts", "diff", "--base", "HEAD"],
        capture_output=True,
        text=True,
        cwd=repo,
    )
    assert done.returncode == 0, done.stderr
    assert "sales.customers 1.2.0 -> 1.2.1: unchanged" in done.stdout


def test_git_errors_name_the_ref_and_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(REPO / "contracts", tmp_path / "contracts")
    monkeypatch.chdir(tmp_path)
    code, out = run("diff", "--base", "HEAD")
    assert code == 2 and "is not inside a git repository" in out and "diff OLD NEW" in out, out
    git(tmp_path, "init", "-q")
    code, out = run("diff", "--base", "HEAD")
    assert code == 2 and "--base HEAD: the repository has no commit yet" in out, out
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "first")
    code, out = run("diff", "--base", "HEAD~1")
    assert code == 2 and "--base HEAD~1: no such commit" in out and "a first commit has no parent" in out
    code, out = run("diff", "--base", "mian")
    assert code == 2 and "--base mian: not a commit, branch or tag" in out, out
    assert "fatal" not in out and "Traceback" not in out


def test_an_unchanged_version_is_said_in_words(tmp_path: Path) -> None:
    old = REPO / "contracts/sales/customers.yaml"
    new = tmp_path / "contracts/sales/customers.yaml"
    new.parent.mkdir(parents=True)
    shutil.copy(REPO / "contracts/contracts.yml", tmp_path / "contracts/contracts.yml")
    new.write_text(
        old.read_text().replace(
            "  - name: created_at", "  - name: note\n    type: string\n  - name: created_at"
        )
    )
    code, out = run("diff", str(old), str(new))
    assert code == 1, out
    assert "changed, requires minor, version unchanged [FAIL]" in out
    assert "version 1.2.0 -> 1.2.0 is unchanged; the changes require minor" in out
    assert "none" not in out
    same = run("diff", str(old), str(old))[1]
    assert "unchanged, requires no bump, version unchanged [ok]" in same


def test_a_copy_outside_the_project_is_read_with_the_same_defaults(tmp_path: Path) -> None:
    inside = REPO / "contracts/sales/customers.yaml"
    outside = tmp_path / "customers-before.yaml"  # no contracts.yml above it
    shutil.copy(inside, outside)
    code, out = run("diff", str(outside), str(inside))
    assert code == 0, out
    assert "sales.customers 1.2.0 -> 1.2.0: unchanged" in out and "DC-" not in out
    assert "has no contracts.yml of its own: both sides read with" in out


def test_a_missing_path_is_one_message_for_every_command(tmp_path: Path) -> None:
    for command in (["lint"], ["plan"], ["diff", "--base", "HEAD"]):
        code, out = run(*command, str(tmp_path / "nope"))
        assert (code, out.strip()) == (2, f"error: no such file or folder: {tmp_path / 'nope'}"), command


@pytest.mark.parametrize(("target", "required"), [("delta-4", "minor"), ("delta-3", "major")])
def test_widening_is_classified_for_the_projects_target_as_plan_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, required: str
) -> None:
    """Issue 13 item 5: int -> bigint is a widening on Delta 4 but a new versioned table on Delta 3: `diff`
    reads the target from contracts.yml and requires the bump `plan` requires, and `plan` refuses what `diff`
    refuses with the same words."""
    (tmp_path / "contracts/shop").mkdir(parents=True)
    (tmp_path / "contracts/contracts.yml").write_text(f"target: {target}\ndefaults: {{owner: {{team: t}}}}\n")
    head = "apiVersion: delta-contracts/v1\nid: shop.items\nversion: {v}\ncolumns:\n"
    old = tmp_path / "old.yaml"
    old.write_text(head.format(v="1.0.0") + "  - {name: qty, type: int}\n")
    new = tmp_path / "contracts/shop/items.yaml"
    new.write_text(head.format(v="1.1.0") + "  - {name: qty, type: bigint}\n")
    monkeypatch.chdir(tmp_path)
    code, out = run("diff", str(old), str(new))
    assert f"requires {required}, declared minor" in out, out
    assert code == (0 if required == "minor" else 1), out
    if required == "major":
        shutil.copy(old, new)
        assert run("plan")[0] == 0  # 1.0.0 planned as the first migration
        new.write_text(head.format(v="1.1.0") + "  - {name: qty, type: bigint}\n")
        code, planned = run("plan")
        assert code != 0, planned
        violations = [line.strip().removeprefix("✗ ") for line in out.splitlines() if "✗" in line]
        assert len(violations) == 2, out
        assert all(violation in planned for violation in violations), (violations, planned)


def test_a_typo_in_a_type_is_the_invalid_type_not_a_type_change(tmp_path: Path) -> None:
    old = REPO / "contracts/sales/customers.yaml"
    new = tmp_path / "contracts/sales/customers.yaml"
    new.parent.mkdir(parents=True)
    shutil.copy(REPO / "contracts/contracts.yml", tmp_path / "contracts/contracts.yml")
    text = old.read_text()
    assert "type: string" in text
    new.write_text(text.replace("type: string", "type: strng", 1))
    code, out = run("diff", str(old), str(new))
    assert code == 2, out
    assert "invalid type 'strng': unknown type 'strng' (did you mean 'string'?)" in out
    assert "type changed" not in out


SENSOR = """\
apiVersion: delta-contracts/v1
id: iot.sensor_readings
version: {v}
owner: {{team: iot}}
columns:
  - {{name: reading_id, type: bigint, nullable: false}}
  - {{name: humidity_pct, type: {humidity}}}
"""


def test_each_change_is_listed_once_and_a_new_column_says_its_default(tmp_path: Path) -> None:
    """Issue 38 item 11: a refused change is one ✗ line, not also a line of the classification list; an added
    column with a default says which."""
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(SENSOR.format(v="1.0.0", humidity="double"))
    new.write_text(
        SENSOR.format(v="1.1.0", humidity="float")
        + "  - {name: battery_pct, type: int, default: 100}\n  - {name: note, type: string}\n"
    )
    code, out = run("diff", str(old), str(new))
    assert code == 1, out
    lines = out.splitlines()
    type_lines = [line for line in lines if "humidity_pct type changed" in line]
    assert len(type_lines) == 1 and type_lines[0].lstrip().startswith("✗ DC-MF107"), out
    assert [line.lstrip()[0] for line in lines if line.lstrip().startswith(("✗", "DC-"))] == [
        "✗",  # the bump
        "✗",  # the refused type change
        "D",  # the additions, classified
        "D",
    ], out
    assert "nullable column battery_pct int added with default 100" in out, out
    assert "nullable column note string added\n" in out, out  # no default: none said
    assert "      and: a CAST to float can lose values" in out, out  # its second refusal, under it
    payload = json.loads(run("diff", str(old), str(new), "--format", "json")[1])
    (contract,) = payload["contracts"]  # JSON keeps every change, and the violations beside them
    assert [c["code"] for c in contract["changes"]] == ["DC-AD201", "DC-AD201", "DC-MF107"]
    assert len(contract["violations"]) == 3


def test_defaults_are_spelled_as_the_contract_spells_them_never_as_python(tmp_path: Path) -> None:
    """Issue 47 item 7: `default False` was Python's spelling; the contract says `false`."""
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(SENSOR.format(v="1.0.0", humidity="float") + "  - {name: calibrated, type: boolean}\n")
    new.write_text(
        SENSOR.format(v="1.1.0", humidity="float")
        + "  - {name: calibrated, type: boolean, default: true}\n"
        + "  - {name: faulty, type: boolean, nullable: false, default: false}\n"
    )
    code, out = run("diff", str(old), str(new), "--format", "markdown")
    assert code == 0, out
    assert "column calibrated default null -> true" in out, out
    assert "NOT NULL column faulty added with default false" in out, out
    assert "True" not in out and "False" not in out and "None" not in out, out
