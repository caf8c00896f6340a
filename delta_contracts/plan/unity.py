"""What Unity Catalog OSS 0.6.0's Spark connector (`io.unitycatalog.spark.UCSingleCatalog`) refuses, measured,
and what `plan` does about it: the ops it cannot run are refused at `plan` (exit 2), with the reason and the
way out, before any migration file is written; never a failure in the middle of `apply`.

Measured on the server and connector built from v0.6.0 (Spark 4.2, delta-spark 4.4, tests/engine/
test_unity_catalog.py), on managed and external tables alike:
- `ALTER TABLE … RENAME TO` fails: "Renaming a table is not supported yet".
- `ALTER TABLE … RENAME COLUMN` fails: "ALTER TABLE RENAME COLUMN is not supported for Unity Catalog tables
  yet" (a nested field's rename is the same statement).
- `CREATE OR REPLACE VIEW` fails whether or not the view exists: "Replacing a view is not supported yet";
  `CREATE VIEW` and `DROP VIEW` work. That one is not refused: the spark engine swaps a view there as
  `DROP VIEW IF EXISTS` then `CREATE VIEW` (`engine.spark.ops`), the name missing for that moment.
Everything else the planner emits runs (CREATE TABLE with properties and column mapping, ADD/DROP COLUMN,
CHECK constraints, table properties, type widening, comments, MERGE/INSERT, DESCRIBE HISTORY/DETAIL).
Databricks' Unity Catalog runs all three statements (`engine.unity_catalog.server: databricks`).
"""

from __future__ import annotations

from collections.abc import Iterable

from delta_contracts.errors import ExitCode
from delta_contracts.plan.building import PlanError
from delta_contracts.plan.ops import Migration, Op

DATABRICKS_WAY = "or apply it on Databricks' Unity Catalog (engine.unity_catalog.server: databricks)"

# op kind -> (what the connector says, the way out)
REFUSED: dict[str, tuple[str, str]] = {
    "rename_table": (
        'Unity Catalog OSS 0.6.0 cannot rename a table (ALTER TABLE … RENAME TO: "Renaming a table is not '
        'supported yet")',
        "declare the contract `versioned` from its first version, so that its table is <name>__v1 behind the "
        "alias view from the start and a major version only moves the view to a new table; " + DATABRICKS_WAY,
    ),
    "rename_field": (
        'Unity Catalog OSS 0.6.0 cannot rename a column or field (ALTER TABLE … RENAME COLUMN: "not '
        'supported for Unity Catalog tables yet")',
        "add the field under its new name and deprecate the old one (a later version drops it); "
        + DATABRICKS_WAY,
    ),
}


# A managed table of an OSS catalog is catalog-managed (its protocol lists the feature), and the catalog
# blocks OPTIMIZE there, which REORG … APPLY (PURGE) is (measured by tests/engine/test_unity_recipes.py:
# "[DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION] OPTIMIZE is blocked by the catalog for Catalog-Managed
# tables"); an external table purges. `plan` reads no table, so the spark engine refuses it before `apply`
# runs an op.
CATALOG_MANAGED_FEATURES = frozenset({"catalogManaged", "catalogOwned-preview"})
# The ops that rewrite files that way: the purge, DROP FEATURE typeWidening (it rewrites the files written in
# the old type first; measured the same way, type_widening_off on a managed table) and the recluster after new
# clustering keys, an OPTIMIZE … FULL itself (change_clustering on a managed table: its CLUSTER BY ran, then
# the OPTIMIZE was blocked, so it is refused before the migration's first op).
REWRITES_FILES = frozenset({"purge_dropped_columns", "drop_feature", "recluster_rows"})
PURGE_ON_CATALOG_MANAGED = (
    "it rewrites data files with OPTIMIZE (as REORG TABLE … APPLY (PURGE) and DROP FEATURE do), which Unity "
    'Catalog OSS 0.6.0 blocks on its managed (catalog-managed) tables ("OPTIMIZE is blocked by the catalog '
    'for Catalog-Managed tables")',
    "keep the table external (created with a LOCATION, docs/engines.md), where it runs; " + DATABRICKS_WAY,
)


def catalog_managed_refusal(op: Op, features: Iterable[str]) -> str | None:
    """Why Unity Catalog OSS cannot run `op` on a table with these protocol features; None when it can."""
    if op.kind not in REWRITES_FILES or CATALOG_MANAGED_FEATURES.isdisjoint(features):
        return None
    return f"{PURGE_ON_CATALOG_MANAGED[0]}: {PURGE_ON_CATALOG_MANAGED[1]}"


class UnityCatalogRefusedError(PlanError):
    """A migration with an op Unity Catalog OSS cannot run, refused before anything is written."""

    exit_code = ExitCode.BAD_INPUT


def refusal(op: Op) -> str | None:
    """Why Unity Catalog OSS cannot run `op`, and the way out; None when it can."""
    found = REFUSED.get(op.kind)
    return None if found is None else f"{found[0]}: {found[1]}"


def check_unity_catalog_oss(migration: Migration, places: Iterable[str]) -> None:
    """Refuse a migration that the Unity Catalog OSS catalogs of `places` (environment names, or `engine`)
    cannot run."""
    where = list(places)
    if not where:
        return
    reasons = [f"{op.summary()}: {why}" for op in migration.ops if (why := refusal(op)) is not None]
    if reasons:
        raise UnityCatalogRefusedError(
            f"{migration.table}: {', '.join(where)} run on Unity Catalog OSS, which cannot run this "
            "migration: " + "; ".join(dict.fromkeys(reasons))
        )
