"""A table's version from its log folder's listing on delta-spark (engine/spark/log_version.py) equals
DESCRIBE HISTORY's after every kind of commit, for a catalog table with a mixed-case name and for a
table named by a path with a space and capitals; the listing is what answers once it agreed."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_contracts.engine.base import Engine
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from tests.engine.conftest import JVM
from tests.engine.recipe_run import create_schema

pytestmark = [pytest.mark.engine, JVM]


def _history_version(engine: Engine, table: TableId) -> int:
    return int(engine.sql(f"DESCRIBE HISTORY {x.sql(x.table(table))} LIMIT 1")[0]["version"])


def test_the_listed_version_is_describe_historys(spark_engine: Engine, tmp_path: Path) -> None:
    create_schema(spark_engine, "LogV")
    folder = tmp_path / "My Dir" / "Events"
    for table in (TableId(("LogV", "Orders")), TableId(("delta", str(folder)))):
        name = x.sql(x.table(table))
        spark_engine.sql(f"CREATE TABLE {name} (id INT, note STRING) USING delta")
        statements = [
            f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')",
            f"UPDATE {name} SET note = 'c' WHERE id = 1",
            f"ALTER TABLE {name} ADD COLUMNS (extra INT)",
            f"ALTER TABLE {name} SET TBLPROPERTIES ('team' = 'payments')",
            f"DELETE FROM {name} WHERE id = 2",
            f"OPTIMIZE {name}",
        ]
        assert spark_engine.table_version(table) == _history_version(spark_engine, table) == 0
        for statement in statements:
            spark_engine.sql(statement)
            assert spark_engine.table_version(table) == _history_version(spark_engine, table), statement
        location = spark_engine._location(table)  # type: ignore[attr-defined]
        assert location is not None
        # the listing answered: DESCRIBE HISTORY was asked once, when the table was first read
        listed = spark_engine._log_versions.version(location)  # type: ignore[attr-defined]
        assert listed == _history_version(spark_engine, table) >= len(statements) - 1
    assert spark_engine.table_version(TableId(("LogV", "Missing"))) is None
