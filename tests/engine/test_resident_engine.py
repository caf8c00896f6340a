"""The resident engine (issue 49): `engine start|status|stop` runs one Spark Connect server with delta-spark
per warehouse, and `--engine spark` commands on that warehouse use it instead of a JVM of their own.

That a command used the server and started no JVM is shown by the catalog: the server holds the embedded
Derby metastore, which admits one process, so a command that opened its own session would be refused
(`catalog is locked`) and would write its JVM's output to `_delta_contracts/spark-driver.log`; it instead
reads a table the test made through the server, and no such log exists. Its wall time is printed too.

`make test` runs start, reuse by a second process and stop (one server: ~15-20 s on a quiet 2-core machine);
the stale record, idle stop and two warehouses at once are the exhaustive tier's.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engine.conftest import JVM, JVM_NOISE
from tests.tiers import EXHAUSTIVE

pytestmark = [pytest.mark.engine, JVM]

REPO = Path(__file__).resolve().parents[2]
PROJECT = """\
target: delta-4
migrations: ../migrations
engine:
  name: spark
  warehouse: ../wh
"""
EVENTS = """\
apiVersion: delta-contracts/v1
id: resident.events
version: 1.0.0
description: What shoppers did.
owner: {team: shop}
columns:
  - {name: event_id, type: bigint, nullable: false, description: Event key.}
  - {name: kind, type: string, description: What happened.}
