"""A process holding a Spark Connect (gRPC) client can still start delta-spark's JVM.

PySpark starts its JVM with `Popen(preexec_fn=...)`; with grpcio >= 1.81 such a fork from a process that has a
gRPC client aborted the child before exec about one time in eight (grpc/grpc#43055), and the local engine's
lazily started delta-spark failed with JAVA_GATEWAY_EXITED. The check forks the way PySpark does, many times,
from a fresh process whose environment does not set GRPC_ENABLE_FORK_SUPPORT: a JVM start per fork would take
minutes, and the crash tests start real JVMs from such processes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from delta_contracts.engine import GRPC_FORK_SUPPORT, without_grpc_fork_handlers
from delta_contracts.engine.spark.session import JVM_START_ATTEMPTS
from tests.engine.apply_support import REPO

pytestmark = pytest.mark.engine

FORKS = 200
CHILD = f"""
import signal, subprocess, sys
from delta_contracts.engine.local.engine import LocalEngine

with LocalEngine(sys.argv[1]) as engine:
    engine.sql("SELECT 1")  # the Connect client has talked to Sail
    failed = []
    for _ in range({FORKS}):
        # PySpark's launch_gateway: a pipe on stdin, SIGINT ignored in the child, descriptors closed
        process = subprocess.Popen(
            ["/bin/true"],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
        _, err = process.communicate()
        if process.returncode != 0:
            failed.append((process.returncode, err.decode()[-200:]))
print(len(failed), failed[:2])
"""


def run_python(code: str, argument: Path, *, unset: str, env: dict[str, str]) -> str:
    """`code` in a fresh interpreter, given `argument`, without the variable `unset`: what it printed."""
    environment = {k: v for k, v in os.environ.items() if k != unset} | env | {"PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(argument)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
        check=True,
    )
    return done.stdout.strip()


def test_forks_from_a_process_with_a_connect_client_reach_exec(tmp_path: Path) -> None:
    out = run_python(CHILD, tmp_path / "wh", unset=GRPC_FORK_SUPPORT, env={"RUST_LOG": "error"})
    count, _, samples = out.partition(" ")
    assert count == "0", f"{count} of {FORKS} forked children died before exec: {samples}"


def test_a_users_own_grpc_fork_setting_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GRPC_FORK_SUPPORT, "true")
    without_grpc_fork_handlers()
    assert os.environ[GRPC_FORK_SUPPORT] == "true"
    monkeypatch.delenv(GRPC_FORK_SUPPORT)
    without_grpc_fork_handlers()
    assert os.environ[GRPC_FORK_SUPPORT] == "false"


# A `java` that dies before the JVM starts, as a child aborted between fork and exec does, the first
# `failures` times it is started, and runs the real one after that.
FLAKY_JAVA = """#!/bin/sh
count=$(cat "{counter}" 2>/dev/null || echo 0)
echo $((count + 1)) > "{counter}"
if [ "$count" -lt {failures} ]; then exit 134; fi
exec {java} "$@"
"""
START = """
import sys
from pathlib import Path
from delta_contracts.engine.base import EngineError
from delta_contracts.engine.spark.session import _start_session

try:
    spark = _start_session("jvm-start", {"spark.ui.enabled": "false"}, Path(sys.argv[1]))
except EngineError as err:
    print("error:", err)
else:
    print("started:", spark.range(3).count())
"""


def start_with_flaky_java(tmp_path: Path, failures: int) -> tuple[str, int]:
    real_java = shutil.which("java")
    assert real_java is not None
    java_home = tmp_path / "jdk"
    (java_home / "bin").mkdir(parents=True)
    java = java_home / "bin" / "java"
    counter = tmp_path / "starts"
    java.write_text(FLAKY_JAVA.format(counter=counter, failures=failures, java=real_java))
    java.chmod(0o755)
    out = run_python(
        START, tmp_path / "jvm.log", unset="PYSPARK_SUBMIT_ARGS", env={"JAVA_HOME": str(java_home)}
    )
    return out, int(counter.read_text())


def test_a_jvm_that_dies_before_it_sends_its_port_is_started_again(tmp_path: Path) -> None:
    out, starts = start_with_flaky_java(tmp_path, failures=JVM_START_ATTEMPTS - 1)
    assert out == "started: 3"
    # the last attempt runs java twice: spark-class's launcher, which prints the JVM's command, then the JVM
    assert starts == JVM_START_ATTEMPTS + 1


def test_a_jvm_that_never_starts_is_one_error_after_the_last_attempt(tmp_path: Path) -> None:
    out, starts = start_with_flaky_java(tmp_path, failures=JVM_START_ATTEMPTS + 5)
    assert out.startswith("error: the Spark session did not start: [JAVA_GATEWAY_EXITED]"), out
    assert f"(the JVM's output: {tmp_path / 'jvm.log'})" in out
    assert starts == JVM_START_ATTEMPTS
