"""The apply ledger as a catalog table (contracts.yml `engine.ledger`) on `spark` and `connect`: `apply`,
`history`, `rehash`, `status` and `drift` all read and write that table through the session, nothing is
written to the warehouse's ledger folder, and the recorded instants survive a session time zone that is
not UTC."""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.engine.base import Engine
from tests.engine.apply_support import REPO, with_schema
from tests.engine.conftest import JVM
from tests.tiers import EXHAUSTIVE

pytestmark = pytest.mark.engine
runner = CliRunner()


def _project(root: Path, migrations: Path, contract: str, ledger: str, engine: str) -> None:
    """contracts.yml naming the ledger table, and the sales.orders contract under the test's own schema."""
    schema = contract.split(".")[0]
    (root / "contracts" / schema).mkdir(parents=True)
    text = (REPO / "contracts" / "sales" / "orders.yaml").read_text(encoding="utf-8")
    (root / "contracts" / schema / "orders.yaml").write_text(
        re.sub(r"\bsales\b", schema, text).replace("../../schema/", "../../../schema/"), encoding="utf-8"
    )
    shutil.copy(REPO / "contracts" / "contracts.yml", root / "contracts" / "contracts.yml")
    settings = (root / "contracts" / "contracts.yml").read_text(encoding="utf-8")
    settings = settings.replace("migrations: ../migrations", f"migrations: {migrations}")
    settings = re.sub(
        r"engine:\n(  .*\n)+",
        f"engine:\n  name: {engine}\n  warehouse: ../wh\n  ledger: {json.dumps(ledger)}\n",
        settings,
    )
    (root / "contracts" / "contracts.yml").write_text(settings, encoding="utf-8")


def _cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    import traceback

    if result.exception and not isinstance(result.exception, SystemExit):
        traceback.print_exception(result.exception)
    return result.exit_code, result.output


# the same catalog and ledger through Spark Connect: the exhaustive tier (tests/tiers.py)
@pytest.mark.parametrize(
    "name", [pytest.param("spark", marks=JVM), pytest.param("connect", marks=[JVM, EXHAUSTIVE])]
)
def test_the_ledger_is_the_catalog_table_contracts_yml_names(
    name: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine: Engine = request.getfixturevalue(f"{name}_engine")
    extra = ["--url", request.getfixturevalue("connect_url")] if name == "connect" else []
    migrations, contract = with_schema(engine, tmp_path)
    schema = contract.split(".")[0]
    ledger = f"{schema}_ops.`select`"  # a part that must be quoted, in a schema not made yet
    _project(tmp_path, migrations, contract, ledger, name)
    monkeypatch.chdir(tmp_path)
    engine.sql("SET spark.sql.session.timeZone = America/Los_Angeles")
    try:
        before = datetime.now(UTC)
        code, out = _cli("apply", "--table", contract, "--to", "1.0.0", *extra)
        after = datetime.now(UTC)
        assert code == 0, out
    finally:
        engine.sql("SET spark.sql.session.timeZone = UTC")
    assert not (tmp_path / "wh" / "_delta_contracts" / "ledger").exists()

    detail = engine.sql(f"DESCRIBE DETAIL {ledger}")[0]
    assert detail["format"] == "delta"
    rows = engine.sql(
        f"SELECT migration_id, op_index, status, unix_micros(started_at) AS started FROM {ledger} "
        f"WHERE contract = '{contract}'"
    )
    done = {(r["migration_id"], r["op_index"]) for r in rows if r["status"] == "succeeded"}
    assert done == {("0001_create_1.0.0", i) for i in range(1, 6)}
    started = [datetime.fromtimestamp(r["started"] / 1e6, UTC) for r in rows]
    assert all(before <= s <= after for s in started), (before, min(started), max(started), after)
    commits = engine.sql(f"DESCRIBE HISTORY {ledger}")
    assert {c["userMetadata"] for c in commits if c["operation"] != "CREATE TABLE"} == {
        "delta-contracts ledger"
    }

    code, out = _cli("history", contract, *extra)
    lines = [line for line in out.splitlines() if contract in line]
    assert code == 0 and "0001_create_1.0.0 op 5 [" in lines[0] and "stamp_contract: succeeded" in lines[0], (
        out
    )
    assert "0001_create_1.0.0 op 1 [expand] create_table: succeeded v0" in lines[-1]
    assert len(lines) == len([r for r in rows if r["status"] != "started"])

    # The toolkit's commits are known from the catalog ledger: no drift, none out of band.
    code, out = _cli("status", "--format", "json", *extra)
    assert code == 0, out
    (status,) = json.JSONDecoder().raw_decode(out[out.index("{") :])[0]["tables"]
    assert status["stamped"] == "1.0.0"
    engine.sql(f"ALTER TABLE `{schema}`.`orders` SET TBLPROPERTIES ('by.hand' = 'yes')")
    code, out = _cli("drift", *extra)
    assert code == 1 and "out-of-band-commit" in out and out.count("out-of-band-commit") == 1, out
    assert "SET TBLPROPERTIES" in out

    sql = migrations / contract / "0001_create_1.0.0.sql"
    sql.write_text(sql.read_text(encoding="utf-8") + "-- reviewed\n", encoding="utf-8")
    code, out = _cli("rehash", contract, "--reason", "comment only", *extra)
    assert code == 0 and "0001_create_1.0.0: new checksum recorded (comment only)" in out, out
    rehashed = engine.sql(f"SELECT migration_id, reason FROM {ledger} WHERE status = 'rehashed'")
    assert [(r["migration_id"], r["reason"]) for r in rehashed] == [("0001_create_1.0.0", "comment only")]
    code, out = _cli("apply", "--table", contract, "--to", "1.0.0", *extra)
    assert code == 0 and "refused" not in out, out
