"""`allow_rewrite`: the only path that rebuilds a table. It keeps the old table as a named backup and
survives SIGKILL at every step with nothing lost (a real killed process; recovery runs at the next start)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.engine.local.engine import LocalEngine
from delta_contracts.engine.local.rewrite import STEPS
from tests.engine.rewrite_child import DROP, TABLE

pytestmark = pytest.mark.engine
CHILD = Path(__file__).with_name("rewrite_child.py")
ROOT = Path(__file__).resolve().parents[2]


def _child(warehouse: Path, step: str, no_jars: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DELTA_CONTRACTS_DELTA_JARS": str(no_jars)}
    return subprocess.run(
        [sys.executable, str(CHILD), str(warehouse), step],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _table(location: Path, version: int | None = None) -> tuple[list[dict[str, Any]], list[str], int]:
    from deltalake import DeltaTable

    table = DeltaTable(str(location), version=version)
    rows = sorted(table.to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    return rows, [f.name for f in table.schema().fields], table.version()


@pytest.fixture(scope="module")
def no_jars(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("no-jars")


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory, no_jars: Path) -> Path:
    warehouse = tmp_path_factory.mktemp("crash-origin")
    done = _child(warehouse, "setup", no_jars)
    assert done.returncode == 0, done.stderr
    return warehouse


@pytest.mark.parametrize("step", STEPS)
def test_a_rewrite_killed_at_any_step_loses_nothing(
    step: str, prepared: Path, no_jars: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = tmp_path / "warehouse"
    shutil.copytree(prepared, warehouse)
    location = warehouse / "crash" / "t"
    old_rows, old_columns, old_version = _table(location)

    killed = _child(warehouse, step, no_jars)
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    monkeypatch.setenv("DELTA_CONTRACTS_DELTA_JARS", str(no_jars))
    settled = {"swapped": "had finished", "retired": "was undone; the table is as it was", "done": None}
    expected = settled.get(step, "was undone before the swap")
    if expected is None:
        engine = LocalEngine(warehouse, allow_rewrite=True)
    else:
        with pytest.warns(UserWarning, match=expected):  # recovery runs at start and says what it did
            engine = LocalEngine(warehouse, allow_rewrite=True)
    with engine:
        state = warehouse / "_delta_contracts"
        assert not list((state / "rewrite").glob("*")), "journal or half-built copy left behind"
        backups = sorted((state / "backups").glob("crash.t.*")) if (state / "backups").exists() else []
        rows, columns, version = _table(location)
        assert [r["id"] for r in rows] == [1, 2, 3]
        if step in ("swapped", "done"):  # the rewrite had finished: new table, old one kept as the backup
            assert "note" not in columns and len(backups) == 1
            assert _table(backups[0]) == (old_rows, old_columns, old_version)
        else:  # undone: the table as it was, history included, and no backup
            assert (rows, columns, version) == (old_rows, old_columns, old_version)
            assert backups == []
            outcome = engine.apply_op(DROP)  # the op simply runs again
            assert outcome.path == "rewrite" and "kept at" in outcome.detail
            backups = sorted((state / "backups").glob("crash.t.*"))
            assert len(backups) == 1 and str(backups[0]) in outcome.detail
        assert [r["id"] for r in engine.sql("SELECT `id` FROM `crash`.`t` ORDER BY `id`")] == [1, 2, 3]
        live = engine.describe(TABLE)
        assert live is not None and "note" not in {c.name for c in live.columns}
        assert dict(live.checks) == {"id_positive": "id > 0"} and live.partition_columns == ("p",)
        # The dropped column's values stay reachable through the backup's own history.
        backup_rows, backup_columns, _ = _table(backups[0])
        assert "note" in backup_columns and [r["note"] for r in backup_rows] == ["one", "two", None]
