"""`--engine spark` from the command line, as separate processes: the session the toolkit starts keeps its
catalog in the warehouse (a Hive metastore in Derby), so a second process sees what the first one made; a
Ctrl-C during `apply` says one line and exits 130, and the next `apply` resumes; a missing warehouse is
refused before any session starts.

Two JVMs in all (each process starts its own, with the short-lived JVM flags of the crash tests): the first
process is interrupted after its first op, the second resumes it and then runs `drift` and `status` in the
same process and session.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from tests.engine.conftest import JVM, JVM_NOISE
from tests.engine.session_conf import CHILD_SUBMIT_ARGS

pytestmark = pytest.mark.engine

PROJECT = """\
target: delta-4
migrations: ../migrations
engine: {name: spark, warehouse: ../wh}
defaults:
  owner: {team: shop}
"""
EVENTS = """\
apiVersion: delta-contracts/v1
id: catalogcli.events
version: 1.0.0
description: What shoppers did.
columns:
  - {name: event_id, type: bigint, nullable: false, description: Event key.}
  - {name: kind, type: string, checks: {enum: [view, buy]}}
  - {name: quantity, type: int, checks: {min: 0}}
"""
# The second process: `apply` (resuming), `drift` and `status` through the command line's own code, one
# after the other in one process, so that they share one JVM.
SECOND_PROCESS = textwrap.dedent(
    """
    import json, os, sys
    from typer.testing import CliRunner
    from delta_contracts.cli import app
    runner = CliRunner()
    results = []
    for args in (["apply"], ["drift"], ["status", "--format", "json"]):
        done = runner.invoke(app, args)
        results.append([done.exit_code, done.stdout, done.stderr])
    print(json.dumps(results))
    sys.stdout.flush()
    os._exit(0)
    """
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "contracts/catalogcli").mkdir(parents=True)
    (tmp_path / "contracts/contracts.yml").write_text(PROJECT)
    (tmp_path / "contracts/catalogcli/events.yaml").write_text(EVENTS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _environment(project: Path) -> dict[str, str]:
    repo = str(Path(__file__).resolve().parents[2])
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]),
        "PYTHONUNBUFFERED": "1",
        "PYSPARK_SUBMIT_ARGS": CHILD_SUBMIT_ARGS,  # JVMs that live seconds (session_conf)
        "DELTA_CONTRACTS_ENGINE": "spark",
    }


def _interrupted_apply(project: Path) -> tuple[int, list[str]]:
    """`delta-contracts apply`, sent SIGINT (Ctrl-C) as soon as it reports its first finished op, while it
    runs the next one: its exit code and what it printed to standard error."""
    process = subprocess.Popen(
        [sys.executable, "-m", "delta_contracts", "apply"],
        cwd=project,
        env=_environment(project),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines = []
    try:
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            if line.startswith("✓"):
                process.send_signal(signal.SIGINT)
                break
        lines += process.stderr.read().splitlines()
        code = process.wait(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
    return code, lines


@JVM
def test_a_second_process_sees_the_first_ones_tables_and_ctrl_c_is_one_line(project: Path) -> None:
    assert CliRunner().invoke(app, ["plan"]).exit_code == 0
    code, lines = _interrupted_apply(project)
    shown = "\n".join(lines)
    assert code == 130, shown
    assert lines[-1] == "interrupted", shown
    assert not [line for line in lines if "Traceback" in line or "reentrant" in line], shown
    assert (project / "wh/metastore_db").is_dir(), shown  # the catalog lives with the warehouse
    # What the JVM prints (spark-submit, log4j, the JDK, Hadoop) is in the warehouse's log, not on stderr.
    assert not [line for line in lines if JVM_NOISE.search(line)], shown
    assert "log4j" in (project / "wh/_delta_contracts/spark-driver.log").read_text(encoding="utf-8")

    second = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS],
        cwd=project,
        env=_environment(project),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert not JVM_NOISE.search(second.stderr), second.stderr[-3000:]
    (apply_code, applied, _), (drift_code, drift, _), (status_code, status, _) = json.loads(second.stdout)
    assert apply_code == 0, applied
    assert (drift_code, drift.splitlines()[-1]) == (0, "catalogcli.events (catalogcli.events): no drift"), (
        drift
    )
    (row,) = json.loads(status)["tables"]
    assert (status_code, row["stamped"], row["exists"], row["pending"]) == (0, "1.0.0", True, []), status


@pytest.mark.parametrize("command", ["status", "drift"])
def test_a_missing_warehouse_is_refused_on_spark(project: Path, command: str) -> None:
    """Before any session starts: a mistyped --warehouse would otherwise list every table missing and every
    migration pending (an empty catalog and no ledger), and exit 0."""
    done = CliRunner().invoke(app, [command, "--engine", "spark", "--warehouse", str(project / "no/such")])
    assert done.exit_code == 2, done.output
    assert done.stderr.splitlines()[-1] == (
        f"error: no warehouse at {project / 'no/such'}: check --warehouse (or contracts.yml "
        "engine.warehouse); this command only reads, `create` and `apply` make tables"
    )
