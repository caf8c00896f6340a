"""`apply` as separate processes: SIGKILLed at op boundaries and inside a batched backfill and copy, then
resumed to the state of an uninterrupted run (at every kind of boundary of every kind of op on the embedded
engine, at a few on delta-spark); two runners racing for one table. `make test` kills each migration once
and each batched op between two batches; the exhaustive tier every kind of op at every kind of boundary,
and on delta-spark (tests/tiers.py)."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Sequence
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.apply.schedule import held_runs
from delta_contracts.engine.base import Engine
from delta_contracts.engine.local.engine import LocalEngine
from delta_contracts.engine.spark.session import JVM_LOG
from delta_contracts.plan.migrations import load_history
from delta_contracts.state.ledger import DONE, Ledger, Status
from tests.engine.apply_child import fork_server, forked_main
from tests.engine.apply_support import ROWS, fingerprint, orders_migrations
from tests.engine.conftest import JVM, SKIP_SPARK
from tests.tiers import EXHAUSTIVE

pytestmark = pytest.mark.engine
_outputs = itertools.count()


def child(spec: dict[str, Any], folder: Path) -> tuple[BaseProcess, Path]:
    """An `apply` process (tests/engine/apply_child.py) and the file it prints to."""
    output = folder / f"child-{next(_outputs)}.out"
    process = fork_server().Process(target=forked_main, args=(spec, str(output)))
    process.start()
    return process, output


def finish(process: BaseProcess, output: Path, timeout: float = 900) -> tuple[int, str]:
    process.join(timeout)
    if process.exitcode is None:
        process.kill()
        process.join()
        pytest.fail(f"the apply process did not end in {timeout} s: {output.read_text(encoding='utf-8')}")
    return process.exitcode, output.read_text(encoding="utf-8") if output.exists() else ""


def run(spec: dict[str, Any]) -> tuple[int, str]:
    return finish(*child(spec, Path(spec["warehouse"]).parent))


def prepared(
    warehouse: Path, root: Path, contract: str, cuts: Sequence[str] = (), delta_spark_url: str | None = None
) -> dict[str, Any]:
    """The table at 1.0.0 holding rows in three partitions (killed at each of `cuts` on the way, each run
    resuming the one before); the spec that applies the rest."""
    spec = {"warehouse": str(warehouse), "migrations": str(root), "contract": contract}
    spec["delta_spark_url"] = delta_spark_url
    killed = {"killed_log": str(warehouse / "killed")}
    for cut in cuts:
        code, output = run({**spec, **killed, "to_version": "1.0.0", "kill_on": cut})
        assert code == -9, f"{cut}: {output}"
    code, output = run({**spec, "to_version": "1.0.0", "insert_rows": True})
    assert code == 0, output
    return {**spec, **killed, "force_reason": "crash test", "batch_rows": 2}


def boundaries(folder: Path, batches: Counter[tuple[str, int]]) -> list[str]:
    """Every boundary the runner passes while applying the migrations in `folder`, in order, named as it
    names them: each op's `started` (ledger row, nothing run), each of its batches, `ran` (committed, no
    ledger row yet) and `recorded`. `batches`: how many batches each (migration, op) ran."""
    names = []
    for stored in load_history(folder):
        for index, _ in enumerate(stored.migration.ops, start=1):
            op = f"{stored.migration_id} op {index}"
            names.append(f"{op} started")
            names.extend(f"{op} batch {n}" for n in range(1, batches[(stored.migration_id, index)] + 1))
            names += [f"{op} ran", f"{op} recorded"]
    return names


def cut_parts(cut: str) -> tuple[str, int, str]:
    """A boundary's name (`boundaries`) as (migration id, op index, boundary): "0002_… op 5 batch 1"."""
    migration_id, _, rest = cut.partition(" op ")
    index, _, boundary = rest.partition(" ")
    return migration_id, int(index), boundary


