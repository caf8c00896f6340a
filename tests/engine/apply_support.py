"""Shared by the apply tests: the committed sales.orders migrations under a schema of the test's own."""

from __future__ import annotations

import itertools
import re
import shutil
from pathlib import Path
from typing import Any

from delta_contracts.engine.base import Engine
from delta_contracts.plan.migrations import SUM_FILE, compute_sum, migration_files

REPO = Path(__file__).resolve().parents[2]
_counter = itertools.count()

ROWS = [
    (1, 7, "12.00", "PLACED", "2026-11-01", "2026-11-01 10:00:00"),
    (2, 8, "30.00", "SHIPPED", "2026-11-01", "2026-11-01 11:00:00"),
    (3, 9, "5.50", "PLACED", "2026-11-02", "2026-11-02 09:00:00"),
    (4, 7, "80.00", "DELIVERED", "2026-11-02", "2026-11-02 12:00:00"),
    (5, 3, "1.00", "CANCELLED", "2026-11-03", "2026-11-03 08:00:00"),
    (6, 4, "9.99", "PLACED", "2026-11-03", "2026-11-03 18:00:00"),
]


def orders_migrations(root: Path, schema: str | None = None) -> tuple[Path, str]:
    """A copy of migrations/sales.orders with the schema renamed (sums recomputed): (migrations root, id)."""
    schema = schema or f"apply{next(_counter)}_{root.name[-6:].lower().replace('-', '_')}"
    schema = re.sub(r"[^a-z0-9_]", "_", schema)
    contract = f"{schema}.orders"
    folder = root / "migrations" / contract
    folder.mkdir(parents=True)
    source = REPO / "migrations" / "sales.orders"
    for name in migration_files(source):
        text = (source / name).read_text(encoding="utf-8")
        (folder / name).write_text(re.sub(r"\bsales\b", schema, text), encoding="utf-8")
    (folder / SUM_FILE).write_text(compute_sum(folder, migration_files(folder)), encoding="utf-8")
    return root / "migrations", contract


def with_schema(engine: Engine, root: Path) -> tuple[Path, str]:
    """orders_migrations, with the schema created (delta-spark does not create schemas for CREATE TABLE)."""
    migrations, contract = orders_migrations(root)
    engine.sql(f"CREATE SCHEMA IF NOT EXISTS `{contract.split('.')[0]}`")
    return migrations, contract


def insert_rows(engine: Engine, schema: str, rows: list[tuple[Any, ...]] = ROWS) -> None:
    values = ", ".join(f"({i}, {c}, {a}, '{s}', DATE'{d}', TIMESTAMP'{t}')" for i, c, a, s, d, t in rows)
    engine.sql(f"INSERT INTO `{schema}`.`orders` VALUES {values}")


def fingerprint(engine: Engine, schema: str) -> dict[str, Any]:
    """Schema, properties, constraints and a checksum of the rows of the table behind `<schema>.orders`,
    with the schema name taken out so two copies compare equal."""
    physical = (schema, "orders__v3")
    live = engine.describe(physical)
    assert live is not None
    rows = engine.sql(f"SELECT * FROM `{schema}`.`orders` ORDER BY `order_id`")
    strip = {k: v.replace(schema, "S") for k, v in live.properties.items()}
    return {
        "columns": [(c.name, c.type, c.nullable, c.comment, c.default) for c in live.columns],
        "properties": {k: v for k, v in strip.items() if not k.startswith("delta.columnMapping.maxColumnId")},
        "checks": dict(live.checks),
        "partitions": live.partition_columns,
        "rows": [tuple(sorted((k, str(v)) for k, v in r.items())) for r in rows],
        "old": engine.describe((schema, "orders__v2")) is None,
        "views": sorted(k[-1] for k in engine.views() if k[-2] == schema),
    }


def clean(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
