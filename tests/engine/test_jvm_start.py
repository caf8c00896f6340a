"""A process holding a Spark Connect (gRPC) client can still start delta-spark's JVM.

PySpark starts its JVM with `Popen(preexec_fn=...)`; with grpcio >= 1.81 such a fork from a process that has a
gRPC client aborted the child before exec about one time in eight (grpc/grpc#43055), and the local engine's
lazily started delta-spark failed with JAVA_GATEWAY_EXITED. The check forks the way PySpark does, many times,
from a fresh process whose environment does not set GRPC_ENABLE_FORK_SUPPORT: a JVM start per fork would take
minutes, and the crash tests start real JVMs from such processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from delta_contracts.engine.spark import GRPC_FORK_SUPPORT, without_grpc_fork_handlers
from tests.engine.apply_support import REPO

pytestmark = pytest.mark.engine

FORKS = 200
CHILD = f"""
import signal, subprocess, sys
from delta_contracts.engine.local import LocalEngine

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


def test_forks_from_a_process_with_a_connect_client_reach_exec(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != GRPC_FORK_SUPPORT}
    env |= {"PYTHONPATH": str(REPO), "RUST_LOG": "error"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "wh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    count, _, samples = done.stdout.strip().partition(" ")
    assert count == "0", f"{count} of {FORKS} forked children died before exec: {samples}"


def test_a_users_own_grpc_fork_setting_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GRPC_FORK_SUPPORT, "true")
    without_grpc_fork_handlers()
    assert os.environ[GRPC_FORK_SUPPORT] == "true"
    monkeypatch.delenv(GRPC_FORK_SUPPORT)
    without_grpc_fork_handlers()
    assert os.environ[GRPC_FORK_SUPPORT] == "false"
