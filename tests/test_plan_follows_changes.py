"""The planner's only input is what `diff` reported (issue 40): every op of an in-place plan follows from a
change of the comparison, a change's ops go when the change goes, and the strategy is read from the codes.

Each case plans with the changes cut down (none, one, all but one) through the in-place recipe itself, on a
comparison whose contracts and column pairing stay as they were: an op that followed from comparing the
contracts again, or from the pairing, would survive the cut and fail these tests."""

from __future__ import annotations

from dataclasses import replace

import pytest

from delta_contracts.contract.model import Contract
from delta_contracts.contract.pairing import ColumnPairing
from delta_contracts.diff.changes import Change
from delta_contracts.diff.compare import Comparison, compare
from delta_contracts.plan.building import PlanError, initial_state
from delta_contracts.plan.in_place import plan_in_place
from delta_contracts.plan.ops import Op
from delta_contracts.plan.planner import SHAPE_CHANGES, plan, plan_changes
from delta_contracts.target import Target
from tests.recipes import RECIPES, nullable_rename, pair

ADDED = {"DC-AD201", "DC-AD202", "DC-AD203"}
CHECKS = {f"DC-CK{n}" for n in (301, 302, 303, 304, 305, 306, 307, 311, 312, 313)}
# Changes that rewrite a column's rules: its NULL-safety, its type, its name, or its presence.
REWRITE_RULES = {"DC-MF104", "DC-MF105", "DC-MF106", "DC-BC102", "DC-DC605", "DC-DS103", *ADDED}

# Fields inside a column: a rename or a drop needs column mapping; every change but a deprecation reshapes it.
FIELD_MAPPING = {"DC-BC112", "DC-DS111"}
FIELDS = {"DC-AD205", "DC-MF113", *FIELD_MAPPING}

# Which change codes may produce an op of each kind in an in-place plan (the stamp follows from every plan).
PRODUCERS: dict[str, set[str]] = {
    "add_column": {*ADDED, "DC-BC102"},
    "set_column_default": {*ADDED, "DC-MF108", "DC-BC102"},
    "drop_column_default": {"DC-MF108"},
    "set_column_comment": {"DC-DC605"},
    "set_table_comment": {"DC-DC601"},
    "widen_type": {"DC-MF106"},
    # contract properties, and the table features a change needs: column mapping for a drop, type widening,
    # column defaults
    "set_properties": {
        "DC-TB403",
        "DC-DS103",
        "DC-BC102",
        "DC-MF106",
        "DC-MF108",
        *ADDED,
        *FIELD_MAPPING,
        "DC-MF113",
    },
    "drop_feature": {"DC-TB403"},
    "mark_deprecated": {"DC-DS103", "DC-BC102", "DC-LC701", "DC-DS111", "DC-LC704"},
    "set_clustering": {"DC-TB402"},
    "recluster_rows": {"DC-TB402"},  # the existing files laid out by the new keys
    "add_check": CHECKS | REWRITE_RULES,
    "drop_check": CHECKS | REWRITE_RULES,
    "set_not_null": {"DC-MF104", *ADDED, "DC-BC102"},
    "drop_not_null": {"DC-MF105", "DC-DS103", "DC-BC102"},
    "backfill": {"DC-MF104", *ADDED, "DC-BC102"},
    "last_catch_up": {"DC-BC102"},
    "close_column": {"DC-BC102"},
    "drop_columns": {"DC-DS103", "DC-BC102"},
    "purge_dropped_columns": {"DC-DS103", "DC-BC102"},  # the dropped columns' values left in the files
    "unlist_deprecated": {"DC-DS103", "DC-BC102", "DC-DS111"},  # the list of marks without the dropped ones
    # a versioned table changed in place: its alias view shows the new columns, then loses the dropped ones
    # (and shows the fields as they are: Spark froze each column's type when it created the view)
    "create_view": {*ADDED, "DC-MF106", "DC-DS103", "DC-BC102", *FIELDS},
    # fields inside a column's type
    "add_field": {"DC-AD205"},
    "widen_field": {"DC-MF113"},
    "rename_field": {"DC-BC112"},
    "drop_field": {"DC-DS111"},
}


def _in_place_cases() -> list[tuple[str, str, Target]]:
    """Every recipe, versioning and target that `plan` plans through the in-place recipe (no copy)."""
    cases = []
    for recipe in RECIPES:
        for versioning in ("in_place", "versioned"):
            for target in Target:
                old, new = pair(recipe, versioning)
                try:
                    migration, _ = plan(old, new, target)
                except PlanError:
                    continue
                if not any(op.copies_from() is not None for op in migration.ops):
                    cases.append((recipe, versioning, target))
    return cases


CASES = _in_place_cases()


def _ops(comparison: Comparison, changes: tuple[Change, ...]) -> list[Op]:
    migration, _ = plan_in_place(replace(comparison, changes=changes), initial_state(comparison.old))
    return [op for op in migration.ops if op.kind != "stamp_contract"]


def _comparison(recipe: str, versioning: str, target: Target) -> Comparison:
    return compare(*pair(recipe, versioning), target)


def test_the_cases_cover_the_in_place_recipes() -> None:
    # the recipes that must copy (a type narrowed, partitioning) are left out, the rest is in, on each target
    recipes = {recipe for recipe, _, _ in CASES}
    copied = {"narrow_type", "change_partitioning", "copy_identity", "retype_partition_column"}
    assert copied.isdisjoint(recipes)
    assert len(recipes) == len(RECIPES) - len(copied)
    assert len(CASES) > 100