def one_of_each(cuts: Sequence[str], kinds: dict[tuple[str, int], str]) -> list[str]:
    """The first boundary of each kind (`started`, `batch n`, `ran`, `recorded`) of each kind of op, in the
    order the runner passes them. The runner resumes every op through the same steps (its ledger rows, the
    op's postcondition read from the table, its batches), so a second add_check met at `ran` walks the same
    path as the first; 57 kills instead of 132 (about 130 s instead of 290 s on a quiet 2-core machine)."""
    seen: set[tuple[str, str]] = set()
    chosen = []
    for cut in cuts:
        migration_id, index, boundary = cut_parts(cut)
        key = (kinds[(migration_id, index)], boundary)
        if key not in seen:
            seen.add(key)
            chosen.append(cut)
    return chosen


def one_per_migration(cuts: Sequence[str], kinds: dict[tuple[str, int], str]) -> list[str]:
    """`make test`'s sweep: each kind of batched op killed between its first two batches, and each migration
    killed once more, at a boundary of the kind next in turn (`started`, `ran`, `recorded`) of its last op
    of a kind not killed yet (the cutover and contract ops, where a crash costs most): every kind of
    boundary met, every migration resumed from a crash. Whether an op of each kind is found done after a
    crash, without its ledger row, is `make test`'s too: every recipe case applies its migration a second
    time, on the table alone (tests/engine/recipe_run.py)."""
    parts = [cut_parts(c) for c in cuts]
    batched = {kinds[(m, i)] for m, i, boundary in parts if boundary.startswith("batch ")}
    chosen: set[str] = set()
    killed = set()
    for cut, (m, i, boundary) in zip(cuts, parts, strict=True):
        if boundary == "batch 1" and kinds[(m, i)] not in killed:
            killed.add(kinds[(m, i)])
            chosen.add(cut)
    turns = itertools.cycle(("started", "ran", "recorded"))
    for migration_id in dict.fromkeys(m for m, _, _ in parts):
        wanted = next(turns)
        candidates = [
            (i, cut)
            for cut, (m, i, boundary) in zip(cuts, parts, strict=True)
            if m == migration_id and boundary == wanted and kinds[(m, i)] not in killed | batched
        ]
        if candidates:
            index, cut = max(candidates)
            killed.add(kinds[(migration_id, index)])
            chosen.add(cut)
    return [c for c in cuts if c in chosen]


SWEEPS = {"one_per_migration": one_per_migration, "one_of_each": one_of_each}


