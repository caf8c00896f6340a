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


@dataclass
class Delta3Run:
    """The delta-3 subprocess, started when the run is collected so that its JVM works beside the rest of the
    suite (two cores, two JVMs), and awaited by the tests below."""

    process: subprocess.Popen[bytes] | None
    output: Path
    errors: Path
    problem: str = ""  # why it could not start


def launch() -> Delta3Run:
    import tempfile

    from delta_contracts.engine.jars import availability

    folder = Path(tempfile.mkdtemp(prefix="dc-delta3-"))
    run = Delta3Run(None, folder / "results.json", folder / "progress.log")
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
            [str(python), "-m", "tests.engine.delta3_run", str(folder / "warehouse"), *CASES],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=err,
        )
    return run


@pytest.fixture(scope="module")
def delta3_results(request: pytest.FixtureRequest) -> dict[str, dict[str, str]]:
    run: Delta3Run = request.config.stash.get(DELTA3_RUN, None) or launch()
    if run.problem:
        pytest.fail(run.problem)
    assert run.process is not None
    try:
        returncode = run.process.wait(timeout=3600)
    except subprocess.TimeoutExpired:
        run.process.kill()
        raise
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
