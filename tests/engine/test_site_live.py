"""`site --engine`: a table's page shows its live stamp and the drift found on it (embedded engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_contracts.contract.load import load_contract, project_for
from delta_contracts.engine.base import Engine
from delta_contracts.site.gather import gather
from delta_contracts.site.render import render_table
from delta_contracts.tables.create import create_table
from tests.engine.conftest import location_of

pytestmark = pytest.mark.engine
CONTRACT = """apiVersion: delta-contracts/v1
id: site_live.accounts
version: 1.2.0
owner: {team: crm}
columns:
  - {name: account_id, type: bigint, nullable: false, checks: {min: 1}}
  - {name: plan, type: string}
"""


def test_a_page_shows_the_live_stamp_and_drift(local_engine: Engine, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    path = tmp_path / "contracts" / "accounts.yaml"
    path.parent.mkdir()
    path.write_text(CONTRACT, encoding="utf-8")
    (tmp_path / "contracts" / "contracts.yml").write_text("migrations: ../migrations\n", encoding="utf-8")
    loaded = load_contract(path)
    create_table(local_engine, loaded.contract)
    site = gather([loaded], project_for(path), tmp_path / "warehouse", local_engine)
    clean = render_table(site.pages[0], site)
    assert "site_live.accounts (stamped 1.2.0)" in clean and "<p>No drift.</p>" in clean

    # somebody drops the CHECK by hand: the page says so, and that the commit is not the toolkit's
    DeltaTable(location_of(local_engine, ("site_live", "accounts"))).alter.drop_constraint("account_id_min")
    site = gather([loaded], project_for(path), tmp_path / "warehouse", local_engine)
    drifted = render_table(site.pages[0], site)
    assert "<p>2 drift item(s).</p>" in drifted
    assert "CHECK account_id_min is missing" in drifted and "was not made by delta-contracts" in drifted
    assert site.sources["live tables"] == "engine local"
