"""The delta-3 run (tests/engine/delta3_run.py, a JVM of its own, minutes long) started as soon as the run is
collected, so that it works beside the rest of the suite (two cores, two JVMs), and the `delta3_results`
fixture through which the delta-3 tests (tests/engine/test_delta3.py) await it. A plugin of the root
conftest: its hooks must also run in the pytest-xdist controller, which collects nothing.

The run executes the delta-3 cases selected (after `-k`/`-m` deselection: `make test` runs the covering
cases, `make test-exhaustive` the others, tests/tiers.py). When the run starts:
- a plain `pytest`: at the end of collection (after `-k`/`-m` deselection), when a selected test requests
  `delta3_results`;
- under pytest-xdist (`make test`): in the controller, as soon as the first worker has collected its tests
  and has said, by a file in the folder the workers share, that it holds delta-3 tests. The controller
  starts it because it outlives both workers: it publishes the exit code in that folder when the run ends,
  and the worker that runs the delta-3 tests reads it there.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.engine.session_conf import CHILD_SUBMIT_ARGS, SUBMIT_ARGS
from tests.xdist_lanes import shared_folder

REPO = Path(__file__).resolve().parents[2]
VENV_ENV = "DELTA_CONTRACTS_DELTA3_VENV"
# What would point the 3.5 client at the 4.2 installation, or put it in Connect mode.
_FOREIGN_ENV = ("SPARK_HOME", "SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "PYSPARK_PYTHON", "PYTHONHOME")
EXIT_FILE, PROBLEM_FILE = "exit-code", "problem"
# a worker holds delta-3 tests (their cases, as JSON): the controller starts the run
WANTED_FILE = "delta3-wanted"
FIXTURE = "delta3_results"


@dataclass
class Delta3Run:
    """The delta-3 subprocess, awaited by the delta-3 tests. Under pytest-xdist the controller starts it and
    `publish`es its outcome in `folder`, where the worker that runs those tests reads it."""

    folder: Path
    process: subprocess.Popen[bytes] | None = None
    problem: str = ""  # why it could not start

    @property
    def output(self) -> Path:
        return self.folder / "results.json"

    @property
    def errors(self) -> Path:
        return self.folder / "progress.log"

    def publish(self) -> None:
        """Write the problem now, or the exit code once the run ends (a thread of this process waits)."""
        if self.problem or self.process is None:
            _write(self.folder / PROBLEM_FILE, self.problem or "the delta-3 run was not started")
            return
        process = self.process
        threading.Thread(
            target=lambda: _write(self.folder / EXIT_FILE, str(process.wait())), daemon=True
        ).start()

    def exit_code(self, timeout: float) -> int:
        if self.process is not None:
            try:
                return self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                raise
        deadline = time.monotonic() + timeout
        while not (self.folder / EXIT_FILE).exists():
            if (self.folder / PROBLEM_FILE).exists():
                pytest.fail((self.folder / PROBLEM_FILE).read_text(encoding="utf-8"))
            if time.monotonic() > deadline:
                pytest.fail(f"the delta-3 run did not end within {timeout:.0f} s ({self.folder})")
            time.sleep(1)
        return int((self.folder / EXIT_FILE).read_text(encoding="utf-8"))


def _write(path: Path, text: str) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)  # whole or absent for a reader in another process


def launch(cases: list[str], folder: Path | None = None) -> Delta3Run:
    """Start the run of `cases` ("recipe/versioning")."""
    import tempfile

    from delta_contracts.engine.jars import availability

    run = Delta3Run(folder or Path(tempfile.mkdtemp(prefix="dc-delta3-")))
    python = Path(os.environ.get(VENV_ENV) or REPO / ".venv-delta3") / "bin" / "python"
    if not python.exists():
        run.problem = f"{python} is missing: `make delta3` builds the delta-3 virtualenv"
        return run
    available, why = availability("delta-3")
    if not available:
        run.problem = f"the delta-3 engine cannot start: {why}"
        return run
    env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_ENV}
    env["PYTHONPATH"] = str(REPO)
    env["PYSPARK_SUBMIT_ARGS"] = submit_args_for(cases)
    with run.output.open("wb") as out, run.errors.open("wb") as err:
        run.process = subprocess.Popen(
            [str(python), "-m", "tests.engine.delta3_run", str(run.folder / "warehouse"), *cases],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=err,
        )
    return run


# A run of this many cases or fewer lives about a minute (`make test`'s): C1 only (session_conf.py).
SHORT_RUN = 8


def submit_args_for(cases: list[str]) -> str:
    return CHILD_SUBMIT_ARGS if "all" not in cases and len(cases) <= SHORT_RUN else SUBMIT_ARGS


DELTA3_RUN = pytest.StashKey[Delta3Run]()


def _skip_spark() -> bool:
    from tests.engine.conftest import SKIP_SPARK

    return SKIP_SPARK


def selected_cases(items: list[pytest.Item]) -> list[str] | None:
    """The cases of the selected delta-3 tests (None: no test awaits the run)."""
    awaiting = [item for item in items if FIXTURE in getattr(item, "fixturenames", ())]
    if not awaiting:
        return None
    cases = (getattr(getattr(item, "callspec", None), "params", {}).get("case") for item in awaiting)
    return list(dict.fromkeys(str(case) for case in cases if case is not None))


@pytest.hookimpl(trylast=True)  # after -k / -m deselection
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start the run (a plain pytest), or tell the controller to (a pytest-xdist worker)."""
    cases = selected_cases(items)
    if _skip_spark() or cases is None:
        return
    if hasattr(config, "workerinput"):
        folder = shared_folder(config)
        if folder is not None:  # before this worker reports its collection to the controller
            _write(folder / WANTED_FILE, json.dumps(cases))
        return
    config.stash[DELTA3_RUN] = launch(cases)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """pytest-xdist controller: start the run once, as soon as a worker that holds delta-3 tests has
    collected them."""
    config = node.config
    folder = shared_folder(config)
    if folder is None or DELTA3_RUN in config.stash or not (folder / WANTED_FILE).exists():
        return
    run = launch(json.loads((folder / WANTED_FILE).read_text(encoding="utf-8")), folder)
    run.publish()
    config.stash[DELTA3_RUN] = run


@pytest.fixture(scope="module")
def delta3_results(request: pytest.FixtureRequest) -> dict[str, dict[str, str]]:
    """What the delta-3 run reports, case -> {"status", "detail"}, once it has ended."""
    run = request.config.stash.get(DELTA3_RUN, None)
    if run is None:
        folder = shared_folder(request.config)
        run = Delta3Run(folder) if folder is not None else launch(selected_cases(request.session.items) or [])
    if run.problem:
        pytest.fail(run.problem)
    returncode = run.exit_code(timeout=3600)
    assert returncode == 0, run.errors.read_text(errors="replace")[-4000:]
    results: dict[str, dict[str, str]] = json.loads(run.output.read_text().strip().splitlines()[-1])
    return results


def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(DELTA3_RUN, None)
    if run is not None and run.process is not None and run.process.poll() is None:
        run.process.kill()  # the run ended (or was stopped) before the delta-3 tests awaited it
