"""The lease: one runner per table, decided by a Delta commit; dead and expired holders are taken over."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from delta_contracts.state.lease import (
    Lease,
    LeaseHeldError,
    LeaseLostError,
    ProcessIdentity,
    holder_alive,
    process_alive,
    this_process,
)


def test_second_runner_is_refused_naming_the_holder(tmp_path: Path) -> None:
    first = Lease(tmp_path, "sales.orders").acquire()
    with pytest.raises(LeaseHeldError) as held:
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
    with pytest.raises(LeaseLostError):
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

    from delta_contracts.state.lease import _schema

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
            except LeaseHeldError:
                outcomes.append("held")

        threads = [threading.Thread(target=take) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["held", "won"], round_


# -- process identity (issue 29, item 4) ---------------------------------------------------------------------
HOLD = """
import os, sys
from pathlib import Path
from delta_contracts.state.lease import Lease
lease = Lease(Path(sys.argv[1]), "t").acquire()
print(os.getpid(), flush=True)
if sys.argv[2] == "hold":
    sys.stdin.read()  # held until the test closes our stdin or kills us
os._exit(0)  # gone without releasing: killed, as far as the lease can tell
"""


def in_new_pid_namespace(folder: Path, mode: str) -> subprocess.Popen[str]:
    """A runner as a container runs it: pid 1 of a pid namespace of its own (util-linux `unshare`)."""
    command = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
    if os.geteuid() != 0:
        command[1:1] = ["--user", "--map-root-user"]
    if shutil.which("unshare") is None:
        pytest.skip("util-linux unshare is not installed")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.Popen(
        [*command, sys.executable, "-c", HOLD, str(folder), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_a_dead_holder_that_was_pid_1_of_a_container_is_taken_over(tmp_path: Path) -> None:
    """Pid 1 is init on the host: judged by its pid, the dead container's lease stood for the whole TTL."""
    child = in_new_pid_namespace(tmp_path, "exit")
    out, _ = child.communicate(timeout=120)
    if child.returncode != 0 or not out.strip():
        pytest.skip(f"cannot make a pid namespace here (unshare exited {child.returncode})")
    assert int(out) == 1
    holder = Lease(tmp_path, "t").current()
    assert holder is not None and holder.pid == 1 and holder.action == "acquire"
    taker = Lease(tmp_path, "t").acquire()
    assert taker.taken_over is not None and taker.taken_over.owner == holder.owner
    current = taker.current()
    assert current is not None and current.action == "takeover" and "process gone" in current.note


def test_a_live_holder_in_a_container_keeps_the_table(tmp_path: Path) -> None:
    child = in_new_pid_namespace(tmp_path, "hold")
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line.strip():
            pytest.skip("cannot make a pid namespace here")
        with pytest.raises(LeaseHeldError):
            Lease(tmp_path, "t").acquire()
    finally:
        child.kill()
        child.wait()
    # Killed with its namespace (`--kill-child`): the next runner takes over once the process is gone.
    for _ in range(50):
        try:
            taker = Lease(tmp_path, "t").acquire()
            break
        except LeaseHeldError:
            time.sleep(0.1)
    assert taker.taken_over is not None


def test_a_holder_from_before_a_reboot_is_gone_whatever_its_pid(tmp_path: Path) -> None:
    holder = Lease(tmp_path, "t").acquire()
    row = holder.current()
    assert row is not None and ProcessIdentity.parse(row.process) == this_process()
    # The same row as the host's previous boot would have left it: its pid is a live process now (ours).
    from dataclasses import asdict, replace

    import pyarrow as pa
    from deltalake import write_deltalake

    from delta_contracts.state.lease import _schema

    here = this_process()
    assert here is not None
    before = replace(
        row,
        owner="before-reboot",
        process=replace(here, boot="00000000-0000-0000-0000-000000000000").text(),
        sequence=row.sequence + 1,
    )
    write_deltalake(
        str(holder.location), pa.Table.from_pylist([asdict(before)], schema=_schema()), mode="append"
    )
    taker = Lease(tmp_path, "t").acquire()
    assert taker.taken_over is not None and taker.taken_over.owner == "before-reboot"


def test_a_reused_pid_is_not_the_holder(tmp_path: Path) -> None:
    """The holder's pid now names another process (ours), started at another time."""
    holder = Lease(tmp_path, "t").acquire()
    row = holder.current()
    here = this_process()
    assert row is not None and here is not None
    from dataclasses import replace

    assert not holder_alive(os.getpid(), replace(here, start=here.start - 1), here)
    assert holder_alive(os.getpid(), here, here)


def test_an_operator_breaks_a_lease_whose_holder_cannot_be_seen(tmp_path: Path) -> None:
    stuck = Lease(tmp_path, "t").acquire()  # alive, as far as anyone can tell
    with pytest.raises(LeaseHeldError):
        Lease(tmp_path, "t").acquire()
    operator = Lease(tmp_path, "t")
    broken = operator.break_lease("runner's container was deleted")
    assert broken is not None and broken.owner == stuck.owner
    current = operator.current()
    assert current is not None and current.action == "break"
    assert "runner's container was deleted" in current.note and stuck.owner in current.note
    fresh = Lease(tmp_path, "t").acquire()  # free now, and no takeover needed
    assert fresh.taken_over is None
    with pytest.raises(LeaseLostError):
        stuck.renew()  # the broken holder stops at its next renewal
    fresh.release()
    assert Lease(tmp_path, "t").break_lease("nobody holds it") is None


def test_a_lease_table_of_an_older_version_gets_the_new_column(tmp_path: Path) -> None:
    """Lease tables written before the process identity existed lack its column: rows still append."""
    import pyarrow as pa
    from deltalake import DeltaTable

    from delta_contracts.state.lease import _schema

    older = pa.schema([f for f in _schema() if f.name != "process"])
    DeltaTable.create(str(tmp_path / "leases"), schema=older)
    Lease(tmp_path, "t").acquire().release()
    assert "process" in DeltaTable(str(tmp_path / "leases")).schema().to_arrow().names
