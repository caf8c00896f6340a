"""Read a table's state straight from its Delta log with delta-rs: the engine-independent view of a table."""

from __future__ import annotations

import json
from typing import Any

from delta_contracts.engine.schema_json import columns_from_schema
from delta_contracts.live import Commit, LiveTable, commits_from_history

CONSTRAINT_PREFIX = "delta.constraints."


def _open(location: str) -> Any:
    from deltalake import DeltaTable

    return DeltaTable(location)


def read_table(location: str, name: str) -> LiveTable:
    table = _open(location)
    metadata = table.metadata()
    protocol = table.protocol()
    configuration: dict[str, str] = dict(metadata.configuration or {})
    checks = {
        k[len(CONSTRAINT_PREFIX) :]: v for k, v in configuration.items() if k.startswith(CONSTRAINT_PREFIX)
    }
    properties = {k: v for k, v in configuration.items() if not k.startswith(CONSTRAINT_PREFIX)}
    clustering = properties.get("delta.clustering.columns")  # not written by delta-rs; kept for completeness
    return LiveTable(
        name=name,
        location=location,
        columns=columns_from_schema(table.schema().to_json()),
        properties=properties,
        checks=checks,
        partition_columns=tuple(metadata.partition_columns or ()),
        clustering_columns=tuple(json.loads(clustering)) if clustering else (),
        min_reader_version=protocol.min_reader_version,
        min_writer_version=protocol.min_writer_version,
        reader_features=tuple(protocol.reader_features or ()),
        writer_features=tuple(protocol.writer_features or ()),
        version=table.version(),
        comment=metadata.description,
    )


def history(location: str, limit: int | None = None) -> list[Commit]:
    return commits_from_history(_open(location).history(limit))


def version(location: str) -> int:
    return int(_open(location).version())
