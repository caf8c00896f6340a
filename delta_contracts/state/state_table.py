"""Where the apply ledger's rows are kept: an append-only Delta table, either at a path (written with
delta-rs, the same on every engine and with no Spark) or a catalog table the Spark session owns (contracts.yml
`engine.ledger`, for `spark` and `connect`: a Unity Catalog or Hive metastore table the platform team can
query and grant like any other). The catalog table is the spark engine's (`engine.spark.state_table`):
Spark is imported only under `engine/`.

Rows cross this boundary as Arrow-typed dicts: strings, ints and UTC datetimes.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from delta_contracts.errors import InputError

LEDGER_COMMIT = "delta-contracts ledger"


def who() -> tuple[str, str, int]:
    """The user, host and process every state row records (a ledger row, a lease)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        user = str(os.getuid())
    return user, socket.gethostname(), os.getpid()


class StateTableError(InputError):
    """The table could not be read, created or appended to; the message names it and says why."""


class StateTable(Protocol):
    """An append-only table of the toolkit's own rows."""

    @property
    def where(self) -> str:
        """The table's location or name, for messages."""

    def append(self, rows: Sequence[dict[str, Any]], schema: Any) -> None:
        """One Delta commit holding `rows` (typed by the pyarrow `schema`), creating the table first."""

    def read(self, schema: Any) -> list[dict[str, Any]]:
        """Every row; columns of `schema` the table lacks read as None."""


def snapshot_rows(table: Any, schema: Any) -> list[dict[str, Any]]:
    """The rows of a snapshot (a deltalake.DeltaTable) of one of the toolkit's own append-only tables (the
    ledger, the leases). Their active Parquet files are read directly when local: delta-rs's scan costs
    seconds once such a table holds a few hundred one-row files (192 files: 2.2 s against 0.5 s, measured on
    the 2-core test host under load), and every `apply` reads both at its start. The files need nothing of
    the log to be read right: no deletion vectors, partitions or column mapping; a column added to the
    schema later reads as null from older files."""
    from urllib.parse import unquote, urlparse

    import pyarrow.dataset as ds

    uris = list(table.file_uris())
    if not all(u.startswith(("file://", "/")) for u in uris):  # object storage: delta-rs's own scan
        return list(table.to_pyarrow_table().to_pylist())
    paths = [unquote(urlparse(u).path) if u.startswith("file://") else u for u in uris]
    return list(ds.dataset(paths, schema=schema, format="parquet").to_table().to_pylist())


class PathStateTable:
    """A Delta table at a folder, read and written with delta-rs."""

    def __init__(self, location: Path) -> None:
        self.location = location

    @property
    def where(self) -> str:
        return str(self.location)

    def append(self, rows: Sequence[dict[str, Any]], schema: Any) -> None:
        # Concurrent blind appends do not conflict: delta-rs retries them.
        import pyarrow as pa
        from deltalake import CommitProperties, write_deltalake
        from deltalake.exceptions import SchemaMismatchError

        self.location.parent.mkdir(parents=True, exist_ok=True)
        data = pa.Table.from_pylist(list(rows), schema=schema)
        properties = CommitProperties(custom_metadata={"userMetadata": LEDGER_COMMIT})
        try:
            write_deltalake(str(self.location), data, mode="append", commit_properties=properties)
        except SchemaMismatchError:  # a table written by an older release: the new columns are added once
            write_deltalake(
                str(self.location), data, mode="append", schema_mode="merge", commit_properties=properties
            )

    def read(self, schema: Any) -> list[dict[str, Any]]:
        from deltalake import DeltaTable

        if not (self.location / "_delta_log").is_dir():
            return []
        return snapshot_rows(DeltaTable(str(self.location)), schema)
