"""`delta-contracts apply`, `history`, `status` on the committed example project, into a fresh warehouse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.engine.local.engine import LocalEngine
from tests.engine.apply_support import REPO, insert_rows

pytestmark = pytest.mark.engine
runner = CliRunner()


def cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_apply_history_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    wh = str(tmp_path / "wh")
    code, out = cli("apply", "--table", "sales.orders", "--warehouse", wh, "--to", "1.0.0", "--dry-run")
    assert code == 0 and "CREATE TABLE" in out and "pre-check, must return 0" in out
    assert not (tmp_path / "wh" / "_delta_contracts" / "ledger").exists()

    code, out = cli("apply", "--table", "sales.orders", "--warehouse", wh, "--to", "1.0.0")
    assert code == 0, out
    assert "✓ sales.orders 0001_create_1.0.0 [expand] op 1: create table sales.orders" in out
    assert "(succeeded — sql → v" in out  # how it ran and the version it produced
    with LocalEngine(tmp_path / "wh") as engine:
        insert_rows(engine, "sales")
    code, out = cli("apply", "--table", "sales.orders", "--warehouse", wh, "--to", "1.1.0")
    assert code == 0, out
    assert "(succeeded — delta-rs → v" in out
    code, out = cli("status", "--warehouse", wh, "--format", "json", "contracts/sales/orders.yaml")
    assert code == 0, out
    (row,) = json.JSONDecoder().raw_decode(out[out.index("{") :])[0]["tables"]
    assert row["stamped"] == "1.1.0"
    assert [p["migration"] for p in row["pending"]] == ["0003_1.1.0_to_2.0.0", "0004_2.0.0_to_3.0.0"]

    code, out = cli("history", "sales.orders", "--warehouse", wh)
    lines = out.splitlines()
    assert code == 0 and "0002_1.0.0_to_1.1.0 op 9 [cutover] stamp_contract: succeeded" in lines[0]
    assert "0001_create_1.0.0 op 1 [expand] create_table: succeeded v0" in lines[-1]

    # A backfill in batches says how far it is, a line per batch when the output is not a terminal (CI logs)
    batched = ("--to", "2.0.0", "--batch-rows", "2")
    code, out = cli("apply", "--table", "sales.orders", "--warehouse", wh, *batched)
    assert code == 0, out
    lines = [line for line in out.splitlines() if ": backfill " in line and " batch " in line]
    assert [line.split(" batch ")[1].split(",")[0] for line in lines] == ["1/3", "2/3", "3/3"], out
    assert all(line.startswith("sales.orders 0003_1.1.0_to_2.0.0 op 3: backfill ") for line in lines), lines

    code, out = cli("apply", "--table", "sales.orders", "--warehouse", wh, "--force")
    assert code == 2 and "--force needs --reason" in out
    code, out = cli("apply", "--table", "sales.orders", "--warehouse", wh, "--conflict-patience", "-1")
    assert code == 2 and "--conflict-patience must be 0 seconds or more" in out
    code, out = cli("apply", "--table", "nope.nothing", "--warehouse", wh)
    assert code == 2 and "no contract with id nope.nothing" in out
