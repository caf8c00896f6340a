"""Where the readers log and the per-source watermarks live, and their Delta schemas.

Both are Delta tables under `<warehouse>/_delta_contracts` (the "state dir", beside the apply ledger), written
and read with delta-rs so the gate needs no Spark.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

READERS = "readers"
SOURCES = "telemetry_sources"
KINDS = ("read", "possible")
STATEMENT_CHARS = 2_000  # what the log keeps of a statement's text: enough to recognise it


def readers_path(state_dir: Path) -> Path:
    return state_dir / READERS


def sources_path(state_dir: Path) -> Path:
    return state_dir / SOURCES


def readers_schema() -> pa.Schema:
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    return pa.schema(
        [
            ("object", pa.string()),  # lower-case schema.table or schema.table.column
            ("kind", pa.string()),  # 'read' | 'possible' (the text names it but did not parse)
            ("user", pa.string()),
            ("client", pa.string()),
            ("statement_id", pa.string()),
            ("statement_time", ts),
            ("source", pa.string()),
            ("collected_at", ts),
            # The statement's text (its first STATEMENT_CHARS characters): the report's samples. Null in rows
            # logged before the column was added (a log written then gains it at its next append).
            ("statement", pa.string()),
        ]
    )


def sources_schema() -> pa.Schema:
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    return pa.schema(
        [
            ("source", pa.string()),
            # Statements up to this time were collected (the newest statement time seen).
            ("watermark", ts),
            ("collected_at", ts),
            # The oldest statement time this source ever delivered: the log says nothing about earlier reads.
            ("covered_from", ts),
            ("statements", pa.int64()),
            ("unparsed", pa.int64()),
        ]
    )


def read_delta(path: Path) -> pa.Table | None:
    """The table's current snapshot, or None when there is no Delta table at `path`."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(str(path)):
        return None
    return DeltaTable(str(path)).to_pyarrow_table()
