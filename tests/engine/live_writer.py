"""A producer that keeps writing while `apply` migrates its table (tests/engine/test_live_writers.py).

A separate process, forked from the crash tests' fork server (`apply_child.fork_server`), with a Spark
Connect session of its own on the suite's server. It does what docs/migrations.md ("Writers during a
migration") tells a producer to do: write the shape and the table of the contract version the table is
stamped with, check the stamp before each write, and after a failed write check it again and retry. A write
is counted (appended to its log, one JSON row per line, in the shape readers get through the contract's name)
only once the statement returned, that is once Delta committed it.

SPEC: url; table (where it writes first) and switch_to (where it writes once the stamp appears; the same
table for an in-place migration); stamp_table and stamp_version (the stamp to watch); old_columns and
new_columns ({column: source field}) saying which column carries which field of a row before and after the
stamp; mode (`append`: INSERT INTO; `merge`: MERGE on txn_id, re-merging its previous rows unchanged and
inserting new ones; `upsert`: a change data capture producer, each MERGE on txn_id inserting new keys,
updating up to UPDATES_PER_COMMIT of its existing keys to new values and deleting one: its log then holds
every committed change, a deleted key as `{"txn_id": …, "deleted": true}`, so the last entry of a key is its
value); name (prefix of its txn ids); log (the file of committed rows); cadence (optional: the
seconds between two commits, CADENCE_SECONDS when absent, 0 for back to back); ignore_hold (optional: true
for a producer that never looks at the hold).

Before each write it also waits while the table it writes is held (`delta_contracts.hold` in its
`TBLPROPERTIES` names an instant still to come), and checks the stamp again once the hold is over, as
docs/migrations.md asks of producers, unless told to ignore the hold.
"""

from __future__ import annotations

import json
import os
import random
import sys
from datetime import UTC, date, datetime
from typing import Any

from pyspark.sql.connect.session import SparkSession
from sqlglot import exp

from delta_contracts.live import held_until
from delta_contracts.marks import HOLD
from delta_contracts.sql import expressions as x

ROWS_PER_COMMIT = 2
# A producer's cadence, as a micro-batch job's: Delta OSS checks every UPDATE, MERGE or ADD CONSTRAINT
# against the appends committed while it ran (Serializable, the only isolation level it supports), so a
# statement of `apply` commits only between two appends to the partitions it reads (docs/migrations.md).
CADENCE_SECONDS = 2.0
MAX_FAILURES = 400  # in a row: a writer that can never write again fails the test


def row(name: str, n: int) -> dict[str, Any]:
    """The n-th row of a writer, as readers see it through the contract's name (its fields by role)."""
    return {
        "txn_id": f"{name}-{n}",
        "amount": 100 + n,
        "attempts": n % 5,
        "status": "OK",
        "legacy_channel": "app",
        "txn_date": date(2026, 11, 1 + n % 3),
        "region": "north",
    }


def _values(rows: list[dict[str, Any]], columns: dict[str, str]) -> exp.Values:
    return exp.Values(
        expressions=[exp.Tuple(expressions=[x.literal(r[field]) for field in columns.values()]) for r in rows]
    )


def insert(table: list[str], rows: list[dict[str, Any]], columns: dict[str, str]) -> str:
    statement = exp.insert(_values(rows, columns), x.table(table), columns=[x.ident(c) for c in columns])
    return x.sql(statement)


def merge(table: list[str], rows: list[dict[str, Any]], columns: dict[str, str]) -> str:
    source = exp.select(exp.Star()).from_(
        exp.Subquery(
            this=_values(rows, columns),
            alias=exp.TableAlias(this=x.ident("v"), columns=[x.ident(c) for c in columns]),
        )
    )
    target = x.table(table)
    target.set("alias", exp.TableAlias(this=x.ident("t")))
    key = exp.EQ(
        this=exp.Column(this=x.ident("txn_id"), table=x.ident("t")),
        expression=exp.Column(this=x.ident("txn_id"), table=x.ident("s")),
    )
    names = list(columns)
    update = exp.Update(
        expressions=[
            exp.EQ(
                this=exp.Column(this=x.ident(c), table=x.ident("t")),
                expression=exp.Column(this=x.ident(c), table=x.ident("s")),
            )
            for c in names
        ]
    )
    insert_values = exp.Insert(
        this=exp.Tuple(expressions=[x.column(c) for c in names]),
        expression=exp.Tuple(expressions=[exp.Column(this=x.ident(c), table=x.ident("s")) for c in names]),
    )
    statement = exp.Merge(
        this=target,
        using=exp.Subquery(this=source, alias=exp.TableAlias(this=x.ident("s"))),
        on=key,
        whens=exp.Whens(
            expressions=[
                exp.When(matched=True, source=False, then=update),
                exp.When(matched=False, source=False, then=insert_values),
            ]
        ),
    )
    return x.sql(statement)


UPDATES_PER_COMMIT = 2
DELETED = "deleted"


