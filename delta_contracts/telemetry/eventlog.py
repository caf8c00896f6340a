"""Spark event logs as statements: SQL executions (their plans name the Delta tables scanned) and Spark
Connect operations (statement text and user), attributed to the application's user.

Layouts: a folder of single-file logs (`<app-id>[.codec][.inprogress]`) and rolling folders
(`eventlog_v2_<app-id>/events_<n>_<app-id>[.codec]`); codecs zstd (Spark 4's default), lz4, snappy or none.
A truncated or half-written file yields the events before the damage.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from delta_contracts.sql.extract import names_match
from delta_contracts.sql.names import canonical_path
from delta_contracts.telemetry.delta_schema import is_physical, logical_name
from delta_contracts.telemetry.matching import SOME_COLUMNS
from delta_contracts.telemetry.statement import Statement

SQL_START = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
CONNECT_STARTED = "org.apache.spark.sql.connect.service.SparkListenerConnectOperationStarted"
CODECS = ("zstd", "zst", "lz4", "snappy")

_CALL_SITE = re.compile(r"^\S+ at \S+:\d+$")
_SQL_START = re.compile(
    r"^\s*\(*\s*(select|with|insert|merge|update|delete|create|replace|from|table|values|describe|explain|"
    r"optimize|alter|drop|truncate|cache|copy)\b",
    re.IGNORECASE,
)
_SECTION = re.compile(r"^\(\d+\) (.*)$", re.MULTILINE)
_SCAN = re.compile(r"^Scan (?!ExistingRDD)\w+ ?([\w`.]*)\s*(?:\[[^\]]*\])?$")
_LOCATION = re.compile(r"^Location: \w+ \[([^\],]+)", re.MULTILINE)
_STATE_SCAN = re.compile(r"Delta Table State(?: with Stats)? #\d+ - (\S+?)/_delta_log")
_READ_SCHEMA = re.compile(r"^ReadSchema: struct<(.*)>$", re.MULTILINE)
# Plan nodes that write a table, as delta-spark 4 names them in event logs: INSERT `AppendDataExecV1` /
# `OverwriteByExpressionExecV1`, CTAS / RTAS / saveAsTable `AtomicCreateTableAsSelect` /
# `AtomicReplaceTableAsSelect`, MERGE / UPDATE / DELETE `Execute MergeIntoCommand` over `MergeIntoCommand`
# (and Update/Delete alike), whose Arguments name the target (`` `spark_catalog`.`sales`.`orders` ``) and its
# location (`Delta[version=2, file:/...]`).
_WRITE_NODE = re.compile(
    r"^(AppendData|OverwriteByExpression|OverwritePartitionsDynamic|ReplaceData|WriteDelta|CreateTable|"
    r"ReplaceTable|AtomicCreateTableAsSelect|AtomicReplaceTableAsSelect|CreateTableAsSelect|"
    r"ReplaceTableAsSelect|Execute \w*(Merge|Write|Update|Delete|Insert|Create)\w*|"
    r"(MergeInto|Update|Delete)Command\b)"
)
_DELTA_TABLE_V2 = re.compile(r"DeltaTableV2\([^,]*,([^,]+),")
_DELTA_LOCATION = re.compile(r"\bDelta\[version=\d+, ([^\]]+)\]")
_WRITE_NAME = re.compile(
    r"\)\),Some\(([\w`.]+)\)|^Arguments: \S+@\w+, ([\w`.]+), |^Arguments: .*?((?:`[^`]+`\.)+`[^`]+`)",
    re.MULTILINE,
)
_CONNECT_SQL = re.compile(r'\bquery: "((?:[^"\\]|\\.)*)"')
_CONNECT_TABLE = re.compile(r'\bnamed_table \{\s*unparsed_identifier: "((?:[^"\\]|\\.)*)"')


@dataclass
class _Execution:
    time: int | None = None
    description: str | None = None
    reads: set[str] = field(default_factory=set)
    columns: set[tuple[str, str]] = field(default_factory=set)  # (table name or path, column)
    # (table name or path, physical column `col-<uuid>`, the table's location): a column-mapped table's
    # columns as its files name them, mapped back to their logical names at the statement's time
    physical: set[tuple[str, str, str]] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)
    # Locations whose Delta log alone was read (a snapshot, file skipping): for a write, its own target.
    state: set[str] = field(default_factory=set)


@dataclass
class _App:
    app_id: str = ""
    name: str = ""
    user: str | None = None
    executions: dict[int, _Execution] = field(default_factory=dict)
    connect: dict[str, Statement] = field(default_factory=dict)  # job tag -> operation
    paths: dict[str, str] = field(default_factory=dict)  # table location -> catalog name


def log_files(root: Path) -> list[list[Path]]:
    """The logs under `root` (a folder of logs, a rolling folder or one file), each as its files in order."""
    if root.is_file():
        return [[root]]
    if root.name.startswith("eventlog_v2_"):
        return [_rolling_parts(root)]
    logs: list[list[Path]] = []
    for entry in sorted(root.iterdir()):
        if entry.is_dir() and entry.name.startswith("eventlog_v2_"):
            logs.append(_rolling_parts(entry))
        elif entry.is_file() and not entry.name.startswith(".") and not entry.name.endswith(".crc"):
            logs.append([entry])
    return [parts for parts in logs if parts]


def _rolling_parts(folder: Path) -> list[Path]:
    parts = [p for p in folder.iterdir() if p.is_file() and p.name.startswith("events_")]

    def index(path: Path) -> int:
        match = re.match(r"events_(\d+)_", path.name)
        return int(match.group(1)) if match else 0

    return sorted(parts, key=index)


def read_statements(root: Path) -> Iterator[Statement]:
    """Every statement of every log under `root`."""
    for parts in log_files(root):
        app = _App()
        for part in parts:
            for line in _lines(part):
                _take(app, line)
        yield from _statements(app)


def _lines(path: Path) -> Iterator[str]:
    data = decompress(path)
    for raw in data.split(b"\n"):
        if raw.strip():
            yield raw.decode("utf-8", errors="replace")


def decompress(path: Path) -> bytes:
    """The file's bytes, decompressed by the codec its name ends with; as much as is readable."""
    name = path.name.removesuffix(".inprogress")
    codec = name.rsplit(".", 1)[-1] if "." in name else ""
    raw = path.read_bytes()
    if codec in ("zstd", "zst"):
        return _zstd(raw)
    if codec == "lz4":
        return _lz4_blocks(raw)
    if codec == "snappy":
        return _snappy_stream(raw)
    return raw


