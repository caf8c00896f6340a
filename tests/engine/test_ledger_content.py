"""The ledger ties an op's completion to its content, not to its index: a migration applied in part, then
re-planned and rehashed, runs the ops that are new even where they stand at an index that finished before.
On the embedded engine (the runner is the same on every engine)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.apply import apply, rehash
from delta_contracts.apply.runner import OpStatus
from delta_contracts.cli import app
from delta_contracts.engine.base import Engine
from delta_contracts.plan.migrations import SUM_FILE, compute_sum, migration_files
from delta_contracts.state.record import open_ledger

pytestmark = pytest.mark.engine

PROJECT = """\
target: delta-4
migrations: ../migrations
defaults:
  owner: {team: shop}
"""
ITEMS = """\
apiVersion: delta-contracts/v1
id: replan.items
version: VERSION
description: Items.
columns:
  - {name: item_id, type: bigint, nullable: false, description: Key.}
"""


def _contract(project: Path, version: str, column: str = "") -> None:
    text = ITEMS.replace("VERSION", version) + column
    (project / "contracts/replan/items.yaml").write_text(text, encoding="utf-8")
    done = CliRunner().invoke(app, ["plan"])
    assert done.exit_code == 0, done.output


def test_a_replanned_op_at_a_finished_index_runs(
    memory_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "contracts/replan").mkdir(parents=True)
    (tmp_path / "contracts/contracts.yml").write_text(PROJECT, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    migrations = tmp_path / "migrations"
    folder = migrations / "replan.items"
    _contract(tmp_path, "1.0.0")
    memory_engine.sql("CREATE SCHEMA IF NOT EXISTS `replan`")
    assert apply(memory_engine, migrations, tables=["replan.items"]).exit_code == 0
    memory_engine.sql("INSERT INTO `replan`.`items` VALUES (1), (2)")

    # 2.0.0 adds a NOT NULL column `x` filled with 'a': expanded and populated, not cut over yet
    _contract(
        tmp_path, "2.0.0", "  - {name: x, type: string, nullable: false, description: X., fill: \"'a'\"}\n"
    )
    first = apply(memory_engine, migrations, tables=["replan.items"], phases=["expand", "populate"])
    assert first.exit_code == 0, first.failure
    ran = [(r.index, r.summary) for r in first.reports if r.status is OpStatus.SUCCEEDED]
    assert any("backfill x" in summary for _, summary in ran), ran

    # re-planned: the column is `y`, filled with 'b'; its ops stand where x's did
    for name in migration_files(folder):
        if name.startswith("0002"):
            (folder / name).unlink()
    (folder / SUM_FILE).write_text(compute_sum(folder, migration_files(folder)), encoding="utf-8")
    _contract(
        tmp_path, "2.0.0", "  - {name: y, type: string, nullable: false, description: Y., fill: \"'b'\"}\n"
    )
    rehash(open_ledger(memory_engine), migrations, "replan.items", reason="re-planned: y, not x")

    second = apply(memory_engine, migrations, tables=["replan.items"])
    assert second.exit_code == 0, second.failure
    statuses = {r.summary: r.status for r in second.reports if r.migration_id.startswith("0002")}
    assert not [s for s, status in statuses.items() if " y" in s and status is OpStatus.DONE], statuses
    rows = memory_engine.sql("SELECT `item_id`, `y` FROM `replan`.`items` ORDER BY `item_id`")
    assert rows == [{"item_id": 1, "y": "b"}, {"item_id": 2, "y": "b"}]


def test_a_ledger_written_before_op_checksums_takes_the_new_rows(tmp_path: Path) -> None:
    """A ledger table made by an older release lacks the op_checksum column: appending adds it, and its old
    rows read with an empty one (and so are matched by index, as they were written)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from delta_contracts.state.ledger import Ledger, LedgerEntry, _schema

    old_schema = pa.schema([f for f in _schema() if f.name != "op_checksum"])
    old_row = {f.name: None for f in old_schema} | {"contract": "c", "migration_id": "0001_x", "op_index": 1}
    write_deltalake(str(tmp_path / "ledger"), pa.Table.from_pylist([old_row], schema=old_schema))
    ledger = Ledger(tmp_path)
    ledger.append(
        [LedgerEntry("c", "0001_x", "t", "expand", 2, "add_column", "succeeded", op_checksum="sha256:1")]
    )
    assert [(e.op_index, e.op_checksum or "") for e in ledger.entries()] == [(1, ""), (2, "sha256:1")]
