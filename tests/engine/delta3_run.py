"""The `delta-3` target executed: run with the Python of `.venv-delta3` (PySpark 3.5 + delta-spark 3.3).

`python -m tests.engine.delta3_run WAREHOUSE [RECIPE/VERSIONING … | all]` plans the cases named (`all`: every
recipe of `tests/recipes.py` × {in_place, versioned}) for target delta-3 and executes each on the spark engine
as `tests/engine/recipe_run.py` does for delta-4 (rows written, phase by phase, pre-checks counted,
postconditions proven, re-apply skips every op, rows through the contract's name as the contracts say), the
delta-3 golden `.sql` files held to the ops and run again by hand (`tests/engine/sql_rerun.py`). Prints one
JSON object: case -> {"status": "ok" | "refused" | "failed", "detail": …}. tests/engine/test_delta3.py drives
it; this module imports no pytest so the second virtualenv needs only what the package needs.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def cases() -> list[str]:
    from tests.recipes import RECIPES

    return [f"{recipe}/{versioning}" for recipe in RECIPES for versioning in ("in_place", "versioned")]


def run_case(engine: Any, case: str) -> str:
    """Execute one case (`recipe_run`); what is wrong with it, or "" when it is right."""
    from delta_contracts.target import Target
    from tests.engine.recipe_run import execute_case, renamed
    from tests.recipes import pair

    recipe, versioning = case.split("/")
    run = execute_case(engine, recipe, versioning, Target.DELTA_3, clone_old=True, sql_files=True)
    new = renamed(pair(recipe, versioning)[1], run.schema)
    if sorted(run.served_columns) != sorted(c.name for c in new.columns):
        wanted = [c.name for c in new.columns]
        return f"the name serves {sorted(run.served_columns)}, the contract says {wanted}"
    if run.served != run.expected:
        return "the rows read through the name are not the rows the contracts say it must serve"
    # the types too: the checksum compares values as text, and a view keeps the types it was created with
    if run.served_types != run.wanted_types:
        return f"the name serves the types {run.served_types}, the contract says {run.wanted_types}"
    return widening_feature_wrong(engine, run.schema, recipe, versioning)


def widening_feature_wrong(engine: Any, schema: str, recipe: str, versioning: str) -> str:
    """Where the migration widened a type in place, the table feature Delta 3.3 added must be the one the
    planner's warning names (`Target.DELTA_3.type_widening_note`)."""
    from delta_contracts.plan.ops import WidenType
    from delta_contracts.plan.planner import plan
    from delta_contracts.target import Target
    from tests.engine.recipe_run import renamed
    from tests.recipes import pair

    old, new = (renamed(c, schema) for c in pair(recipe, versioning))
    migration, after = plan(old, new, Target.DELTA_3, state=plan(None, old, Target.DELTA_3)[1])
    if not any(isinstance(op, WidenType) for op in migration.ops):
        return ""
    live = engine.describe(after.physical, with_version=False)
    features = set(live.reader_features)
    if "typeWidening-preview" not in features or "typeWidening" in features:
        return f"widening added the reader features {sorted(features)}, not typeWidening-preview"
    if "typeWidening-preview" not in Target.DELTA_3.type_widening_note:
        return f"the delta-3 warning names another feature: {Target.DELTA_3.type_widening_note}"
    return ""


def main(argv: Sequence[str]) -> int:
    import pyspark

    from delta_contracts.engine.spark.engine import SparkEngine
    from delta_contracts.engine.spark.session import local_delta_session
    from delta_contracts.plan.planner import PlanError
    from tests.engine.session_conf import FAST_SMALL_QUERIES

    warehouse = Path(argv[0])
    wanted = cases() if list(argv[1:]) == ["all"] else list(argv[1:])
    session = local_delta_session(
        "delta-contracts-delta3", warehouse, target="delta-3", extra=FAST_SMALL_QUERIES
    )
    engine = SparkEngine(session, warehouse / "_delta_contracts")
    results: dict[str, dict[str, str]] = {
        "_versions": {
            "status": "info",
            "detail": f"pyspark {pyspark.__version__}, {engine.sql('SELECT version() AS v')[0]['v']}",
        }
    }
    try:
        for case in wanted:
            try:
                wrong = run_case(engine, case)
            except PlanError as err:
                results[case] = {"status": "refused", "detail": str(err)}
            except Exception:  # every failure is reported per case, with its traceback, to the driving test
                results[case] = {"status": "failed", "detail": traceback.format_exc()[-4000:]}
            else:
                results[case] = {"status": "failed" if wrong else "ok", "detail": wrong}
            progress = f"{case}: {results[case]['status']}\n{results[case]['detail'][-1500:]}".rstrip()
            print(progress, file=sys.stderr, flush=True)
    finally:
        session.stop()
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
