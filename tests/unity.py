"""A Unity Catalog OSS server for the tests, started like any other service: from the jar cache
(`delta-contracts jars unitycatalog`, which `make test` runs), in a fresh folder of the run holding its
configuration and its H2 database, on a free port, ready when its REST API lists catalogs, stopped at the
end. A server that cannot start fails the test that needs it, with the end of its log.

Measured (../shared/unitycatalog/README.md): it starts in 15-22 s on two cores in ~400 MiB.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from delta_contracts.engine import jars

API = "/api/2.1/unity-catalog"
START_SECONDS = 180  # 15-22 s measured alone; the suite's other JVMs share the two cores
JVM_OPTIONS = ("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


class UnityServerError(RuntimeError):
    """The server did not start, or refused a request."""


@dataclass(frozen=True)
class UnityServer:
    uri: str
    folder: Path  # the run's folder: configuration, database, managed tables' storage, log

    def request(self, method: str, path: str, body: dict[str, object] | None = None) -> dict[str, object]:
        data = None if body is None else json.dumps(body).encode()
        call = urllib.request.Request(
            f"{self.uri}{API}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(call, timeout=30) as answer:
                text = answer.read().decode() or "{}"
        except urllib.error.HTTPError as err:
            raise UnityServerError(f"{method} {path}: {err.code} {err.read().decode()[:300]}") from None
        return dict(json.loads(text))

    def storage(self, catalog: str) -> Path:
        return self.folder / "storage" / catalog

    def create_catalog(self, name: str) -> None:
        """A catalog with a storage root, so it can hold managed tables as well as external ones."""
        root = self.storage(name)
        root.mkdir(parents=True, exist_ok=True)
        self.request("POST", "/catalogs", {"name": name, "storage_root": root.as_uri()})

    def fresh_catalog(self, hint: str) -> str:
        """A catalog named after `hint` (a test's name) that the server does not hold yet, created."""
        stem = re.sub(r"[^a-z0-9]+", "_", hint.lower()).strip("_")[:40] or "c"
        taken = set(self.catalogs())
        name = next(f"{stem}_{n}" for n in range(1, 1000) if f"{stem}_{n}" not in taken)
        self.create_catalog(name)
        return name

    def catalogs(self) -> list[str]:
        listed = self.request("GET", "/catalogs").get("catalogs") or []
        assert isinstance(listed, list)
        return [str(c["name"]) for c in listed]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _configure(folder: Path) -> None:
    """The server reads `etc/conf` under its working folder: the cached configuration, its database here."""
    conf = folder / "etc" / "conf"
    shutil.copytree(jars.unity_server_conf(), conf)
    hibernate = conf / "hibernate.properties"
    lines = [
        f"hibernate.connection.url=jdbc:h2:file:{folder / 'db' / 'h2db'};DB_CLOSE_DELAY=-1"
        if line.startswith("hibernate.connection.url=")
        else line
        for line in hibernate.read_text(encoding="utf-8").splitlines()
    ]
    hibernate.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _ready(uri: str) -> bool:
    try:
        with urllib.request.urlopen(f"{uri}{API}/catalogs", timeout=5) as answer:
            return int(answer.status) == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


@contextmanager
def unity_server(folder: Path) -> Iterator[UnityServer]:
    """The server, running from `folder` (made fresh), until the block ends."""
    folder.mkdir(parents=True, exist_ok=True)
    _configure(folder)
    jar, *deps = jars.unity_server_class_path()
    class_path = f"{jar}:{deps[0].parent}/*"
    port = free_port()
    java = shutil.which("java") or "java"
    log = folder / "server.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [java, *JVM_OPTIONS, "-cp", class_path, jars.UNITY_SERVER_CLASS, "-p", str(port)],
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while not _ready(uri):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
                raise UnityServerError(
                    f"the Unity Catalog server did not start on port {port} (exit {process.poll()}): "
                    + " | ".join(tail)
                )
            time.sleep(0.5)
        yield UnityServer(uri, folder)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
