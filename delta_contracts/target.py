"""Which Delta implementation a migration is planned for, and what each can do.

What Delta allows differs between OSS Delta 3.x, OSS Delta 4.x and Databricks (DESIGN.md, "Delta facts the
planner must respect"); planning and type widening take a `Target` instead of guessing.
"""

from __future__ import annotations

from enum import StrEnum


class Target(StrEnum):
    DELTA_3 = "delta-3"
    DELTA_4 = "delta-4"
    DATABRICKS = "databricks"

    @property
    def widening_rules(self) -> int:
        """The Delta major version whose type-widening rules apply (Databricks follows Delta 4)."""
        return 3 if self is Target.DELTA_3 else 4

    @property
    def supports_set_not_null(self) -> bool:
        """OSS Delta has no ALTER COLUMN SET NOT NULL on an existing column; Databricks has."""
        return self is Target.DATABRICKS

    @property
    def supports_alter_view_as(self) -> bool:
        """ALTER VIEW … AS keeps Unity Catalog grants that CREATE OR REPLACE VIEW drops."""
        return self is Target.DATABRICKS


DEFAULT_TARGET = Target.DELTA_4
