"""A second process on the catalog of `--engine spark` (tests/engine/test_shared_metastore.py), run as
`python -m tests.engine.catalog_process ROLE SPEC_JSON` in the project's folder.

`hold`: starts the session `--engine spark` starts for the warehouse, runs a statement on its catalog (which
opens the metastore), writes the file `ready`, and keeps the session until the file `stop` exists.

`produce`: a producer's job. It first brings its table to the contract's first version with `apply --to
1.0.0`, in its own process and session (as a deploy step before the job), then appends rows through the
table's catalog name, `table`, every CADENCE_SECONDS until the file `stop` exists. A write is logged (one JSON
line with its ids and the time it returned) only once the INSERT returned, that is once Delta committed it; a
failed write (a concurrent metadata change of `apply`) is retried. `ready` is written after the first commit.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

CADENCE_SECONDS = 1.0
MAX_FAILURES = 100  # in a row


def hold(spec: dict[str, Any]) -> int:
    from delta_contracts.engine.spark.session import command_line_session

    session = command_line_session(Path(spec["warehouse"]), {}, {})
    session.sql("SHOW TABLES IN default").collect()  # a command's first statement opens the metastore
    Path(spec["ready"]).touch()
    _wait_for(Path(spec["stop"]))
    return 0


def produce(spec: dict[str, Any]) -> int:
    from pyspark.sql import SparkSession
    from typer.testing import CliRunner

    from delta_contracts.cli import app

    done = CliRunner().invoke(app, ["apply", "--to", "1.0.0"])
    if done.exit_code != 0:
        print(f"apply --to 1.0.0 exited {done.exit_code}: {done.output}")
        return 1
    session = SparkSession.getActiveSession()
    assert session is not None
    stop, n, failures, retried = Path(spec["stop"]), 0, 0, 0
    with open(spec["log"], "a", encoding="utf-8") as log:
        while not stop.exists():
            ids = [n, n + 1]
            values = ", ".join(f"({i}, '{'view' if i % 2 else 'buy'}')" for i in ids)
            try:
                session.sql(f"INSERT INTO {spec['table']} (event_id, kind) VALUES {values}").collect()
            except Exception as err:  # not committed: retry at once
                failures += 1
                retried += 1
                print(f"write failed: {str(err).splitlines()[0][:200]}", flush=True)
                if failures >= MAX_FAILURES:
                    print("giving up", flush=True)
                    return 1
                continue
            failures = 0
            log.write(json.dumps({"ids": ids, "at": time.time()}) + "\n")
            log.flush()
            Path(spec["ready"]).touch()
            n += 2
            time.sleep(CADENCE_SECONDS)
    print(f"committed {n} rows, {retried} failed writes retried", flush=True)
    return 0


def _wait_for(path: Path, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)


if __name__ == "__main__":
    role, spec = sys.argv[1], json.loads(sys.argv[2])
    code = {"hold": hold, "produce": produce}[role](spec)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the JVM and its threads go with the process, without interpreter teardown
