"""What the local engine's routes read: the table's facts as its Delta log states them, and the named
conditions of its op table (`local.ops.LOCAL_OPS`).

The choice of tool follows the table's protocol and properties as the Delta log states them, never an error
message. Each op's entry carries the facts across a whole migration (`LocalOp.project`), so that it is
checked before any op runs. A condition is attached only to the entries of the op classes it reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from delta_contracts.live import LEGACY_WRITER_FEATURES, LiveTable
from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
from delta_contracts.plan.ops import AddCheck, AddColumn, CopyRows, CreateTable, Op
from delta_contracts.sql import expressions as x

COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
# Writer features delta-rs 1.6.6 commits metadata changes under (measured: comment, constraint, NOT NULL).
DELTA_RS_WRITER_FEATURES = frozenset({"appendOnly", "invariants", "checkConstraints", "columnMapping"})
_FEATURE_PROPERTIES = {
    "delta.enableTypeWidening": "typeWidening",
    "delta.enableChangeDataFeed": "changeDataFeed",
    "delta.enableDeletionVectors": "deletionVectors",
    "delta.enableRowTracking": "rowTracking",
}
_PLAIN_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")  # referenced_columns() folds case


@dataclass(frozen=True, slots=True)
class TableFacts:
    """What decides an op's route: the table's writer features and mapping, and what Sail's catalog knows."""

    exists: bool = False
    writer_features: frozenset[str] = frozenset()
    mapped: bool = False
    sail_knows_schema: bool = False  # created by this engine in this process and not registered again since

    @classmethod
    def of(cls, live: LiveTable | None, *, sail_knows_schema: bool) -> TableFacts:
        if live is None:
            return cls()
        legacy = LEGACY_WRITER_FEATURES.get(live.min_writer_version, frozenset())
        features = set(live.writer_features) or legacy
        return cls(
            exists=True,
            writer_features=frozenset(features),
            mapped=live.properties.get(COLUMN_MAPPING_MODE, "none") != "none",
            sail_knows_schema=sail_knows_schema,
        )


def features_of(properties: dict[str, str]) -> set[str]:
    """Writer features a set of table properties turns on."""
    found = {k.removeprefix("delta.feature.") for k in properties if k.startswith("delta.feature.")}
    found |= {f for k, f in _FEATURE_PROPERTIES.items() if properties.get(k, "false").lower() == "true"}
    if properties.get(COLUMN_MAPPING_MODE, "none") != "none":
        found.add("columnMapping")
    return found


# -- conditions of the op table's capabilities: (op, the table's facts) -> whether the case applies ---------
def lacks_delta_rs_writer_features(op: Op, facts: TableFacts) -> bool:
    return not facts.writer_features <= DELTA_RS_WRITER_FEATURES


def writer_features_delta_rs_lacks(op: Op, facts: TableFacts) -> str:
    return str(sorted(facts.writer_features - DELTA_RS_WRITER_FEATURES))


def is_column_mapped(op: Op, facts: TableFacts) -> bool:
    return facts.mapped


def is_placed(op: AddColumn, facts: TableFacts) -> bool:
    """The column goes before others (the contract's order), not at the end."""
    return op.first or bool(op.after)


def known_to_sail_by_location_only(op: Op, facts: TableFacts) -> bool:
    return not facts.sail_knows_schema


def properties_set(op: Op) -> dict[str, str]:
    """The table properties an op sets (a new table's, or SET TBLPROPERTIES's); none for other ops."""
    return dict(getattr(op, "properties", ()))


def enables_column_mapping(op: Op, facts: TableFacts) -> bool:
    """The op turns column mapping on for a table that has none yet."""
    wanted = properties_set(op).get(COLUMN_MAPPING_MODE, "none")
    return wanted != "none" and not facts.mapped


def enables_change_data_feed(op: Op, facts: TableFacts) -> bool:
    return properties_set(op).get("delta.enableChangeDataFeed", "false").lower() == "true"


def creates_clustered_table(op: CreateTable, facts: TableFacts) -> bool:
    return bool(op.clustered_by)


def has_row_tracking(op: Op, facts: TableFacts) -> bool:
    """The table tracks rows, or the op turns row tracking on."""
    return "rowTracking" in facts.writer_features or "rowTracking" in features_of(properties_set(op))


def converts_map_values(op: CopyRows | CatchUpRows, facts: TableFacts) -> bool:
    """The copy's mapping converts a map's values (`transform_values`: a field of a map's struct values
    added, dropped or renamed in a versioned copy)."""
    return any("transform_values" in expression.casefold() for _, expression in op.mapping)


def merges_into_identity_columns(op: CatchUpRows, facts: TableFacts) -> bool:
    return "identityColumns" in facts.writer_features


def reads_change_data_feed(op: CatchUpRows, facts: TableFacts) -> bool:
    return op.strategy is CatchUpStrategy.CHANGE_FEED


def _names_needing_quotes(op: AddCheck) -> list[str]:
    return sorted(c for c in x.referenced_columns(op.expression) if not _PLAIN_NAME.match(c))


def check_reads_names_needing_quotes(op: AddCheck, facts: TableFacts) -> bool:
    """A CHECK over a column whose name only parses quoted (Sail would store the expression unquoted)."""
    return bool(_names_needing_quotes(op))


def names_needing_quotes(op: AddCheck, facts: TableFacts) -> str:
    return str(_names_needing_quotes(op))
