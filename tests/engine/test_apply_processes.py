"""`apply` as separate processes on the embedded engine: SIGKILLed at op boundaries and inside a batched
backfill and copy, then resumed to the state of an uninterrupted run; two runners racing for one table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.apply.ledger import DONE, Ledger, Status
from delta_contracts.engine.local import LocalEngine
from delta_contracts.plan.migrations import load_history
from tests.engine.apply_support import REPO, ROWS, fingerprint, insert_rows, orders_migrations

pytestmark = pytest.mark.engine
CHILD = Path(__file__).with_name("apply_child.py")


def child(spec: dict[str, Any]) -> subprocess.Popen[str]:
    # The whole environment: the local engine may start delta-spark (JAVA_HOME, HOME's jar cache).
    env = {**os.environ, "PYTHONPATH": str(REPO), "RUST_LOG": "error"}
    return subprocess.Popen(
        [sys.executable, str(CHILD), json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def run(spec: dict[str, Any]) -> tuple[int, str]:
    process = child(spec)
    out, err = process.communicate(timeout=900)
    return process.returncode, out + err


def prepared(warehouse: Path, root: Path, contract: str, cuts: Sequence[str] = ()) -> dict[str, Any]:
    """The table at 1.0.0 holding rows in three partitions (killed at each of `cuts` on the way, each run
    resuming the one before); the spec that applies the rest."""
    spec = {"warehouse": str(warehouse), "migrations": str(root), "contract": contract}
    killed = {"killed_log": str(warehouse / "killed")}
    for cut in cuts:
        code, output = run({**spec, **killed, "to_version": "1.0.0", "kill_on": cut})
        assert code == -9, f"{cut}: {output}"
    code, output = run({**spec, "to_version": "1.0.0"})
    assert code == 0, output
    with LocalEngine(warehouse) as engine:
        insert_rows(engine, contract.split(".")[0])
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


def test_killed_at_every_boundary_converges_to_an_uninterrupted_run(tmp_path: Path) -> None:
    """SIGKILLed at every boundary of every committed sales.orders migration, 0001 included, and between
    every two batches of every batched backfill and copy. Each run resumes the one killed before it and is
    killed at the next boundary, so every boundary is met by a process resuming from a crash."""
    warehouse = tmp_path / "wh"
    ref_root, ref_contract = orders_migrations(tmp_path / "ref", "reference")
    root, contract = orders_migrations(tmp_path / "crash", "crashed")
    reference = prepared(warehouse, ref_root, ref_contract)
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
    cuts = boundaries(folder, batches)
    first = [c for c in cuts if c.startswith("0001_")]
    rest = cuts[len(first) :]
    started = time.perf_counter()
    spec = prepared(warehouse, root, contract, first)
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
    finished = Counter(e.key for e in entries if e.status in DONE)
    assert finished and max(finished.values()) == 1  # no op recorded as done twice
    reference_done = Counter((e.migration_id, e.op_index) for e in ran if e.status in DONE)
    assert Counter((m, i) for _, m, i in finished) == reference_done  # every op finished, as in one run
    from delta_contracts.apply.lease import Lease

    leases = Lease(warehouse / "_delta_contracts", contract)._snapshot().to_pyarrow_table().to_pylist()
    takeovers = [r for r in leases if r["table"] == contract and r["action"] == "takeover"]
    assert len(takeovers) == len(cuts) and all("process gone" in r["note"] for r in takeovers)


JVM = pytest.mark.skipif(
    os.environ.get("DELTA_CONTRACTS_SKIP_SPARK") == "1", reason="DELTA_CONTRACTS_SKIP_SPARK=1 set by the user"
)


@pytest.mark.parametrize("engine", ["local", pytest.param("spark", marks=JVM)])
def test_two_runners_one_table(engine: str, tmp_path: Path) -> None:
    """Two `apply` processes started together: exactly one runs, the other exits 3 naming the holder. On
    `spark` each starts a delta-spark JVM of its own; the winner holds the lease 20 s after taking it, more
    than two JVMs' start-up times differ, so the loser meets it. The race is for the lease, taken before the
    first op: the winner applies the first migration only."""
    warehouse = tmp_path / "wh"
    root, contract = orders_migrations(tmp_path, "raced")
    hold = 4 if engine == "local" else 20
    spec = {"warehouse": str(warehouse), "migrations": str(root), "contract": contract, "hold": hold}
    spec["to_version"] = "1.0.0"
    spec["engine"] = engine
    first, second = child(spec), child(spec)
    results = [p.communicate(timeout=600) for p in (first, second)]
    codes = sorted([first.returncode, second.returncode])
    assert codes == [0, 3], results
    loser = next(out for (out, _), p in zip(results, (first, second), strict=True) if p.returncode == 3)
    assert "held by another runner" in loser and "raced.orders is being migrated by runner" in loser
    entries = Ledger(warehouse / "_delta_contracts").entries([contract])
    done = Counter(e.key for e in entries if e.status in DONE)
    assert done and max(done.values()) == 1
    assert len({e.pid for e in entries}) == 1
    assert {e.engine for e in entries} == {engine}


@JVM
def test_killed_on_spark_converges_to_an_uninterrupted_run(tmp_path: Path) -> None:
    """The same on `spark`, at a few cuts (a delta-spark JVM per process): after a delta-spark commit before
    its ledger row, between two batches of a backfill, after the rename. A Hive metastore in the warehouse
    keeps the tables from one process to the next. The first process also prepares both tables and runs the
    reference uninterrupted; the last one resumes and takes the fingerprints: four JVMs in all."""
    warehouse = tmp_path / "wh"
    ref_root, ref_contract = orders_migrations(tmp_path / "ref", "reference")
    root, contract = orders_migrations(tmp_path / "crash", "crashed")
    base = {"warehouse": str(warehouse), "engine": "spark", "metastore": True, "batch_rows": 2}
    base |= {"force_reason": "crash test", "killed_log": str(warehouse / "killed")}
    reference = {"migrations": str(ref_root), "contract": ref_contract}
    crashed = {"migrations": str(root), "contract": contract}
    prepare = [
        {**reference, "to_version": "1.0.0", "insert_rows": True},
        {**crashed, "to_version": "1.0.0", "insert_rows": True},
        reference,
    ]
    cuts = [
        "0002_1.0.0_to_1.1.0 op 3 ran",
        "0003_1.1.0_to_2.0.0 op 3 batch 2",
        "0004_2.0.0_to_3.0.0 op 8 ran",
    ]
    for number, cut in enumerate(cuts):
        code, output = run({**base, **crashed, "kill_on": cut, "before": prepare if number == 0 else []})
        assert code == -9, f"{cut}: {output}"
    out = tmp_path / "fingerprints.json"
    prints_of = {"fingerprint": ["crashed", "reference"], "fingerprint_out": str(out)}
    code, output = run({**base, **crashed, **prints_of})
    assert code == 0, output
    assert (warehouse / "killed").read_text(encoding="utf-8").splitlines() == cuts
    prints = json.loads(out.read_text(encoding="utf-8"))
    assert prints["crashed"] == prints["reference"] and len(prints["crashed"]["rows"]) == len(ROWS)
    entries = Ledger(warehouse / "_delta_contracts").entries([contract])
    finished = Counter(e.key for e in entries if e.status in DONE)
    assert finished and max(finished.values()) == 1
    assert {e.engine for e in entries} == {"spark"}
    reference_done = Ledger(warehouse / "_delta_contracts").entries([ref_contract])
    assert Counter(e.key[1:] for e in reference_done if e.status in DONE) == Counter(k[1:] for k in finished)
