"""The `delta-3` target executed on Delta 3.3 / Spark 3.5: recipes planned for delta-3 and applied to a table
with rows, in the second virtualenv (`.venv-delta3`, made by `make delta3`, which `make test` runs). One
subprocess runs the cases (one JVM); each case is reported as its own test.

Every recipe × {in_place, versioned} of `tests/recipes.py` runs (`delta3_run.cases()`): rows written, phase
by phase, pre-checks counted, postconditions proven, re-apply skipping every op, the rows and the column types
served through the contract's name checked, the feature an in-place widening adds read off the table, and
each case's delta-3 golden `.sql` file held to the ops it runs and run again by hand, cell by cell. A
case the planner refuses for delta-3 must be refused the same way in the run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.target import Target
from tests.engine.conftest import SKIP_SPARK
from tests.engine.delta3_run import cases
from tests.recipes import pair

pytestmark = [
    pytest.mark.engine,
    pytest.mark.skipif(SKIP_SPARK, reason="DELTA_CONTRACTS_SKIP_SPARK=1 set by the user"),
]
REPO = Path(__file__).resolve().parents[2]
VENV_ENV = "DELTA_CONTRACTS_DELTA3_VENV"
CASES = tuple(cases())
# What would point the 3.5 client at the 4.2 installation, or put it in Connect mode.
_FOREIGN_ENV = ("SPARK_HOME", "SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "PYSPARK_PYTHON", "PYTHONHOME")


EXIT_FILE, PROBLEM_FILE = "exit-code", "problem"


@dataclass
class Delta3Run:
    """The delta-3 subprocess, started when the run is collected so that its JVM works beside the rest of the
    suite (two cores, two JVMs), and awaited by the tests below. Under pytest-xdist the controller starts it
    and `publish`es its outcome in `folder`, where the worker that runs these tests reads it."""

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


def launch(folder: Path | None = None) -> Delta3Run:
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
    with run.output.open("wb") as out, run.errors.open("wb") as err:
        run.process = subprocess.Popen(
            [str(python), "-m", "tests.engine.delta3_run", str(run.folder / "warehouse"), *CASES],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=err,
        )
    return run


# Under pytest-xdist: the folder the controller's delta-3 run publishes in (tests/conftest.py).
SHARED_FOLDER = "delta3_folder"


@pytest.fixture(scope="module")
def delta3_results(request: pytest.FixtureRequest) -> dict[str, dict[str, str]]:
    run = request.config.stash.get(DELTA3_RUN, None)
    if run is None:
        shared = getattr(request.config, "workerinput", {}).get(SHARED_FOLDER)
        run = Delta3Run(Path(shared)) if shared else launch()
    if run.problem:
        pytest.fail(run.problem)
    returncode = run.exit_code(timeout=3600)
    assert returncode == 0, run.errors.read_text(errors="replace")[-4000:]
    results: dict[str, dict[str, str]] = json.loads(run.output.read_text().strip().splitlines()[-1])
    return results


DELTA3_RUN = pytest.StashKey[Delta3Run]()


def test_the_second_virtualenv_runs_spark_35(delta3_results: dict[str, Any]) -> None:
    detail = delta3_results["_versions"]["detail"]
    assert detail.startswith("pyspark 3.5.") and ", 3.5." in detail, detail


@pytest.mark.parametrize("case", CASES)
def test_recipe_executes_on_delta3(delta3_results: dict[str, dict[str, str]], case: str) -> None:
    recipe, versioning = case.split("/")
    old, new = pair(recipe, versioning)
    _, state = plan(None, old, Target.DELTA_3)
    try:
        plan(old, new, Target.DELTA_3, state=state)
    except PlanError as err:  # the planner refuses it for delta-3: the run must refuse it the same way
        assert delta3_results[case]["status"] == "refused", delta3_results[case]
        # the run plans each case under a schema of its own (recipe_run.execute_case)
        detail = re.sub(r"\brecipe\d+\.", f"{old.table_parts[0]}.", delta3_results[case]["detail"])
        assert detail == str(err)
        return
    result = delta3_results[case]
    assert result["status"] == "ok", f"{case} on Delta 3.3: {result['detail']}"