@pytest.mark.lane("connect")
@pytest.mark.parametrize("sweep", ["one_per_migration", pytest.param("one_of_each", marks=EXHAUSTIVE)])
def test_killed_at_every_boundary_converges_to_an_uninterrupted_run(
    tmp_path: Path, request: pytest.FixtureRequest, sweep: str
) -> None:
    """SIGKILLed at boundaries of the committed sales.orders migrations, 0001 included: `one_of_each`, at
    every kind of boundary of every kind of op, and between every two batches of a batched backfill and of
    a copy; `one_per_migration`, each migration once and each batched op between two batches, every kind
    of boundary met. Each run resumes the one killed before it and is killed at the next boundary, so every
    boundary chosen is met by a process resuming from a crash.

    The ops Sail and delta-rs cannot do go to delta-spark. Each process would start a JVM of its own for
    them (eight of the 57 did, 30-40 s each, two thirds of the test); they are sent to the suite's Spark
    Connect server instead (`LocalEngine(delta_spark_url=…)`), the same statements on the same paths."""
    url = None if SKIP_SPARK else request.getfixturevalue("connect_url")
    warehouse = tmp_path / "wh"
    ref_root, ref_contract = orders_migrations(tmp_path / "ref", "reference")
    root, contract = orders_migrations(tmp_path / "crash", "crashed")
    reference = prepared(warehouse, ref_root, ref_contract, delta_spark_url=url)
    code, output = run(reference)
    assert code == 0, output
    ledger = Ledger(warehouse / "_delta_contracts")
    ran = ledger.entries([ref_contract])
    batches = Counter((e.migration_id, e.op_index) for e in ran if e.status == Status.BATCH)
    folder = root / contract
    kinds = {
        (stored.migration_id, index): op.kind
        for stored in load_history(folder)
        for index, op in enumerate(stored.migration.ops, start=1)
    }
    # Every batched op of the history ran in two batches or more, so kills land between two batch commits.
    assert {kinds[key] for key, n in batches.items() if n >= 2} == {"backfill", "copy_rows"}
    cuts = SWEEPS[sweep](boundaries(folder, batches), kinds)
    met = {cut_parts(c)[2].rstrip("0123456789") for c in cuts}
    assert met == {"started", "batch ", "ran", "recorded"}, f"every kind of boundary is met: {cuts}"
    killed = {cut_parts(c)[:2] for c in cuts}
    assert {m for m, _ in kinds} == {m for m, _ in killed}, f"every migration is killed in: {cuts}"
    if sweep == "one_of_each":
        assert set(kinds.values()) == {kinds[key] for key in killed}, "every kind of op is killed at"
    else:
        assert len({kinds[key] for key in killed}) == len(killed), f"no kind of op killed twice: {cuts}"
    first = [c for c in cuts if c.startswith("0001_")]
    rest = cuts[len(first) :]
    started = time.perf_counter()
    spec = prepared(warehouse, root, contract, first, delta_spark_url=url)
    for cut in rest:
        code, output = run({**spec, "kill_on": cut})
        assert code == -9, f"{cut}: {output}"
    code, output = run(spec)
    assert code == 0, output
    took = time.perf_counter() - started
    print(f"{len(cuts)} kills ({sum(batches.values())} inside batched ops), {took:.0f} s")
    assert (warehouse / "killed").read_text(encoding="utf-8").splitlines() == cuts
    with LocalEngine(warehouse) as engine:
        assert fingerprint(engine, "crashed") == fingerprint(engine, "reference")
        rows = engine.sql("SELECT `order_id` FROM `crashed`.`orders` ORDER BY `order_id`")
        entries = Ledger(engine.state_dir).entries([contract])
    assert [r["order_id"] for r in rows] == [r[0] for r in ROWS]  # none lost, none written twice
    # No process started a JVM of its own: the ops went to the server (a JVM here writes its log there).
    assert url is None or not (warehouse / "_delta_contracts" / JVM_LOG).exists()
    finished = Counter(e.key for e in entries if e.status in DONE)
    succeeded = Counter(e.key for e in entries if e.status == Status.SUCCEEDED)
    # A run resumed inside a held run runs its catch-up again first (`held_runs`: producers may have written
    # the old table since the kill), as every apply does a `checked_again` op: such an op alone may be
    # recorded done again, skipped, its postcondition holding, or run again (a versioned cutover's re-copy).
    held_starts = {
        (stored.migration_id, index)
        for stored in load_history(folder)
        for index in held_runs(stored.migration.ops)
    }
    checked_again = held_starts | {
        (stored.migration_id, index)
        for stored in load_history(folder)
        for index, op in enumerate(stored.migration.ops, start=1)
        if op.checked_again
    }
    assert finished and {(m, i) for (_, m, i), n in succeeded.items() if n > 1} <= held_starts, succeeded
    assert {(m, i) for (_, m, i), n in finished.items() if n > 1} <= checked_again, finished
    reference_done = Counter((e.migration_id, e.op_index) for e in ran if e.status in DONE)
    assert Counter((m, i) for _, m, i in finished) == reference_done  # every op finished, as in one run
    from delta_contracts.state.lease import Lease

    leases = Lease(warehouse / "_delta_contracts", contract)._snapshot().to_pyarrow_table().to_pylist()
    takeovers = [r for r in leases if r["table"] == contract and r["action"] == "takeover"]
    assert len(takeovers) == len(cuts) and all("process gone" in r["note"] for r in takeovers)


