"""Several processes on one catalog of `--engine spark` (issue 37, item 5).

The embedded Derby metastore the toolkit keeps in the warehouse admits one process: a second one is refused
at its start, exit 2, naming the locked database and the way out, with no traceback and none of the JVM's
lines. A Derby network server (started here as a user starts it, docs/engines.md) is a metastore every
process shares: a producer appends through the table's catalog name while `apply` migrates the table in
another process, and every row it committed is in the table.

Each test runs two processes with a JVM of their own (the short-lived JVM flags of the crash tests), side by
side: about 30-60 s each on a quiet 2-core machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.state.ledger import Ledger
from tests.engine.conftest import JVM, JVM_NOISE, log_state
from tests.engine.session_conf import CHILD_SUBMIT_ARGS
from tests.tiers import EXHAUSTIVE

pytestmark = [pytest.mark.engine, JVM]

REPO = Path(__file__).resolve().parents[2]
PROJECT = """\
target: delta-4
migrations: ../migrations
engine:
  name: spark
  warehouse: ../wh
{spark_conf}defaults:
  owner: {{team: shop}}
"""
EVENTS = """\
apiVersion: delta-contracts/v1
id: catalogcli.events
version: {version}
description: What shoppers did.
columns:
  - {{name: event_id, type: bigint, nullable: false, description: Event key.}}
  - {{name: kind, type: string, checks: {{enum: [view, buy]}}}}
