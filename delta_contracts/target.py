"""Which Delta implementation a migration is planned for, and what each can do.

What Delta allows differs between OSS Delta 3.x, OSS Delta 4.x and Databricks (DESIGN.md, "Delta facts the
planner must respect"); planning and type widening take a `Target` instead of guessing.
"""

from __future__ import annotations

from enum import StrEnum


class Target(StrEnum):
    """`delta-3` is OSS Delta 3.2 or later on Spark 3.5 (3.3 is what the tests run): 3.2 brought ALTER TABLE …
    CLUSTER BY and type widening (as the `typeWidening-preview` feature). `delta-4` is Delta 4.x on Spark 4.
    `databricks` is parser-checked only."""

    DELTA_3 = "delta-3"
    DELTA_4 = "delta-4"
    DATABRICKS = "databricks"

    @property
    def widening_rules(self) -> int:
        """The Delta major version whose type-widening rules apply (Databricks follows Delta 4)."""
        return 3 if self is Target.DELTA_3 else 4

    @property
    def type_widening_note(self) -> str:
        """What enabling `delta.enableTypeWidening` does to readers (delta-io/delta TableFeature.scala)."""
        if self is Target.DELTA_3:
            # v3.2.0/v3.3.0: the property enables the `typeWidening-preview` feature (3.1 has no widening).
            return (
                "type widening needs Delta 3.2+ on the delta-3 target and adds the typeWidening-preview "
                "table feature: readers need Delta 3.2+ (Delta 4 reads it too)"
            )
        # Delta 3.3 already reads the stable `typeWidening` feature; 3.2 only knows the preview one.
        return "type widening adds the typeWidening table feature: readers need Delta 3.3+ (or DBR 15.4+)"

    @property
    def creates_generated_columns(self) -> bool:
        """Whether `CREATE TABLE` in Spark SQL takes identity and generated columns: not on Spark 3.5 with
        Delta 3.3 (measured: the parser refuses `GENERATED … AS IDENTITY`, and `GENERATED ALWAYS AS (…)` is
        "not supported" by the catalog); delta-spark 4.4 on Spark 4 and Databricks take both."""
        return self is not Target.DELTA_3

    @property
    def supports_set_not_null(self) -> bool:
        """OSS Delta has no ALTER COLUMN SET NOT NULL on an existing column; Databricks has."""
        return self is Target.DATABRICKS

    @property
    def supports_alter_view_as(self) -> bool:
        """ALTER VIEW … AS keeps Unity Catalog grants that CREATE OR REPLACE VIEW drops."""
        return self is Target.DATABRICKS


DEFAULT_TARGET = Target.DELTA_4

# What the planner and the engines say of SET NOT NULL on OSS Delta, said once: the planner's reason for the
# CHECK it adds instead (rendered into migration files), and an OSS engine's refusal of a SetNotNull op.
NO_SET_NOT_NULL = "OSS Delta has no SET NOT NULL"
SET_NOT_NULL_REFUSAL = (
    f"{NO_SET_NOT_NULL}; plan for target {Target.DELTA_3}/{Target.DELTA_4} (a CHECK is used)"
)
