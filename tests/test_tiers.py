"""`make test` runs every op kind in every phase on delta-4, and what differs on delta-3 (tests/tiers.py)."""

from __future__ import annotations

import pytest

from delta_contracts.target import Target
from tests.tiers import EXHAUSTIVE, all_cases, covering_cases, differs_from_delta_4, features, matrix

TARGETS = [Target.DELTA_4, Target.DELTA_3]


def test_the_covering_cases_exercise_every_feature_of_the_matrix() -> None:
    target = Target.DELTA_4
    every = set().union(*(features(case, target) for case in all_cases()))
    covered = set().union(*(features(case, target) for case in covering_cases(target)))
    assert covered == every
    # the ops the suite relies on are among them (a planner that planned nothing would cover "everything")
    kinds = {kind for kind, _ in every}
    assert {"add_column", "backfill", "copy_rows", "catch_up_rows", "rename_table", "drop_columns"} <= kinds


@pytest.mark.parametrize("target", TARGETS)
def test_the_cover_is_a_fraction_of_the_matrix_and_each_case_adds_something(target: Target) -> None:
    cover = covering_cases(target)
    assert len(cover) <= len(all_cases()) // 4, cover
    for case in cover:
        if target is not Target.DELTA_4:
            assert differs_from_delta_4(case, target), case
            continue
        others = set().union(*(features(c, target) for c in cover if c != case))
        assert features(case, target) - others, f"{case} adds nothing to the other covering cases"


def test_make_test_executes_on_delta_3_every_feature_of_the_cases_whose_sql_differs() -> None:
    target = Target.DELTA_3
    differing = [case for case in all_cases() if differs_from_delta_4(case, target)]
    assert ("type_widening_off", "in_place") in differing  # delta-3 has no DROP FEATURE typeWidening
    assert ("add_nullable_column", "in_place") not in differing
    executed = [case for case in differing if ("refused", "") not in features(case, target)]
    assert ("widen_type", "in_place") in set(differing) - set(executed)  # refused for delta-3 without a major
    cover = covering_cases(target)
    assert set(cover) <= set(executed)
    assert set().union(*(features(c, target) for c in cover)) == set().union(
        *(features(c, target) for c in executed)
    )


def test_the_cases_outside_the_cover_are_marked_exhaustive() -> None:
    cover = set(covering_cases(Target.DELTA_4))
    for param in matrix(Target.DELTA_4):
        case = tuple(param.values)  # type: ignore[attr-defined]
        marks = [getattr(m, "mark", m) for m in param.marks]  # type: ignore[attr-defined]
        marked = EXHAUSTIVE.mark in marks
        assert marked == (case not in cover), case
