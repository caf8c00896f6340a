"""The resident engine: one local Spark Connect server with delta-spark per warehouse, started once
(`delta-contracts engine start`) and used by every later `--engine spark` command on that warehouse instead
of a JVM of its own.

Its settings are the ones `--engine spark` gives the session it starts (`session.session_settings`: the
toolkit's, spark-defaults.conf, contracts.yml, `--conf`), so it opens the same catalog: the embedded Derby
metastore in the warehouse, which it then owns, while commands, notebooks and producers of the same user
reach the tables through it. Where it listens is in `<warehouse>/_delta_contracts/engine.json` (the record:
url, the server's pid, its watcher's pid, when it started, its idle timeout).

A watcher process (`python -m delta_contracts.engine.spark.resident WAREHOUSE`) starts the server, writes the
record once the server listens, and stops the server (and removes the record) on SIGTERM or when nothing has
used it for the idle time: use is a client connection open to its port (Linux: /proc/net/tcp, which covers
notebooks) or a touch of `engine.used`, which every command using the server makes when it starts and, while
it runs, every quarter of the idle time.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from delta_contracts.engine.base import EngineError

RECORD, USED, LOG = "engine.json", "engine.used", "spark-connect.log"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_IDLE = 30 * 60.0
STARTUP_TIMEOUT = 300.0
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_idle(text: str) -> float:
    """`30m`, `2h`, `90s`, `1d` or plain seconds; `0` means never stop for idleness."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if found is None:
        raise ValueError(f"idle time '{text}': write a number and a unit, e.g. 30m, 2h, 90s (0: never)")
    return float(found.group(1)) * _UNITS[found.group(2) or "s"]


def state_folder(warehouse: Path) -> Path:
    return warehouse.resolve() / "_delta_contracts"


@dataclass(frozen=True)
class Record:
    url: str
    pid: int  # the server's JVM (leader of its own process group)
    watcher: int  # the process that stops it when idle or asked
    started: str  # ISO 8601, UTC
    idle_seconds: float  # 0: never stops for idleness
    settings: Mapping[str, str]  # the user's settings (contracts.yml, --conf) it was started with

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


def read_record(warehouse: Path) -> Record | None:
    path = state_folder(warehouse) / RECORD
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Record(**data)
    except (OSError, ValueError, TypeError):
        return None


def _write_record(warehouse: Path, record: Record) -> None:
    path = state_folder(warehouse) / RECORD
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(asdict(record), indent=2) + "\n", encoding="utf-8")
    partial.replace(path)  # readers see the whole record or none


def _remove_record(warehouse: Path, pid: int) -> None:
    record = read_record(warehouse)
    if record is not None and record.pid == pid:  # never a newer server's record
        with contextlib.suppress(FileNotFoundError):
            (state_folder(warehouse) / RECORD).unlink()


