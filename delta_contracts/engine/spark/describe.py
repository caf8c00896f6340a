"""A Delta table as delta-spark describes it through SQL, without DESCRIBE DETAIL.

DESCRIBE DETAIL answers with `numFiles` and `sizeInBytes`, which delta-spark computes by replaying the table's
whole state — a Spark job for every new version of the table (DescribeDeltaDetailsCommand.scala:181-182 and
SnapshotState.scala:212-214 at v4.4.0; measured on Spark 4.2: 300-500 ms for the first DESCRIBE DETAIL after
each commit, 25 ms for the next). The engine reads a table after every op, so it reads what DESCRIBE DETAIL
reads without the counts:
- `DESCRIBE TABLE EXTENDED`: the table type (a view is no table), provider, location, comment and partition
  columns, in the same layout on Spark 3.5 and 4.x;
- `SHOW TBLPROPERTIES`: delta-spark's table properties, which are the metadata's configuration plus the
  protocol (`delta.minReaderVersion`, `delta.minWriterVersion`, `delta.feature.<name>` for each supported
  feature) and the clustering columns (`clusteringColumns`, from the snapshot: DeltaTableV2.scala:241-270
  at v4.4.0).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from delta_contracts.live import LEGACY_READER_FEATURES, LEGACY_WRITER_FEATURES
from delta_contracts.plan.conditions import FEATURE_PREFIX

MIN_READER = "delta.minReaderVersion"
MIN_WRITER = "delta.minWriterVersion"
CLUSTERING = "clusteringColumns"
# Keys delta-spark adds to the table properties that are not the metadata's configuration: the protocol, the
# clustering columns and the catalog's storage options (`option.<key>`, DeltaTableV2.properties). Delta never
# keeps `delta.feature.*` or the protocol versions in the configuration (it moves them into the protocol).
_NOT_CONFIGURATION_PREFIXES = (FEATURE_PREFIX, "option.")
_NOT_CONFIGURATION = frozenset({MIN_READER, MIN_WRITER, CLUSTERING})

_PARTITION_SECTION = "# Partition Information"
# A view of a catalog plugin (Unity Catalog's) is described under "# Detailed View Information" (Spark 4.2)
_DETAIL_SECTIONS = ("# Detailed Table Information", "# Detailed View Information")


@dataclass(frozen=True, slots=True)
class TableInformation:
    """The rows of DESCRIBE TABLE EXTENDED this engine needs."""

    table_type: str  # MANAGED, EXTERNAL or VIEW
    provider: str  # delta, parquet, … ("" for a view)
    location: str
    comment: str | None
    partition_columns: tuple[str, ...]

    @property
    def is_view(self) -> bool:
        return self.table_type.upper() == "VIEW"

    @classmethod
    def of(cls, rows: Iterable[Mapping[str, Any]]) -> TableInformation:
        """From DESCRIBE TABLE EXTENDED: the columns, then `# Partition Information` (a `# col_name`
        header and one row per partition column) when the table is partitioned, then `# Detailed Table
        Information`."""
        section = ""
        partitions: list[str] = []
        detail: dict[str, str] = {}
        for row in rows:
            name, value = str(row.get("col_name") or ""), str(row.get("data_type") or "")
            if name.startswith("# ") and name != "# col_name":
                section = name
            elif not name:
                section = "" if section == _PARTITION_SECTION else section
            elif section == _PARTITION_SECTION and name != "# col_name":
                partitions.append(name)
            elif section in _DETAIL_SECTIONS:
                detail.setdefault(name, value)
        return cls(
            table_type=detail.get("Type", ""),
            provider=detail.get("Provider", ""),
            location=detail.get("Location", ""),
            comment=detail.get("Comment") or None,
            partition_columns=tuple(partitions),
        )


@dataclass(frozen=True, slots=True)
class TableProperties:
    """SHOW TBLPROPERTIES of a Delta table, split into the metadata's configuration and the protocol."""

    configuration: Mapping[str, str]
    min_reader_version: int
    min_writer_version: int
    features: tuple[str, ...]  # reader and writer features together, as DESCRIBE DETAIL lists them
    clustering_columns: tuple[str, ...]

    @classmethod
    def of(cls, rows: Iterable[Mapping[str, Any]]) -> TableProperties:
        properties = {str(r["key"]): str(r["value"]) for r in rows}
        reader = int(properties.get(MIN_READER) or 1)
        writer = int(properties.get(MIN_WRITER) or 2)
        named = {k.removeprefix(FEATURE_PREFIX) for k in properties if k.startswith(FEATURE_PREFIX)}
        if writer < 7:
            named |= LEGACY_WRITER_FEATURES.get(writer, frozenset())
        if reader < 3:
            named |= LEGACY_READER_FEATURES.get(reader, frozenset())
        configuration = {
            k: v
            for k, v in properties.items()
            if k not in _NOT_CONFIGURATION and not k.startswith(_NOT_CONFIGURATION_PREFIXES)
        }
        clustering = properties.get(CLUSTERING)
        # `[["a"], ["b", "c"]]`: each column as its path of field names (a nested field has several)
        paths = json.loads(clustering) if clustering else []
        return cls(
            configuration=configuration,
            min_reader_version=reader,
            min_writer_version=writer,
            features=tuple(sorted(named)),
            clustering_columns=tuple(".".join(path) for path in paths),
        )
