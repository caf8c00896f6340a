"""The `delta-3` target executed on Delta 3.3 / Spark 3.5: recipes planned for delta-3 and applied to a table
with rows, in the second virtualenv (`.venv-delta3`, made by `make delta3`, which `make test` runs). One
subprocess runs the cases (one JVM, started at collection: tests/engine/delta3_launch.py); each case is
reported as its own test.

Every recipe × {in_place, versioned} of `tests/recipes.py` is a case (`make test` runs the fewest that
execute every op kind and phase of the cases whose SQL differs from delta-4's, `make test-exhaustive` the
others: tests/tiers.py): rows written, phase by phase, pre-checks counted, postconditions proven, re-apply
skipping every op, the rows and the column types served through the contract's name checked, the feature
an in-place widening adds read off the table, and each case's delta-3 golden `.sql` file held to the ops it
runs and run again by hand, cell by cell. A case the planner refuses for delta-3 must be refused the same
way in the run.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.target import Target
from tests.engine.conftest import SKIP_SPARK
from tests.recipes import pair
from tests.tiers import named_matrix

pytestmark = [
    pytest.mark.engine,
    pytest.mark.skipif(SKIP_SPARK, reason="DELTA_CONTRACTS_SKIP_SPARK=1 set by the user"),
]
CASES = named_matrix(Target.DELTA_3)  # the exhaustive tier runs the cases outside the cover


# `delta3_results` (tests/engine/delta3_launch.py) awaits the run started at collection; requesting it also
# puts a test in the delta-3 lane of `make test` (tests/xdist_lanes.py).
def test_the_second_virtualenv_runs_spark_35(delta3_results: dict[str, Any]) -> None:
    detail = delta3_results["_versions"]["detail"]
    assert detail.startswith("pyspark 3.5.") and ", 3.5." in detail, detail


@pytest.mark.parametrize("case", CASES)
def test_recipe_executes_on_delta3(delta3_results: dict[str, dict[str, str]], case: str) -> None:
    recipe, versioning = case.split("/")
    old, new = pair(recipe, versioning)
    try:
        _, state = plan(None, old, Target.DELTA_3)  # refused too where delta-3 cannot create the old table
        plan(old, new, Target.DELTA_3, state=state)
    except PlanError as err:  # the planner refuses it for delta-3: the run must refuse it the same way
        assert delta3_results[case]["status"] == "refused", delta3_results[case]
        # the run plans each case under a schema of its own (recipe_run.execute_case)
        detail = re.sub(r"\brecipe\d+\.", f"{old.table_parts[0]}.", delta3_results[case]["detail"])
        assert detail == str(err)
        return
    result = delta3_results[case]
    assert result["status"] == "ok", f"{case} on Delta 3.3: {result['detail']}"