"""
QUANTITY = "  - {name: quantity, type: int, checks: {min: 0}}\n"


def write_project(root: Path, spark_conf: dict[str, str] | None = None) -> Path:
    (root / "contracts/catalogcli").mkdir(parents=True)
    conf = "".join(f"    {key}: '{value}'\n" for key, value in (spark_conf or {}).items())
    (root / "contracts/contracts.yml").write_text(
        PROJECT.format(spark_conf=f"  spark_conf:\n{conf}" if conf else "")
    )
    (root / "contracts/catalogcli/events.yaml").write_text(EVENTS.format(version="1.0.0"))
    (root / "wh").mkdir()
    return root


def environment() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "PYTHONUNBUFFERED": "1",
        "PYSPARK_SUBMIT_ARGS": CHILD_SUBMIT_ARGS,  # JVMs that live seconds (session_conf)
        "DELTA_CONTRACTS_ENGINE": "spark",
    }


def second_process(root: Path, role: str, spec: dict[str, str], output: Path) -> subprocess.Popen[bytes]:
    with output.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.engine.catalog_process", role, json.dumps(spec)],
            cwd=root,
            env=environment(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_for(path: Path, process: subprocess.Popen[bytes], output: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the second process did not get ready: {output.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)


def ended(process: subprocess.Popen[bytes], timeout: float = 300) -> int:
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_second_process_on_the_embedded_metastore_is_refused_naming_the_lock(project: Path) -> None:
    """While one process has the warehouse's embedded metastore open, `status` in a second one exits 2 with
    one line that names the locked database and the way out (before: exit 1, a 48-line traceback ending in
    `Unable to instantiate … SessionHiveMetaStoreClient`, Derby's reason only in derby.log)."""
    write_project(project)
    ready, stop = project / "ready", project / "stop"
    spec = {"warehouse": str(project / "wh"), "ready": str(ready), "stop": str(stop)}
    holder = second_process(project, "hold", spec, project / "holder.out")
    try:
        wait_for(ready, holder, project / "holder.out")
        done = subprocess.run(
            [sys.executable, "-m", "delta_contracts", "status"],
            cwd=project,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        stop.touch()
        assert ended(holder) == 0, (project / "holder.out").read_text(errors="replace")
    shown = done.stderr
    assert done.returncode == 2, shown[-3000:]
    database = (project / "wh/metastore_db").resolve()
    assert shown.splitlines()[-1] == (
        f"error: cannot start the spark engine: the catalog is locked: another process has the embedded "
        f"Derby metastore {database} open, and Derby lets one process at a time use it. Run this command "
        "when that one has ended, or give every process that uses this catalog a shared metastore (a Derby "
        'network server or a Hive metastore service: docs/engines.md, "A catalog several processes can '
        'use")'
    ), shown
    assert "Traceback" not in shown and not JVM_NOISE.search(shown), shown
    assert done.stdout == "", done.stdout


@pytest.fixture
def derby_url(tmp_path: Path) -> Iterator[str]:
    from tests.engine.derby_server import derby_server

    with derby_server(tmp_path / "derby", tmp_path / "derby-server.log") as address:
        yield f"jdbc:derby://{address}/metastore;create=true"


# Two JVMs side by side and a Derby server, two minutes: exhaustive (the embedded metastore's lock refusal
# above stays in `make test`).
@EXHAUSTIVE
def test_a_producer_writes_through_catalog_names_while_apply_runs_in_another_process(
    project: Path, derby_url: str
) -> None:
    """With the metastore in a Derby network server (the URL alone in contracts.yml: the toolkit turns Hive
    support on and puts Derby's client driver on the class path), a producer in one process appends to
    `catalogcli.events` by name while `apply` adds a column and a CHECK in another; both exit 0, every row the
    producer committed is in the table once, and some of them were committed while `apply`'s ops ran."""
    write_project(project, {"spark.hadoop.javax.jdo.option.ConnectionURL": derby_url})
    assert CliRunner().invoke(app, ["plan"]).exit_code == 0
    (project / "contracts/catalogcli/events.yaml").write_text(EVENTS.format(version="1.1.0") + QUANTITY)
    assert CliRunner().invoke(app, ["plan"]).exit_code == 0
    ready, stop, log = project / "ready", project / "stop", project / "committed.jsonl"
    spec = {"ready": str(ready), "stop": str(stop), "log": str(log), "table": "catalogcli.events"}
    producer = second_process(project, "produce", spec, project / "producer.out")
    try:
        wait_for(ready, producer, project / "producer.out")  # its table made, its first rows committed
        applied = subprocess.run(
            [sys.executable, "-m", "delta_contracts", "apply"],
            cwd=project,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        applied_at = time.time()
        while not [c for c in _commits(log) if c["at"] > applied_at + 1]:  # it goes on writing after
            if producer.poll() is not None:
                break
            time.sleep(0.2)
    finally:
        stop.touch()
        produced = ended(producer)
    said = (project / "producer.out").read_text(errors="replace")
    assert applied.returncode == 0, applied.stderr[-3000:]
    assert "Traceback" not in applied.stderr and not JVM_NOISE.search(applied.stderr), applied.stderr
    assert produced == 0, said
    assert "committed" in said.splitlines()[-1], said

    commits = _commits(log)
    committed = [i for c in commits for i in c["ids"]]
    state = log_state(str(project / "wh/catalogcli.db/events"))
    assert state["configuration"]["delta_contracts.version"] == "1.1.0"
    assert "quantity" in state["fields"]
    from deltalake import DeltaTable

    rows = DeltaTable(str(project / "wh/catalogcli.db/events")).to_pyarrow_table(columns=["event_id"])
    assert sorted(rows.column("event_id").to_pylist()) == sorted(committed)  # none lost, none twice
    # Some of them were committed while the migration's ops ran, as the ledger times them.
    ops = [
        e
        for e in Ledger(project / "wh/_delta_contracts").entries(["catalogcli.events"])
        if e.migration_id.startswith("0002_")
    ]
    first = min(e.started_at for e in ops if e.started_at is not None)
    last = max(e.ended_at for e in ops if e.ended_at is not None)
    during = [c for c in commits if first <= datetime.fromtimestamp(c["at"], first.tzinfo) <= last]
    assert during, (first, last, [c["at"] for c in commits], said)


def _commits(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