def upsert(table: list[str], changes: list[dict[str, Any]], columns: dict[str, str]) -> str:
    """MERGE on txn_id: a change marked DELETED deletes its key, the others update or insert their row."""
    fields = {**columns, DELETED: DELETED}
    values = exp.Values(
        expressions=[
            exp.Tuple(
                expressions=[
                    x.literal(bool(r.get(DELETED))) if f == DELETED else x.literal(r.get(f))
                    for f in fields.values()
                ]
            )
            for r in changes
        ]
    )
    source = exp.select(exp.Star()).from_(
        exp.Subquery(
            this=values,
            alias=exp.TableAlias(this=x.ident("v"), columns=[x.ident(c) for c in fields]),
        )
    )
    target = x.table(table)
    target.set("alias", exp.TableAlias(this=x.ident("t")))

    def col(table: str, name: str) -> exp.Column:
        return exp.Column(this=x.ident(name), table=x.ident(table))

    deleted = col("s", DELETED)
    names = list(columns)
    statement = exp.Merge(
        this=target,
        using=exp.Subquery(this=source, alias=exp.TableAlias(this=x.ident("s"))),
        on=exp.EQ(this=col("t", "txn_id"), expression=col("s", "txn_id")),
        whens=exp.Whens(
            expressions=[
                exp.When(matched=True, source=False, condition=deleted, then=exp.var("DELETE")),
                exp.When(
                    matched=True,
                    source=False,
                    then=exp.Update(
                        expressions=[exp.EQ(this=col("t", c), expression=col("s", c)) for c in names]
                    ),
                ),
                exp.When(
                    matched=False,
                    source=False,
                    condition=exp.Not(this=deleted),
                    then=exp.Insert(
                        this=exp.Tuple(expressions=[x.column(c) for c in names]),
                        expression=exp.Tuple(expressions=[col("s", c) for c in names]),
                    ),
                ),
            ]
        ),
    )
    return x.sql(statement)


def changes_of(name: str, n: int, live: dict[str, dict[str, Any]], rng: Any) -> list[dict[str, Any]]:
    """One commit of an upserting producer: ROWS_PER_COMMIT new keys, updates of some of its existing keys
    (every field but the key and the date changed) and the deletion of one."""
    fresh = [row(name, n + i) for i in range(ROWS_PER_COMMIT)]
    existing = sorted(live)
    touched = rng.sample(existing, min(len(existing), UPDATES_PER_COMMIT + 1))
    changes: list[dict[str, Any]] = []
    for k, key in enumerate(touched):
        if k == 0 and len(existing) > 3:
            changes.append({"txn_id": key, DELETED: True})
            continue
        value = n * 10 + k
        changes.append(
            {
                **live[key],
                "amount": 10_000_000 + value,
                "attempts": value % 5,
                "status": "FAILED" if value % 2 else "OK",
                "legacy_channel": f"u{value}",
            }
        )
    return changes + fresh


def properties_of(session: Any, table: list[str]) -> dict[str, str]:
    try:
        rows = session.sql(f"SHOW TBLPROPERTIES {x.sql(x.table(table))}").collect()
    except Exception:  # not made yet, or renamed away
        return {}
    return {str(r["key"]): str(r["value"]) for r in rows}


def stamped(session: Any, spec: dict[str, Any]) -> bool:
    return properties_of(session, spec["stamp_table"]).get("delta_contracts.version") == str(
        spec["stamp_version"]
    )


def wait_while_held(session: Any, table: list[str], stop: Any) -> int:
    """Waits while `table` is held; returns how many times it looked and found it held."""
    held = 0
    while not stop.is_set():
        until = held_until(properties_of(session, table).get(HOLD))
        if until is None or until <= datetime.now(UTC):
            return held
        held += 1
        stop.wait(0.1)
    return held


def writer_main(
    spec: dict[str, Any], output: str, ready: Any, stop: Any, started: Any, finished: Any
) -> None:
    """The forked child's body: writes until `stop` is set; `ready` is set after its first commit; `started`
    and `finished` count its attempts (a stamp check and a write, committed or not) as they start and end.
    Exits 0, or 1 when it could not write for MAX_FAILURES attempts in a row."""
    sys.stdout.flush()
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    session = SparkSession.builder.remote(spec["url"]).create()
    switched, n, failures, failed_total, held_total = False, 0, 0, 0, 0
    cadence = float(spec.get("cadence", CADENCE_SECONDS))
    previous: list[dict[str, Any]] = []
    live: dict[str, dict[str, Any]] = {}  # an upserting producer's keys and their rows
    rng = random.Random(spec["name"])
    with open(spec["log"], "a", encoding="utf-8") as log:
        while not stop.is_set():
            with started.get_lock():
                started.value += 1
            while True:  # after waiting out a hold, the stamp may have come: check it again
                switched = switched or stamped(session, spec)
                table = spec["switch_to"] if switched else spec["table"]
                held = 0 if spec.get("ignore_hold") else wait_while_held(session, table, stop)
                held_total += held
                if not held or stop.is_set():
                    break
            columns = spec["new_columns"] if switched else spec["old_columns"]
            fresh = [row(spec["name"], n + i) for i in range(ROWS_PER_COMMIT)]
            if spec["mode"] == "upsert":
                fresh = changes_of(spec["name"], n, live, rng)
                statement = upsert(table, fresh, columns)
            elif spec["mode"] == "merge":
                statement = merge(table, previous + fresh, columns)
            else:
                statement = insert(table, fresh, columns)
            try:
                session.sql(statement).collect()
            except Exception as err:  # not committed: check the stamp again and retry
                with finished.get_lock():
                    finished.value += 1
                failures += 1
                failed_total += 1
                print(f"write failed ({'new' if switched else 'old'}): {str(err).splitlines()[0][:200]}")
                if failures >= MAX_FAILURES:
                    print("giving up")
                    sys.stdout.flush()
                    os._exit(1)
                continue
            failures = 0
            if cadence:
                stop.wait(cadence)  # the next micro-batch (a failed write is retried at once)
            for committed in fresh:
                log.write(json.dumps(committed, default=str) + "\n")
                if committed.get(DELETED):
                    live.pop(committed["txn_id"], None)
                else:
                    live[committed["txn_id"]] = committed
            log.flush()
            previous = fresh
            n += ROWS_PER_COMMIT
            with finished.get_lock():
                finished.value += 1
            ready.set()
    print(
        f"committed {n} rows, {failed_total} failed writes retried, held {held_total} times, "
        f"switched={switched}"
    )
    sys.stdout.flush()
    os._exit(0)
