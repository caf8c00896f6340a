"""A Structured Streaming producer that keeps writing while `apply` migrates its table
(tests/engine/test_streaming_writers.py).

A separate process, forked from the crash tests' fork server (`apply_child.fork_server`), with a Spark Connect
session of its own on the suite's server: a `rate-micro-batch` source (ROWS_PER_BATCH rows a batch, its
`value` column counting up from 0 across batches and restarts from the same checkpoint) written by a plain
`writeStream.format("delta")…toTable(<name>)` with a checkpoint. It does what docs/migrations.md ("Streaming
producers") says a streaming producer does: it checks the stamp while it runs and, when the stamp of the new
contract version appears, stops the query and starts it again from the same checkpoint writing the new shape
to the new table; a query that fails (the table changed under it) is started again the same way, after
checking the stamp. What it met is logged, one JSON object per line: `{"started": <table>, "shape": "old"}`
(or "new"), `{"failed": <the error's first line>}`, `{"switched": <table>}`.

SPEC: url; table and switch_to (the table before and after the stamp; the same for an in-place migration);
stamp_table and stamp_version (the stamp to watch); old_shape and new_shape (the select expressions over the
rate source's `value` and `timestamp` that make a row of each shape); checkpoint (the query's checkpoint
folder); log (the event file).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from pyspark.sql.connect.session import SparkSession

from delta_contracts.sql import expressions as x
from tests.engine.live_writer import stamped

ROWS_PER_BATCH = 5
TRIGGER = "500 milliseconds"
POLL_SECONDS = 0.5  # how often it looks at the query and the stamp
MAX_FAILURES = 200  # in a row: a query that can never run again fails the test


def _first_line(err: BaseException | Any) -> str:
    text = str(err).strip()
    return text.splitlines()[0][:300] if text else type(err).__name__


def start(session: Any, spec: dict[str, Any], table: list[str], shape: list[str]) -> Any:
    rows = session.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS_PER_BATCH).load()
    return (
        rows.selectExpr(*shape)
        .writeStream.format("delta")
        .option("checkpointLocation", spec["checkpoint"])
        .trigger(processingTime=TRIGGER)
        .toTable(x.sql(x.table(table)))
    )


def stream_main(spec: dict[str, Any], output: str, ready: Any, stop: Any) -> None:
    """The forked child's body: streams until `stop` is set; `ready` is set once its first query started.
    Exits 0, or 1 when its query failed MAX_FAILURES times in a row."""
    sys.stdout.flush()
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    session = SparkSession.builder.remote(spec["url"]).create()
    switched, failures = False, 0
    with open(spec["log"], "a", encoding="utf-8") as log:

        def note(**event: Any) -> None:
            log.write(json.dumps(event) + "\n")
            log.flush()

        while not stop.is_set():
            switched = switched or stamped(session, spec)
            table = spec["switch_to"] if switched else spec["table"]
            try:
                query = start(session, spec, table, spec["new_shape"] if switched else spec["old_shape"])
            except Exception as err:  # the table is gone, or a view, until the stamp names the new one
                failures += 1
                note(failed=_first_line(err))
                if failures >= MAX_FAILURES:
                    os._exit(1)
                stop.wait(POLL_SECONDS)
                continue
            note(started=".".join(table), shape="new" if switched else "old")
            ready.set()
            while not stop.is_set() and query.isActive:
                if not switched and stamped(session, spec):
                    switched = True
                    query.stop()  # started again at once from the same checkpoint, on the new table
                    note(switched=".".join(spec["switch_to"]))
                    break
                stop.wait(POLL_SECONDS)
            if stop.is_set():
                query.stop()
                break
            error = query.exception()
            if error is None or query.lastProgress is not None:
                failures = 0  # it ran: the failures in a row start again
            if error is not None:
                failures += 1
                note(failed=_first_line(error))
                if failures >= MAX_FAILURES:
                    os._exit(1)
    print("stopped")
    sys.stdout.flush()
    os._exit(0)
