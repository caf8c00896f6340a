"""The lease: one runner per table, decided by a Delta commit; dead and expired holders are taken over."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from delta_contracts.apply.lease import Lease, LeaseHeld, LeaseLost, process_alive


def test_second_runner_is_refused_naming_the_holder(tmp_path: Path) -> None:
    first = Lease(tmp_path, "sales.orders").acquire()
    with pytest.raises(LeaseHeld) as held:
        Lease(tmp_path, "sales.orders").acquire()
    assert held.value.holder.owner == first.owner and first.owner in str(held.value)
    Lease(tmp_path, "sales.customers").acquire().release()  # another table is free
    first.release()
    Lease(tmp_path, "sales.orders").acquire().release()


def test_racing_commits_cannot_both_win(tmp_path: Path) -> None:
    """Both decide on the same snapshot (nobody holds it); Delta lets exactly one commit land."""
    a, b = Lease(tmp_path, "t"), Lease(tmp_path, "t")
    Lease(tmp_path, "other").acquire()  # the lease table exists
    snapshot_a, snapshot_b = a._snapshot(), b._snapshot()
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    won_a = a._commit(snapshot_a, a._row(snapshot_a, "acquire", now, now))
    won_b = b._commit(snapshot_b, b._row(snapshot_b, "acquire", now, now))
    assert (won_a, won_b) == (True, False)
    current = Lease(tmp_path, "t").current()
    assert current is not None and current.owner == a.owner


def test_expired_lease_is_taken_over_and_logged(tmp_path: Path) -> None:
    stale = Lease(tmp_path, "t", ttl=timedelta(seconds=-1)).acquire()
    fresh = Lease(tmp_path, "t").acquire()
    assert fresh.taken_over is not None and fresh.taken_over.owner == stale.owner
    current = fresh.current()
    assert current is not None and current.action == "takeover" and "expired" in current.note
    with pytest.raises(LeaseLost):
        stale.renew()


def test_dead_holder_is_taken_over(tmp_path: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    dead_pid = int(child.stdout)
    assert not process_alive(dead_pid)
    holder = Lease(tmp_path, "t").acquire()
    holder_row = holder.current()
    assert holder_row is not None
    # Rewrite the holder's row as if a process that has since died had written it.
    from dataclasses import asdict, replace

    import pyarrow as pa
    from deltalake import write_deltalake

    from delta_contracts.apply.lease import _schema

    dead = replace(holder_row, owner="dead-runner", pid=dead_pid, sequence=holder_row.sequence + 1)
    write_deltalake(
        str(holder.location), pa.Table.from_pylist([asdict(dead)], schema=_schema()), mode="append"
    )
    taker = Lease(tmp_path, "t").acquire()
    assert taker.taken_over is not None and taker.taken_over.owner == "dead-runner"
    current = taker.current()
    assert current is not None and "process gone" in current.note


def test_first_acquires_race_on_a_fresh_lease_table(tmp_path: Path) -> None:
    """No lease table yet: both create it and decide; still only one wins (repeated to meet the race)."""
    import threading

    for round_ in range(5):
        folder = tmp_path / str(round_)
        barrier = threading.Barrier(2)
        outcomes: list[str] = []

        def take(
            folder: Path = folder, barrier: threading.Barrier = barrier, outcomes: list[str] = outcomes
        ) -> None:
            barrier.wait()
            try:
                Lease(folder, "t").acquire()
                outcomes.append("won")
            except LeaseHeld:
                outcomes.append("held")

        threads = [threading.Thread(target=take) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["held", "won"], round_
