"""`apply` and `history` on the local engine: a corrupted ledger commit is one line and exit 2, and an
operator breaks a lease whose holder cannot be seen (issue 29, items 4 and 7)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.engine.base import Engine, EngineError
from delta_contracts.state import ledger as lg
from delta_contracts.state.lease import Lease
from delta_contracts.tableid import BadTableIdError
from tests.engine.apply_support import REPO

pytestmark = pytest.mark.engine
runner = CliRunner()
HOSTILE_PARTS = ["..", ".", "/", "/tmp/x/OUTSIDE", "_delta_contracts", "a" * 300]


def cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_a_corrupted_ledger_commit_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    state = tmp_path / "wh" / "_delta_contracts"
    ledger = lg.Ledger(state)
    for index in (1, 2):
        ledger.append([lg.LedgerEntry("sales.orders", "m", "sales.orders", "", index, "k", "succeeded")])
    commit = state / "ledger" / "_delta_log" / "00000000000000000001.json"
    commit.write_text('{"add": {"path": tru', encoding="utf-8")  # cut off mid-write
    wh = str(tmp_path / "wh")
    for args in (("history", "--warehouse", wh), ("apply", "--table", "sales.orders", "--warehouse", wh)):
        code, out = cli(*args)
        assert code == 2, out
        assert "the ledger at" in out and "cannot be read" in out, out
        assert "Traceback" not in out and "<unknown>" not in out and len(out.splitlines()) <= 3, out


def test_an_operator_breaks_the_lease_of_a_runner_that_cannot_be_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    wh = str(tmp_path / "wh")
    stuck = Lease(tmp_path / "wh" / "_delta_contracts", "sales.orders").acquire()
    code, out = cli("apply", "--table", "sales.orders", "--warehouse", wh, "--to", "1.0.0")
    assert code == 3 and f"held by another runner: runner {stuck.owner}" in out, out
    code, out = cli("apply", "--table", "sales.orders", "--warehouse", wh, "--to", "1.0.0", "--break-lease")
    assert code == 2 and "--break-lease needs --reason" in out
    code, out = cli(
        "apply", "--table", "sales.orders", "--warehouse", wh, "--to", "1.0.0",
        "--break-lease", "--reason", "its container was deleted",
    )  # fmt: skip
    assert code == 0, out
    assert f"sales.orders: broke the lease of runner {stuck.owner}" in out
    code, out = cli("history", "sales.orders", "--warehouse", wh)
    assert code == 0
    broken = [line for line in out.splitlines() if "break_lease" in line]
    assert (
        len(broken) == 1 and "lease_broken" in broken[0] and "reason: its container was deleted" in broken[0]
    )


@settings(max_examples=150, deadline=None)
@example(table=["", ""])  # no table id: refused before any path is made
@given(
    table=st.lists(
        st.one_of(st.text(max_size=12), st.sampled_from(HOSTILE_PARTS)),
        min_size=2,
        max_size=3,
    )
)
def test_the_local_engine_puts_no_table_outside_its_warehouse(local_engine: Engine, table: list[str]) -> None:
    """A table the local engine would create lies under its warehouse and outside its own state folder,
    whatever the name (issue 29, item 2: `/tmp/x/OUTSIDE.x` made a Delta table outside the warehouse)."""
    warehouse = Path(local_engine.warehouse).resolve()  # type: ignore[attr-defined]
    try:
        location = local_engine.location(tuple(table)).resolve()  # type: ignore[attr-defined]
    except (EngineError, BadTableIdError):  # refused: a name the warehouse cannot hold, or no table id at all
        return
    assert location.is_relative_to(warehouse) and location != warehouse
    assert not location.is_relative_to(local_engine.state_dir.resolve())