@pytest.mark.parametrize("engine", ["local", pytest.param("connect", marks=JVM)])
def test_two_runners_one_table(engine: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Two `apply` processes started together: exactly one runs, the other exits 3 naming the holder. On
    `connect` both are sessions of the suite's Spark Connect server with delta-spark. The race is for the
    lease, taken before the first op: the winner holds it, waiting at its first boundary until the loser has
    ended, then applies the first migration."""
    warehouse = tmp_path / "wh"
    schema = f"raced_{engine}"
    root, contract = orders_migrations(tmp_path, schema)
    release = tmp_path / "release"
    spec = {"warehouse": str(warehouse), "migrations": str(root), "contract": contract}
    spec |= {"to_version": "1.0.0", "engine": engine, "hold_until": str(release)}
    if engine == "connect":
        spec["url"] = request.getfixturevalue("connect_url")
    warehouse.mkdir()
    first, second = child(spec, tmp_path), child(spec, tmp_path)
    # One ends (refused: the other holds the lease) while the other waits at its first boundary; were both
    # let through, neither would end here, and both, released at the deadline, would exit 0 below.
    wait([first[0].sentinel, second[0].sentinel], timeout=600)
    release.touch()
    results = [finish(*first, timeout=600), finish(*second, timeout=600)]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 3], results
    loser = next(out for code, out in results if code == 3)
    assert "held by another runner" in loser and f"{contract} is being migrated by runner" in loser
    entries = Ledger(warehouse / "_delta_contracts").entries([contract])
    done = Counter(e.key for e in entries if e.status in DONE)
    assert done and max(done.values()) == 1
    assert len({e.pid for e in entries}) == 1
    assert {e.engine for e in entries} == {engine}


@JVM
@EXHAUSTIVE  # the sweep above kills the ops the local engine sends to delta-spark on the same server
def test_killed_on_delta_spark_converges_to_an_uninterrupted_run(
    connect_url: str, connect_engine: Engine, tmp_path: Path
) -> None:
    """The same on delta-spark, at a few cuts: after a delta-spark commit before its ledger row, between two
    batches of a backfill, after the rename. Each `apply` process is a session of the suite's Spark Connect
    server (its catalog outlives the process) and is SIGKILLed there; the next one resumes."""
    warehouse = tmp_path / "wh"
    ref_root, ref_contract = orders_migrations(tmp_path / "ref", "reference_connect")
    root, contract = orders_migrations(tmp_path / "crash", "crashed_connect")
    base = {"warehouse": str(warehouse), "engine": "connect", "url": connect_url, "batch_rows": 2}
    base |= {"force_reason": "crash test", "killed_log": str(warehouse / "killed")}
    reference = {"migrations": str(ref_root), "contract": ref_contract}
    crashed = {"migrations": str(root), "contract": contract}
    warehouse.mkdir()
    prepare = [
        {**reference, "to_version": "1.0.0", "insert_rows": True},
        {**crashed, "to_version": "1.0.0", "insert_rows": True},
    ]
    code, output = run({**base, **reference, "before": prepare})
    assert code == 0, output
    cuts = [
        "0002_1.0.0_to_1.1.0 op 3 ran",
        "0003_1.1.0_to_2.0.0 op 3 batch 2",
        "0004_2.0.0_to_3.0.0 op 8 ran",
    ]
    for cut in cuts:
        code, output = run({**base, **crashed, "kill_on": cut})
        assert code == -9, f"{cut}: {output}"
    code, output = run({**base, **crashed})
    assert code == 0, output
    assert (warehouse / "killed").read_text(encoding="utf-8").splitlines() == cuts
    crashed_print = fingerprint(connect_engine, contract.split(".")[0])
    assert crashed_print == fingerprint(connect_engine, ref_contract.split(".")[0])
    assert len(crashed_print["rows"]) == len(ROWS)
    entries = Ledger(warehouse / "_delta_contracts").entries([contract])
    finished = Counter(e.key for e in entries if e.status in DONE)
    succeeded = Counter(e.key for e in entries if e.status == Status.SUCCEEDED)
    # the last cut is inside 0004's versioned cutover, a held run: resumed, its catch-up is checked again
    # first (`held_runs`) and recorded done again (skipped, its source renamed away)
    again = {
        (stored.migration_id, index)
        for stored in load_history(root / contract)
        for index in held_runs(stored.migration.ops)
    }
    assert finished and {(m, i) for (_, m, i), n in succeeded.items() if n > 1} <= again, succeeded
    assert {(m, i) for (_, m, i), n in finished.items() if n > 1} <= again, finished
    assert {e.engine for e in entries} == {"connect"}
    reference_done = Ledger(warehouse / "_delta_contracts").entries([ref_contract])
    assert Counter(e.key[1:] for e in reference_done if e.status in DONE) == Counter(k[1:] for k in finished)
