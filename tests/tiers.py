"""The suite's two tiers: `make test` (the README's command and CI's, whose target is 20 minutes on two
cores) and `make test-exhaustive` (the rest of the engine matrices, for a scheduled job and before a
release).

`make test` executes every kind of op in every phase it is planned in on delta-4, with rows in the table,
and on delta-3 every kind of op in every phase of the cases whose SQL differs from delta-4's; the
exhaustive tier repeats the same ops in the other recipe cases, and the slowest process tests. Which recipe
cases `make test` executes is not a hand-kept list: `covering_cases` plans every case and picks, greedily,
cases until each (op kind, phase) that any case plans is in one of them (tests/test_tiers.py holds the
rule), so a new op or recipe is executed by `make test` the day it is planned. The other cases carry the
`exhaustive` marker (`matrix`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from delta_contracts.plan.ops import Phase
from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.target import Target
from tests.recipes import RECIPES, pair

EXHAUSTIVE = pytest.mark.exhaustive
VERSIONINGS = ("in_place", "versioned")
GOLDEN = Path(__file__).resolve().parent / "golden"

Case = tuple[str, str]  # (recipe, versioning)
Feature = tuple[str, str]  # (op kind, phase), or ("refused", "") for a case the planner refuses


def all_cases() -> list[Case]:
    return [(recipe, versioning) for recipe in RECIPES for versioning in VERSIONINGS]


@functools.cache
def features(case: Case, target: Target) -> frozenset[Feature]:
    """What executing the case exercises: each (op kind, phase) of its migration, the create's included."""
    old, new = pair(*case)
    try:
        created, state = plan(None, old, target)
    except PlanError:  # the target cannot even create the old table (identity columns on delta-3)
        return frozenset({("refused", "")})
    kinds = {(op.kind, phase.value) for phase in Phase for op in created.phase(phase)}
    try:
        migration, _ = plan(old, new, target, state=state)
    except PlanError:
        return frozenset({*kinds, ("refused", "")})
    return frozenset(kinds | {(op.kind, phase.value) for phase in Phase for op in migration.phase(phase)})


def _sql_body(path: Path) -> list[str]:
    """A golden `.sql` file without its comment lines (the header names the target)."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("--")]


def differs_from_delta_4(case: Case, target: Target) -> bool:
    """Whether the case's SQL for `target` differs from its delta-4 SQL beyond the header."""
    recipe, versioning = case
    mine = GOLDEN / recipe / f"{versioning}.{target.value}.sql"
    reference = GOLDEN / recipe / f"{versioning}.{Target.DELTA_4.value}.sql"
    return _sql_body(mine) != _sql_body(reference)


@functools.cache
def covering_cases(target: Target) -> tuple[Case, ...]:
    """The cases `make test` executes for `target`: a greedy cover (`greedy_cover`) of the features of
    candidate cases.

    delta-4: every case is a candidate. Another target: the cases whose SQL differs from their delta-4 SQL
    and that the target executes. A case whose SQL is delta-4's runs for delta-4 in the cover or not at all,
    and a case the planner refuses for the target executes nothing on its Delta (the golden files and
    tests/test_plan_golden.py hold the refusal); both are the exhaustive tier's, on that target's Delta."""
    cases = all_cases()
    if target is not Target.DELTA_4:
        cases = [
            c for c in cases if differs_from_delta_4(c, target) and ("refused", "") not in features(c, target)
        ]
    return greedy_cover(cases, target)


def greedy_cover(cases: list[Case], target: Target) -> tuple[Case, ...]:
    """Cases until every feature of `cases` is in one of them: the case that adds the most features not yet
    covered first, the smaller case on a tie, then the matrix order."""
    planned = {case: features(case, target) for case in cases}
    left = set().union(*planned.values())
    chosen: list[Case] = []
    while left:
        best = max(cases, key=lambda c: (len(planned[c] & left), -len(planned[c]), -cases.index(c)))
        chosen.append(best)
        left -= planned[best]
    return tuple(c for c in cases if c in chosen)  # in the matrix order


def matrix(target: Target) -> list[object]:
    """Every (recipe, versioning) as pytest parameters, those outside `covering_cases(target)` marked
    `exhaustive`."""
    cover = covering_cases(target)
    return [pytest.param(*case, marks=() if case in cover else EXHAUSTIVE) for case in all_cases()]


def named_matrix(target: Target) -> list[object]:
    """`matrix` with each case as one parameter, "recipe/versioning"."""
    cover = covering_cases(target)
    return [pytest.param("/".join(c), marks=() if c in cover else EXHAUSTIVE) for c in all_cases()]