"""


def project(root: Path) -> Path:
    (root / "contracts/resident").mkdir(parents=True)
    (root / "contracts/contracts.yml").write_text(PROJECT)
    (root / "contracts/resident/events.yaml").write_text(EVENTS)
    (root / "wh").mkdir()
    return root


def cli(root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    return subprocess.run(
        [sys.executable, "-m", "delta_contracts", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def record(warehouse: Path) -> dict[str, object] | None:
    path = warehouse / "_delta_contracts" / "engine.json"
    return json.loads(path.read_text()) if path.exists() else None


def port_open(url: str) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=1):
            return True
    except OSError:
        return False


def listens(url: str, within: float = 10.0) -> bool:
    """Whether a socket here still LISTENs on the url's port, `within` seconds after a stop.

    Read from /proc/net/tcp, not by connecting: a connect to a closed port in the ephemeral range can
    succeed by a TCP self-connect, and another test's JVM may bind the port a moment after it is freed.
    """
    port = int(url.rsplit(":", 1)[1])
    deadline = time.monotonic() + within
    while True:
        found = False
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                # state "0A" = LISTEN
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    found = True
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state not in {"Z", "X"}


def make_table(url: str, name: str, rows: int) -> None:
    """A Delta table with rows, made through the server (as a notebook connected to it would)."""
    from delta_contracts.engine.spark.connect import connect_session

    spark = connect_session(url)
    try:
        schema = name.split(".")[0]
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        spark.sql(f"CREATE TABLE {name} (event_id BIGINT NOT NULL, kind STRING) USING delta")
        spark.sql(f"INSERT INTO {name} SELECT id, 'view' FROM range({rows})")
    finally:
        spark.stop()


def started(root: Path, *args: str) -> dict[str, object]:
    done = cli(root, "engine", "start", "--contracts", "contracts", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("started: sc://127.0.0.1:"), done.stdout
    assert not JVM_NOISE.search(done.stdout + done.stderr), done.stdout + done.stderr
    found = record(root / "wh")
    assert found is not None
    return found


def test_a_second_process_uses_the_resident_engine_and_stop_ends_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    wh = root / "wh"
    server = started(root, "--idle", "10m")
    url, pid = str(server["url"]), int(str(server["pid"]))
    assert set(server) >= {"url", "pid", "started", "idle_seconds"} and server["idle_seconds"] == 600
    assert alive(pid) and port_open(url)
    assert cli(root, "engine", "status").stdout.splitlines()[0] == f"running: {url}"
    again = cli(root, "engine", "start", "--contracts", "contracts")
    assert again.returncode == 0 and again.stdout.startswith(f"already running: {url}"), again.stdout

    try:
        make_table(url, "resident.events", 3)
        reused_by_a_second_process(root, wh)
    except BaseException:
        cli(root, "engine", "stop")
        raise
    stopped = cli(root, "engine", "stop")

    assert stopped.returncode == 0 and stopped.stdout.startswith(f"stopped: {url}"), stopped.stdout
    assert record(wh) is None and not alive(pid) and not listens(url)
    gone = cli(root, "engine", "status")
    assert gone.returncode == 1 and gone.stdout.startswith("not running"), gone.stdout


def reused_by_a_second_process(root: Path, wh: Path) -> None:
    clock = time.perf_counter()
    status = cli(root, "status", "contracts", "--engine", "spark")
    took = time.perf_counter() - clock
    print(f"status --engine spark through the resident engine: {took:.1f} s")
    assert status.returncode == 0, status.stdout + status.stderr
    assert "resident.events" in status.stdout and "not created" not in status.stdout, status.stdout
    assert not JVM_NOISE.search(status.stdout + status.stderr), status.stderr
    assert not (wh / "_delta_contracts" / "spark-driver.log").exists()  # no JVM of its own was started


@EXHAUSTIVE
def test_a_stale_record_is_said_in_one_line_and_the_command_starts_its_own_session(tmp_path: Path) -> None:
    root = project(tmp_path)
    wh = root / "wh"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (wh / "_delta_contracts").mkdir()
    stale = {
        "url": f"sc://127.0.0.1:{port}",
        "pid": dead.pid,
        "watcher": dead.pid,
        "started": "2026-01-01T00:00:00+00:00",
        "idle_seconds": 60.0,
        "settings": {},
    }
    (wh / "_delta_contracts" / "engine.json").write_text(json.dumps(stale))
    assert cli(root, "engine", "status").returncode == 1
    status = cli(root, "status", "contracts", "--engine", "spark")
    assert status.returncode == 0, status.stdout + status.stderr
    notes = [line for line in status.stderr.splitlines() if "resident engine" in line]
    assert len(notes) == 1 and f"its process {dead.pid} is not running" in notes[0], status.stderr
    assert "resident.events" in status.stdout and "not created" in status.stdout, status.stdout
    assert (wh / "_delta_contracts" / "spark-driver.log").exists()  # its own JVM
    assert record(wh) is None  # forgotten: the next command does not say it again


@EXHAUSTIVE
def test_the_resident_engine_stops_itself_when_idle(tmp_path: Path) -> None:
    root = project(tmp_path)
    server = started(root, "--idle", "5s")
    pid = int(str(server["pid"]))
    deadline = time.monotonic() + 120
    while record(root / "wh") is not None and time.monotonic() < deadline:
        time.sleep(1)
    assert record(root / "wh") is None
    assert not alive(pid) and not listens(str(server["url"]))


@EXHAUSTIVE
def test_two_warehouses_each_have_their_own_resident_engine(tmp_path: Path) -> None:
    first, second = project(tmp_path / "a"), project(tmp_path / "b")
    one, two = started(first, "--idle", "10m"), started(second, "--idle", "10m")
    try:
        assert one["url"] != two["url"] and one["pid"] != two["pid"]
        make_table(str(one["url"]), "resident.events", 2)
        seen_first = cli(first, "status", "contracts", "--engine", "spark")
        seen_second = cli(second, "status", "contracts", "--engine", "spark")
        assert seen_first.returncode == 0 and seen_second.returncode == 0, (
            seen_first.stderr + seen_second.stderr
        )
        assert "not created" not in seen_first.stdout, seen_first.stdout
        assert "not created" in seen_second.stdout, seen_second.stdout  # the other catalog's table
        for root in (first, second):
            assert not (root / "wh" / "_delta_contracts" / "spark-driver.log").exists()
    finally:
        cli(first, "engine", "stop")
        cli(second, "engine", "stop")
    assert record(first / "wh") is None and record(second / "wh") is None