def _zstd(raw: bytes) -> bytes:
    import zstandard

    out = bytearray()
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    try:
        while chunk := reader.read(1 << 20):
            out += chunk
    except zstandard.ZstdError:
        pass  # a log still being written ends mid-frame: keep what came before
    return bytes(out)


def _lz4_blocks(raw: bytes) -> bytes:
    """lz4-java's LZ4BlockOutputStream, Spark's lz4 codec: 'LZ4Block' blocks, not the LZ4 frame format."""
    import lz4.block

    out = bytearray()
    pos = 0
    while pos + 21 <= len(raw) and raw[pos : pos + 8] == b"LZ4Block":
        token = raw[pos + 8]
        compressed, original, _checksum = struct.unpack_from("<iii", raw, pos + 9)
        pos += 21
        if original == 0 or pos + compressed > len(raw):
            break
        block = raw[pos : pos + compressed]
        pos += compressed
        if token & 0xF0 == 0x10:  # stored raw
            out += block
        else:
            try:
                out += lz4.block.decompress(block, uncompressed_size=original)
            except (lz4.block.LZ4BlockError, ValueError):  # a torn or corrupt block ends the log
                break
    return bytes(out)


def _snappy_stream(raw: bytes) -> bytes:
    """snappy-java's SnappyOutputStream, Spark's snappy codec: a header, then length-prefixed raw blocks."""
    import cramjam

    magic = b"\x82SNAPPY\x00"
    pos = 16 if raw.startswith(magic) else 0
    out = bytearray()
    while pos + 4 <= len(raw):
        (size,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        if size <= 0 or pos + size > len(raw):
            break
        try:
            out += bytes(cramjam.snappy.decompress_raw(raw[pos : pos + size]))
        except cramjam.DecompressionError:
            break
        pos += size
    return bytes(out)


def _take(app: _App, line: str) -> None:
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return  # a torn last line
    if not isinstance(event, dict):
        return
    kind = event.get("Event")
    if kind == "SparkListenerApplicationStart":
        app.app_id = str(event.get("App ID") or app.app_id)
        app.name = str(event.get("App Name") or app.name)
        app.user = event.get("User") or app.user
    elif kind == SQL_START:
        _take_execution(app, event)
    elif kind == CONNECT_STARTED:
        _take_connect(app, event)


def _take_execution(app: _App, event: dict[str, object]) -> None:
    execution_id = event.get("executionId")
    if not isinstance(execution_id, int):
        return
    root = event.get("rootExecutionId")
    root = root if isinstance(root, int) and root >= 0 else execution_id
    node = app.executions.setdefault(root, _Execution())
    if execution_id == root:
        time = event.get("time")
        node.time = time if isinstance(time, int) else node.time
        description = event.get("description")
        node.description = description if isinstance(description, str) else None
    tags = event.get("jobTags")
    if isinstance(tags, list):
        node.tags |= {str(t) for t in tags}
    plan = event.get("physicalPlanDescription")
    if isinstance(plan, str):
        _read_plan(app, node, plan)


def _read_plan(app: _App, node: _Execution, plan: str) -> None:
    headers = list(_SECTION.finditer(plan))
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(plan)
        title, body = header.group(1).strip(), plan[header.end() : end]
        if _WRITE_NODE.match(title):
            paths = [_path(p) for p in _DELTA_TABLE_V2.findall(body) + _DELTA_LOCATION.findall(body)]
            names = [(a or b or c).replace("`", "").casefold() for a, b, c in _WRITE_NAME.findall(body)]
            node.writes |= set(paths) | set(names)
            if len(paths) == 1 and len(names) == 1:
                app.paths[paths[0]] = names[0]
            continue
        scan = _SCAN.match(title)
        if scan:
            locations = [_path(p) for p in _LOCATION.findall(body)]
            logs = [p.split("/_delta_log", 1)[0] for p in locations if "/_delta_log" in p]
            if logs:  # Delta reading a table's own log (snapshot, file skipping): a read, without columns
                node.state |= set(logs)
                continue
            name = scan.group(1).replace("`", "").casefold() or (locations[0] if locations else "")
            if name:
                node.reads.add(name)
                if scan.group(1):
                    app.paths.update(dict.fromkeys(locations, name))
                for schema in _READ_SCHEMA.findall(body):
                    for column in _top_level_fields(schema):
                        if is_physical(column):
                            node.physical.add((name, column, locations[0] if locations else ""))
                        else:
                            node.columns.add((name, column))
        for path in _STATE_SCAN.findall(title + "\n" + body):
            node.state.add(_path(path))


def _top_level_fields(schema: str) -> list[str]:
    names, depth, current = [], 0, ""
    for char in schema:
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        if depth == 0 and char == ",":
            names.append(current)
            current = ""
        else:
            current += char
    names.append(current)
    return [n.split(":", 1)[0].strip("` ").casefold() for n in names if ":" in n]


def _path(location: str) -> str:
    return canonical_path(location)


def _take_connect(app: _App, event: dict[str, object]) -> None:
    tag = str(event.get("jobTag") or event.get("operationId") or "")
    if not tag:
        return
    text = event.get("statementText")
    text = text if isinstance(text, str) else ""
    sql = _CONNECT_SQL.search(text)
    tables = tuple(_unescape(t).casefold() for t in _CONNECT_TABLE.findall(text))
    when = event.get("eventTime")
    app.connect[tag] = Statement(
        statement_id=str(event.get("operationId") or tag),
        statement_time=_time(when if isinstance(when, int) else None),
        user=str(event.get("userName") or event.get("userId") or "") or None,
        client="spark-connect",
        text=_unescape(sql.group(1)) if sql else None,
        tables_read=tables or None,
    )


def _unescape(text: str) -> str:
    try:
        return str(json.loads(f'"{text}"'))
    except json.JSONDecodeError:
        return text


def _statements(app: _App) -> Iterator[Statement]:
    # Connect job tag -> (reads, writes, columns read) of its executions
    merged: dict[str, tuple[set[str], set[str], set[str]]] = {}
    for root, node in sorted(app.executions.items()):
        writes = _fullest({_named(app, w) for w in node.writes})
        scanned = {_named(app, r) for r in node.reads}
        # Tables whose Delta log alone was read: `max(col)` or `count()` answered from its statistics
        # names no column, so which columns were read is unknown (`<table>.*`).
        from_log = {_named(app, p) for p in node.state if not _is_target_location(p, writes)} - scanned
        # A write reads its own target (its log, the rows a MERGE or UPDATE rewrites): that is no reader.
        reads = {r for r in scanned | from_log if not _written(r, writes)}
        found = node.columns | {(t, _logical(where, c, node.time)) for t, c, where in node.physical}
        columns = {f"{_named(app, t)}.{c}" for t, c in found if not _written(_named(app, t), writes)}
        columns |= {f"{t}.{SOME_COLUMNS}" for t in from_log & reads}
        operation = next((t for t in node.tags if t in app.connect), None)
        if operation is not None:  # the executions of a Connect operation belong to that operation
            op_reads, op_writes, op_columns = merged.setdefault(operation, (set(), set(), set()))
            op_reads.update(reads)
            op_columns.update(columns)
            op_writes.update(writes)
            continue
        description = node.description or ""
        text = description if _SQL_START.match(description) and not _CALL_SITE.match(description) else None
        if not reads and not writes and text is None:
            continue
        yield Statement(
            statement_id=f"{app.app_id}:{root}",
            statement_time=_time(node.time),
            user=app.user,
            client=f"spark:{app.name}" if app.name else "spark",
            text=text,
            tables_read=tuple(sorted(reads)),
            columns_read=tuple(sorted(columns)),
            tables_written=tuple(sorted(writes)),
        )
    for tag, op in app.connect.items():
        plan_reads, plan_writes, plan_columns = merged.get(tag, (set(), set(), set()))
        # Delta's internal executions of a write (its snapshot, file skipping) scan the target: no reader.
        known = (set(op.tables_read or ()) | plan_reads) - plan_writes
        yield Statement(
            statement_id=f"{app.app_id}:{op.statement_id}",
            statement_time=op.statement_time,
            user=op.user or app.user,
            client=op.client,
            text=op.text,
            tables_read=tuple(sorted(known)),
            columns_read=tuple(sorted(plan_columns)),
            tables_written=tuple(sorted(plan_writes)),
        )


def _written(name: str, writes: set[str]) -> bool:
    return any(names_match(name.split("."), w.split(".")) for w in writes if "`" not in w) or name in writes


def _fullest(names: set[str]) -> set[str]:
    """One name per table: `spark_catalog.sales.orders` and `sales.orders` are the same target."""
    return {n for n in names if not any(o != n and o.endswith("." + n) for o in names)}


def _is_target_location(path: str, writes: set[str]) -> bool:
    """A managed table's location ends in `<schema>.db/<table>` (or `<table>`): a CTAS / RTAS reading the
    log of the table it replaces names no location, only the table."""
    parts = path.rstrip("/").split("/")
    for name in writes:
        pieces = name.split(".")
        if parts[-1] == pieces[-1] and (
            len(pieces) < 2 or len(parts) < 2 or parts[-2] in (f"{pieces[-2]}.db", pieces[-2])
        ):
            return True
    return False


def _named(app: _App, table: str) -> str:
    """A catalog name when the application named the table at that location, else a path read."""
    if "/" not in table:
        return table
    return app.paths.get(table, f"delta.`{table}`")


def _logical(location: str, physical: str, at: int | None) -> str:
    """A physical column's logical name then; unknown (`*`: which columns is not known) when the table's log
    cannot say, which makes the read a possible read of every watched column of the table."""
    return (logical_name(location, physical, at) if location else None) or SOME_COLUMNS


def _time(millis: int | None) -> datetime | None:
    return None if millis is None else datetime.fromtimestamp(millis / 1000, tz=UTC)