@pytest.mark.parametrize(("recipe", "versioning", "target"), CASES)
def test_with_no_change_the_plan_is_the_stamp_alone(recipe: str, versioning: str, target: Target) -> None:
    comparison = _comparison(recipe, versioning, target)
    assert comparison.changes
    assert _ops(comparison, ()) == []


@pytest.mark.parametrize(("recipe", "versioning", "target"), CASES)
def test_each_op_follows_from_a_change_that_may_produce_it(
    recipe: str, versioning: str, target: Target
) -> None:
    comparison = _comparison(recipe, versioning, target)
    alone = {change: _ops(comparison, (change,)) for change in comparison.changes}
    wrong = [
        f"{change.code} at {change.field} planned {op.kind}"
        for change, ops in alone.items()
        for op in ops
        if change.code not in PRODUCERS.get(op.kind, set())
    ]
    assert wrong == []
    # every op of the whole plan is one a change plans by itself, or a rename with a change of a rule over
    # the renamed column (the rule's bridge over both shapes of a row, and its final form after it)
    traced = {op for ops in alone.values() for op in ops}
    renames = [change for change in comparison.changes if change.code == "DC-BC102"]
    for rename in renames:
        for change in comparison.changes:
            if change.code in CHECKS:
                traced |= set(_ops(comparison, (rename, change)))
    untraced = [op.summary() for op in _ops(comparison, comparison.changes) if op not in traced]
    assert untraced == []


@pytest.mark.parametrize(("recipe", "versioning", "target"), CASES)
def test_removing_a_change_removes_its_ops(recipe: str, versioning: str, target: Target) -> None:
    comparison = _comparison(recipe, versioning, target)
    everything = _ops(comparison, comparison.changes)
    owned = []
    for change in comparison.changes:
        others = tuple(c for c in comparison.changes if c is not change)
        # the ops of the plan that this change plans by itself and no other change does
        own = set(_ops(comparison, (change,))) & set(everything)
        own -= {op for other in others for op in _ops(comparison, (other,))}
        without = _ops(comparison, others)
        assert own.isdisjoint(without), f"{change.code} at {change.field}"
        owned.extend(own)
        # and what is left follows from the changes left (a description change of a column no longer
        # renamed, say, is then planned as a kept column's)
        left = {c.code for c in others}
        assert [op.kind for op in without if not PRODUCERS[op.kind] & left] == []
    # not vacuous: a plan with ops has some that a single change owns
    assert owned or not everything


def test_the_recipes_plan_ops_from_their_changes() -> None:
    """Not vacuous: most recipes plan ops of their own, beyond the stamp."""
    planned = {
        recipe for recipe, v, t in CASES if _ops(_comparison(recipe, v, t), _comparison(recipe, v, t).changes)
    }
    assert {"widen_type", "tighten_check", "rename_column", "drop_column", "set_property"} <= planned
    assert len(planned) >= len(RECIPES) - 5


@pytest.mark.parametrize("target", list(Target), ids=lambda t: t.value)
def test_the_recipe_does_not_read_the_column_pairing(target: Target) -> None:
    """The same plan with the pairing emptied: the columns added, removed, renamed and kept are the
    changes'."""
    empty = ColumnPairing((), (), (), ())
    for old, new in [nullable_rename(), pair("rename_column"), pair("drop_column"), pair("widen_type")]:
        comparison = compare(old, new, target)
        state = initial_state(old)
        assert plan_in_place(replace(comparison, pairing=empty), state) == plan_in_place(comparison, state)


@pytest.mark.parametrize("recipe", ["narrow_type", "change_partitioning", "rename_column", "drop_column"])
def test_the_strategy_follows_from_the_codes(recipe: str) -> None:
    """A shape change of a versioned table copies it into a new one; the same comparison without its shape
    changes does not copy (the version check is left out: only the strategy is asked)."""
    old, new = pair(recipe, "versioned")
    comparison = compare(old, new, Target.DELTA_4)
    shape = comparison.having(*SHAPE_CHANGES)
    assert shape
    copied, _ = plan_changes(comparison)
    assert "copy_rows" in {op.kind for op in copied.ops}
    rest = tuple(c for c in comparison.changes if c not in shape)
    unchecked = replace(comparison, changes=rest, new=new.model_copy(update={"version": "3.0.0"}))
    try:
        kept, _ = plan_changes(unchecked)
    except PlanError as refused:  # a bump with nothing that requires it: still never a copy
        assert "copy" not in str(refused)
        return
    assert "copy_rows" not in {op.kind for op in kept.ops}


def test_a_default_expression_change_is_planned() -> None:
    """diff reports DC-MF108 for a changed default expression; the planner set nothing for it before, and
    dropped the default when a literal became an expression."""
    old, _ = pair("drop_default")  # status has default 'OK'
    doc = old.model_dump(by_alias=True, exclude_none=True)
    column = next(c for c in doc["columns"] if c["name"] == "status")
    column.pop("default")
    column["default_expression"] = "upper('ok')"
    doc["version"] = "2.5.0"
    new = Contract.model_validate(doc)
    comparison = compare(old, new, Target.DELTA_4)
    assert [c.code for c in comparison.changes] == ["DC-MF108"]
    migration, _ = plan(old, new, Target.DELTA_4)
    set_default = [op for op in migration.ops if op.kind == "set_column_default"]
    assert [getattr(op, "default", None) for op in set_default] == ["UPPER('ok')"]
    assert "drop_column_default" not in {op.kind for op in migration.ops}
