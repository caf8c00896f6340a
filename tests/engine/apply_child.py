"""A separate `apply` process for the crash and race tests, forked from a server that has imported this
module (`fork_server`): the interpreter, PySpark's Connect client, pandas, delta-rs and sqlglot are loaded
once per test run instead of once per process (about 2 s of each of the crash test's 130-odd processes).
Each child opens its engine afresh (Sail, or a Connect session), so nothing it runs is shared.

SPEC: warehouse, migrations, contract, to_version, force_reason, batch_rows, kill_on (SIGKILL itself at the
boundary of that name), killed_log (where the boundary it died at is appended), hold_until (a file: at the
first boundary, the lease taken, wait until it exists, so that a racing process meets the lease), engine
(`local`, the default, or `connect`: a session on the Spark Connect server with delta-spark at `url`, whose
catalog outlives the process), delta_spark_url (`local`: the Connect server its delta-spark ops go to),
insert_rows (after applying, load the test rows), names (an environment's name mapping: NameMapping's
fields), before (specs of applies to
run first in the same process and engine, each of which must succeed). The process exits with apply's exit
code.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Loaded here, so that the fork server holds them before it forks (see the module docstring).
import pysail.spark  # noqa: F401
import pyspark.sql.connect.session  # noqa: F401

from delta_contracts.apply import apply
from delta_contracts.contract.environments import NameMapping
from delta_contracts.engine import without_grpc_fork_handlers
from delta_contracts.engine.local.engine import LocalEngine
from tests.engine.apply_support import insert_rows
from tests.engine.recipe_run import create_schema

if TYPE_CHECKING:
    from delta_contracts.engine.base import Engine


def run_spec(spec: dict[str, Any]) -> int:
    with _engine(spec) as engine:
        for step in spec.get("before", ()):
            code = _apply(engine, {**spec, "kill_on": None, **step})
            if code != 0:
                return code
        return _apply(engine, spec)


def forked_main(spec: dict[str, Any], output: str) -> None:
    """A forked child's body: what it prints goes to `output`; it exits with apply's exit code."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    code = run_spec(spec)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # as a process that ends: no interpreter teardown of the server's inherited state


def fork_server() -> BaseContext:
    """The multiprocessing context whose children are forked from a server holding this module. The server is
    a fresh interpreter (not a fork of pytest, which runs JVMs and threads)."""
    without_grpc_fork_handlers()  # the server imports gRPC before any engine runs (grpc/grpc#43055)
    os.environ.setdefault("RUST_LOG", "error")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])  # the server is given pytest's sys.path, which holds the repo
    return context


def _apply(engine: Engine, spec: dict[str, Any]) -> int:
    seen = 0

    def boundary(name: str) -> None:
        nonlocal seen
        seen += 1
        if seen == 1 and spec.get("hold_until"):
            wait_for(Path(spec["hold_until"]))
        if name == spec.get("kill_on"):
            with Path(spec["killed_log"]).open("a", encoding="utf-8") as log:
                log.write(name + "\n")
            os.kill(os.getpid(), signal.SIGKILL)

    result = apply(
        engine,
        spec["migrations"],
        tables=[spec["contract"]],
        to_version=spec.get("to_version"),
        force_reason=spec.get("force_reason"),
        batch_rows=spec.get("batch_rows", 1_000_000),
        on_boundary=boundary,
        names=NameMapping(**spec["names"]) if spec.get("names") else None,
    )
    if spec.get("insert_rows") and result.exit_code == 0:
        insert_rows(engine, spec["contract"].split(".")[0])
    for held in result.held:
        print(f"held by another runner: {held}")
    if result.failure is not None:
        print(f"failed: {result.failure.summary}: {result.failure.detail}")
    for contract, error in result.refused:
        print(f"refused {contract}: {error}")
    return result.exit_code


def wait_for(release: Path, timeout: float = 600) -> None:
    """Until the test creates `release`; at the deadline the child goes on, and the test's asserts say why."""
    deadline = time.monotonic() + timeout
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def _engine(spec: dict[str, Any]) -> Engine:
    warehouse = Path(spec["warehouse"])
    if spec.get("engine", "local") == "local":
        return LocalEngine(warehouse, delta_spark_url=spec.get("delta_spark_url"))
    from delta_contracts.engine.spark.connect import connect_engine

    engine = connect_engine(spec["url"], warehouse / "_delta_contracts")
    # delta-spark does not create schemas for CREATE TABLE
    for step in [spec, *spec.get("before", ())]:
        create_schema(engine, step["contract"].split(".")[0])
    return engine
