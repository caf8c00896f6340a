"""The `delta-3` target executed on Delta 3.3 / Spark 3.5: recipes planned for delta-3 and applied to a table
with rows, in the second virtualenv (`.venv-delta3`, made by `make delta3`, which `make test` runs). One
subprocess runs the cases (one JVM); each case is reported as its own test.

Every recipe × {in_place, versioned} of `tests/recipes.py` runs (`delta3_run.cases()`): rows written, phase
by phase, pre-checks counted, postconditions proven, re-apply skipping every op, the rows and the column types
served through the contract's name checked, and the feature an in-place widening adds read off the table. A
case the planner refuses for delta-3 must be refused the same way in the run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
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


SHARED_RUN_ENV = "DELTA_CONTRACTS_DELTA3_RUN_DIR"  # set by the xdist controller for its workers
EXIT_CODE = "exit_code"  # written by the run's shell when the run ends
PROBLEM = "problem"  # why the run could not start


def shared_run_folder() -> Path:
    import tempfile

    return Path(tempfile.mkdtemp(prefix="dc-delta3-"))


@dataclass
class Delta3Run:
    """The delta-3 subprocess, started when the run is collected so that its JVM works beside the rest of the
    suite, and awaited by the tests below through its folder: under pytest-xdist the controller starts it
    and the worker that runs these tests reads what it wrote there."""

    folder: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def output(self) -> Path:
        return self.folder / "results.json"

    @property
    def errors(self) -> Path:
        return self.folder / "progress.log"

    def wait(self, timeout: float) -> int:
        """The run's exit code, once it has ended; pytest.fail when it could not start or did not end."""
        import time

        deadline = time.monotonic() + timeout
        while not (self.folder / EXIT_CODE).exists():
            if (self.folder / PROBLEM).exists():
                pytest.fail((self.folder / PROBLEM).read_text(encoding="utf-8"))
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"the delta-3 run did not end within {timeout:.0f} s: {self.errors}")
            time.sleep(0.5)
        return int((self.folder / EXIT_CODE).read_text(encoding="utf-8").strip())

    def stop(self) -> None:
        import signal

        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)  # the shell, and the Python and JVM it started


def launch() -> Delta3Run:
    from delta_contracts.engine.jars import availability

    run = Delta3Run(Path(os.environ.get(SHARED_RUN_ENV) or shared_run_folder()))
    python = Path(os.environ.get(VENV_ENV) or REPO / ".venv-delta3") / "bin" / "python"
    problem = ""
    if not python.exists():
        problem = f"{python} is missing: `make delta3` builds the delta-3 virtualenv"
    else:
        available, why = availability("delta-3")
        if not available:
            problem = f"the delta-3 engine cannot start: {why}"
    if problem:
        (run.folder / PROBLEM).write_text(problem, encoding="utf-8")
        return run
    env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_ENV}
    env["PYTHONPATH"] = str(REPO)
    # A shell around the run writes its exit code into the folder, for a reader that is not its parent; the
    # rename makes the code appear whole.
    script = '"$@"; echo $? > "$0.tmp" && mv "$0.tmp" "$0"'
    command = [str(python), "-m", "tests.engine.delta3_run", str(run.folder / "warehouse"), *CASES]
    with run.output.open("wb") as out, run.errors.open("wb") as err:
        run.process = subprocess.Popen(
            ["sh", "-c", script, str(run.folder / EXIT_CODE), *command],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
    return run


@pytest.fixture(scope="module")
def delta3_results(request: pytest.FixtureRequest) -> dict[str, dict[str, str]]:
    run: Delta3Run | None = request.config.stash.get(DELTA3_RUN, None)
    if run is None and hasattr(request.config, "workerinput") and os.environ.get(SHARED_RUN_ENV):
        run = Delta3Run(Path(os.environ[SHARED_RUN_ENV]))  # started by the xdist controller
    if run is None:
        run = launch()
    returncode = run.wait(timeout=3600)
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
