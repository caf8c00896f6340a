"""Golden SQL for every recipe × {in_place, versioned} × {Delta 3, Delta 4, Databricks}.

The files under tests/golden/ were reviewed by hand; regenerate them deliberately with
`UPDATE_GOLDEN=1 pytest tests/test_plan_golden.py` and review the diff like any migration.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.plan.sqlfile import render_sql_file
from delta_contracts.target import Target
from tests.recipes import RECIPES, base_contract, pair

GOLDEN = Path(__file__).parent / "golden"
CASES = [
    (recipe, versioning, target)
    for recipe in ["create", *RECIPES]
    for versioning in ("in_place", "versioned")
    for target in Target
]


def rendered(recipe: str, versioning: str, target: Target) -> str:
    if recipe == "create":
        migration, _ = plan(None, base_contract(versioning), target)
    else:
        old, new = pair(recipe, versioning)
        try:
            migration, _ = plan(old, new, target)
        except PlanError as err:
            return f"-- refused: {err}\n"
    return render_sql_file(migration, migration_id="0002_golden", target=target)


def golden_path(recipe: str, versioning: str, target: Target) -> Path:
    return GOLDEN / recipe / f"{versioning}.{target.value}.sql"


@pytest.mark.parametrize(("recipe", "versioning", "target"), CASES)
def test_golden(recipe: str, versioning: str, target: Target) -> None:
    actual = rendered(recipe, versioning, target)
    path = golden_path(recipe, versioning, target)
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"{path} missing: run with UPDATE_GOLDEN=1 and review it"
    assert actual == path.read_text(encoding="utf-8")


def test_targets_differ_where_delta_differs() -> None:
    """The golden matrix is not three copies: the targets really plan differently."""
    for recipe in ("make_not_null", "widen_type", "narrow_type"):
        texts = {
            t: golden_path(recipe, "in_place" if recipe != "narrow_type" else "versioned", t).read_text()
            for t in Target
        }
        assert len({v.replace(t.value, "") for t, v in texts.items()}) > 1, recipe
