"""A Derby network server on loopback: the metastore several `--engine spark` processes share
(docs/engines.md, "A catalog several processes can use"), started as a user starts it, with the jars the
toolkit fetches (`python -m delta_contracts.engine.jars derby`). It starts in about a second."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.engine.connect_server import _listening, _stop, _tail, free_port

SERVER_CLASS = "org.apache.derby.drda.NetworkServerControl"


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found:
        raise RuntimeError("no java on this machine: the Derby network server needs one")
    return found


@contextmanager
def derby_server(home: Path, log: Path, startup_timeout: float = 120.0) -> Iterator[str]:
    """Run the server while the block runs, its databases in `home`; yields `host:port` and stops it (and only
    it) afterwards."""
    from delta_contracts.engine.jars import derby_jars

    port = free_port()
    home.mkdir(parents=True, exist_ok=True)
    class_path = os.pathsep.join(str(p) for p in sorted(derby_jars().glob("*.jar")))
    command = [java(), f"-Dderby.system.home={home}", "-cp", class_path, SERVER_CLASS]
    # No security manager: Java 17 deprecates it (and later ones refuse it); the server listens on loopback.
    command += ["start", "-h", "127.0.0.1", "-p", str(port), "-noSecurityManager"]
    with log.open("wb") as out:
        server = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=home
        )
    try:
        deadline = time.monotonic() + startup_timeout
        while not _listening(port):
            if server.poll() is not None:
                raise RuntimeError(f"the Derby network server exited ({server.returncode}): {_tail(log)}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the Derby network server did not listen in {startup_timeout} s: {_tail(log)}"
                )
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        _stop(server)