def listening(port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def _server_process(pid: int) -> bool:
    """Whether `pid` is a Spark Connect server still running (not a process that got its pid later)."""
    from delta_contracts.state.lease import process_alive

    if not process_alive(pid):
        return False
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc here: a live pid is all that can be told
    return SERVER_CLASS.encode() in command


def why_stale(record: Record) -> str | None:
    """Why a recorded server cannot be used (its process is gone, its port closed); None when it can."""
    if not _server_process(record.pid):
        return f"its process {record.pid} is not running"
    if not listening(record.port):
        return f"nothing listens at {record.url}"
    return None


def touch_used(warehouse: Path) -> None:
    path = state_folder(warehouse) / USED
    with contextlib.suppress(OSError):
        path.touch()


def keep_alive(warehouse: Path, record: Record) -> None:
    """While this process runs, touch `engine.used` every quarter of the idle time (a long `apply` is use)."""
    touch_used(warehouse)
    if record.idle_seconds <= 0:
        return

    def beat() -> None:
        while True:
            time.sleep(max(1.0, record.idle_seconds / 4))
            touch_used(warehouse)

    threading.Thread(target=beat, daemon=True, name="resident-engine-heartbeat").start()


def server_settings(
    warehouse: Path, project: Mapping[str, str], command_line: Mapping[str, str]
) -> dict[str, str]:
    """The settings `--engine spark` gives the session it starts on `warehouse`, as the server's."""
    from delta_contracts.engine.jars import derby_client_jar
    from delta_contracts.engine.spark.session import (
        DELTA_EXTENSIONS,
        LOCAL_SESSION_CONF,
        delta_jar_settings,
        read_spark_defaults,
        session_settings,
        spark_defaults_file,
    )

    found = spark_defaults_file()
    defaults = read_spark_defaults(found) if found is not None else {}
    ours = {
        **LOCAL_SESSION_CONF,
        **DELTA_EXTENSIONS,
        **delta_jar_settings(),
        "spark.app.name": "delta-contracts",
    }
    return session_settings(
        ours,
        warehouse,
        defaults=defaults,
        project=project,
        command_line=command_line,
        derby_client=derby_client_jar,
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def server_command(settings: Mapping[str, str], port: int) -> list[str]:
    command = [str(_spark_home() / "bin" / "spark-submit"), "--master", "local[2]", "--class", SERVER_CLASS]
    conf = {
        **settings,
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
    }
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return command


def _connections_to(port: int) -> int:
    """Established TCP connections to `port` here (Linux /proc/net/tcp*); -1 where that cannot be read."""
    count, read_any = 0, False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        read_any = True
        for line in lines:
            fields = line.split()
            # local address "0100007F:3A98", state "01" = ESTABLISHED
            if len(fields) > 3 and fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                count += 1
    return count if read_any else -1


def _stop_group(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


def watch(warehouse: Path, idle_seconds: float, settings: Mapping[str, str], user: Mapping[str, str]) -> int:
    """The watcher's life: start the server, record it once it listens, stop it when idle or asked."""
    folder = state_folder(warehouse)
    port = _free_port()
    env = {**os.environ, "SPARK_HOME": str(_spark_home())}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    with (folder / LOG).open("ab") as out:
        server = subprocess.Popen(
            server_command(settings, port),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # its own group: stopping it stops the JVM and nothing else
        )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not listening(port, timeout=0.5):
            if server.poll() is not None or stopping.is_set() or time.monotonic() > deadline:
                return 1
            stopping.wait(0.3)
        record = Record(
            url=f"sc://127.0.0.1:{port}",
            pid=server.pid,
            watcher=os.getpid(),
            started=datetime.now(UTC).isoformat(timespec="seconds"),
            idle_seconds=idle_seconds,
            settings=dict(user),
        )
        touch_used(warehouse)
        _write_record(warehouse, record)
        last_use = time.time()
        poll = min(5.0, max(0.5, idle_seconds / 10)) if idle_seconds > 0 else 5.0
        while not stopping.wait(poll):
            if server.poll() is not None:
                return 1
            if _connections_to(port) > 0:
                last_use = time.time()
            with contextlib.suppress(OSError):
                last_use = max(last_use, (folder / USED).stat().st_mtime)
            if idle_seconds > 0 and time.time() - last_use >= idle_seconds:
                break
        return 0
    finally:
        _stop_group(server)
        _remove_record(warehouse, server.pid)


def start(
    warehouse: Path,
    idle_seconds: float,
    project: Mapping[str, str],
    command_line: Mapping[str, str],
) -> Record:
    """Start the watcher (which starts the server), wait until the server listens, open its catalog."""
    folder = state_folder(warehouse)
    folder.mkdir(parents=True, exist_ok=True)
    user = {**project, **command_line}
    settings = server_settings(warehouse, project, command_line)
    request = json.dumps({"idle": idle_seconds, "settings": settings, "user": user})
    watcher = subprocess.Popen(
        [sys.executable, "-m", "delta_contracts.engine.spark.resident", str(warehouse.resolve())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=(folder / LOG).open("ab"),
        start_new_session=True,  # outlives this command and its terminal
    )
    assert watcher.stdin is not None
    watcher.stdin.write(request.encode())
    watcher.stdin.close()
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        record = read_record(warehouse)
        if record is not None and record.watcher == watcher.pid:
            break
        if watcher.poll() is not None:
            raise EngineError(f"the Spark Connect server did not start (its output: {folder / LOG})")
        if time.monotonic() > deadline:
            stop_record(warehouse, watcher.pid)
            raise EngineError(
                f"the Spark Connect server did not listen in {STARTUP_TIMEOUT:.0f} s ({folder / LOG})"
            )
        time.sleep(0.3)
    try:
        _open_catalog(record.url, settings)
    except BaseException:
        stop(warehouse)
        raise
    return record


def _open_catalog(url: str, settings: Mapping[str, str]) -> None:
    """Open the catalog now, so that a locked Derby metastore refuses `engine start`, not a later command."""
    from delta_contracts.engine.spark.connect import connect_session
    from delta_contracts.engine.spark.errors import spark_statement_errors
    from delta_contracts.engine.spark.session import CatalogLockedError, catalog_locked, embedded_metastore

    session = connect_session(url)
    try:
        session.sql("SHOW NAMESPACES IN spark_catalog").collect()
    except spark_statement_errors() as err:
        text = str(err)
        if catalog_locked(text):
            raise CatalogLockedError(embedded_metastore(settings)) from None
        lines = text.strip().splitlines() or [type(err).__name__]
        raise EngineError(f"the server cannot open its catalog: {lines[0]}") from None
    finally:
        session.stop()


def stop_record(warehouse: Path, watcher: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(watcher, signal.SIGTERM)


def stop(warehouse: Path, timeout: float = 60.0) -> Record | None:
    """Stop the warehouse's server: its watcher stops it; a watcher that is gone, the server directly."""
    from delta_contracts.state.lease import process_alive

    record = read_record(warehouse)
    if record is None:
        return None
    if process_alive(record.watcher):
        stop_record(warehouse, record.watcher)
    elif _server_process(record.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _server_process(record.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _server_process(record.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(record.pid, signal.SIGKILL)
    _remove_record(warehouse, record.pid)
    return record


def forget_stale(warehouse: Path, record: Record) -> None:
    """Remove the record of a server whose process is gone (a later `engine start` then starts afresh)."""
    if not _server_process(record.pid):
        _remove_record(warehouse, record.pid)


def _main() -> int:
    request = json.loads(sys.stdin.read())
    return watch(Path(sys.argv[1]), float(request["idle"]), request["settings"], request["user"])


if __name__ == "__main__":
    sys.exit(_main())
