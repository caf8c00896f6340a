"""The two contracts are compared once: `plan` pairs their columns a single time, and reads what it needs
(refusals, the strategy, the recipes' column pairs) from the comparison's typed changes."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pytest

from delta_contracts.contract import pairing
from delta_contracts.contract.model import Column, Contract, TableSpec
from delta_contracts.diff import Change, diff, verdict
from delta_contracts.diff.compare import compare
from delta_contracts.plan.planner import plan
from delta_contracts.target import Target
from tests.recipes import pair

REAL_PAIR_COLUMNS = pairing.pair_columns


def _count_pairings(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Contract, Contract]]:
    """Wrap the real `pair_columns` wherever a module of the package holds it, and record each call."""
    calls: list[tuple[Contract, Contract]] = []

    def counting(old: Contract, new: Contract) -> pairing.ColumnPairing:
        calls.append((old, new))
        return REAL_PAIR_COLUMNS(old, new)

    for name, module in list(sys.modules.items()):
        if name.startswith("delta_contracts") and getattr(module, "pair_columns", None) is REAL_PAIR_COLUMNS:
            monkeypatch.setattr(module, "pair_columns", counting)
    return calls


@pytest.mark.parametrize(
    ("recipe", "versioning", "strategy", "note"),
    [
        ("rename_column", "in_place", "in_place", None),
        ("narrow_type", "in_place", "versioned", "is not a type widening"),  # a copy into a new table
        ("tighten_check", "versioned", "in_place", "the table's shape is unchanged, no copy"),
    ],
)
def test_plan_pairs_the_columns_once(
    monkeypatch: pytest.MonkeyPatch, recipe: str, versioning: str, strategy: str, note: str | None
) -> None:
    old, new = pair(recipe, versioning)
    calls = _count_pairings(monkeypatch)
    migration, _ = plan(old, new, Target.DELTA_4)
    assert (migration.strategy, note is None or any(note in n for n in migration.notes)) == (strategy, True)
    assert [call == (old, new) for call in calls] == [True]  # one pairing, of these two contracts


def _only(changes: Sequence[Change], code: str) -> Change:
    found = [c for c in changes if c.code == code]
    assert len(found) == 1, found
    return found[0]


def test_a_rename_carries_the_old_and_the_new_column() -> None:
    old, new = pair("rename_column")
    renamed = _only(diff(old, new), "DC-BC102")
    assert renamed.before is old.columns[1] and renamed.after is new.columns[1]
    assert renamed.columns() == (old.columns[1], new.columns[1])
    assert isinstance(renamed.before, Column) and renamed.before.name == "txn_amt_paise"
    assert isinstance(renamed.after, Column) and renamed.after.name == "amount_paise"
    # The payload is for the planner: the JSON users read keeps its five keys.
    assert sorted(renamed.to_json()) == ["class", "code", "field", "message", "title"]


def test_added_and_removed_columns_carry_the_one_side_they_have() -> None:
    old, new = pair("drop_column")
    removed = _only(diff(old, new), "DC-DS103")
    assert removed.before is old.columns[4] and removed.after is None
    old, new = pair("add_nullable_column")
    added = _only(diff(old, new), "DC-AD201")
    assert added.before is None and added.after is new.columns[5]


def test_table_and_rule_changes_carry_their_settings() -> None:
    old, new = pair("change_partitioning")
    partitioning = _only(diff(old, new), "DC-TB401")
    assert isinstance(partitioning.before, TableSpec) and partitioning.before.partitioned_by == ("txn_date",)
    assert isinstance(partitioning.after, TableSpec) and partitioning.after.partitioned_by == ()
    old, new = pair("rename_column")
    rule = _only(diff(old, new), "DC-CK313")
    assert rule.before is old.constraints[0] and rule.after is new.constraints[0]


def test_the_verdict_keeps_the_payloads_it_reclassifies() -> None:
    old, new = pair("narrow_type")
    doc = new.model_dump(by_alias=True)
    doc["evolution"] = {"reclassify": {"DC-MF107": "minor"}}
    new = Contract.model_validate(doc)
    changed = _only(list(verdict(old, new, diff(old, new)).changes), "DC-MF107")
    assert changed.change_class.value == "minor"
    assert changed.columns() == (old.columns[1], new.columns[1])


def test_the_comparison_holds_the_facts_the_planner_reads() -> None:
    old, new = pair("narrow_type")
    comparison = compare(old, new, Target.DELTA_4)
    assert list(comparison.changes) == diff(old, new, Target.DELTA_4)
    assert comparison.non_widening_retypes == ((old.columns[1], new.columns[1]),)
    assert comparison.retypes_columns and not comparison.partitioning_changed
    assert not comparison.switches_to_versioned
    in_place, _ = pair("tighten_check", "in_place")
    _, versioned = pair("tighten_check", "versioned")
    assert compare(in_place, versioned, Target.DELTA_4).switches_to_versioned


def test_clustering_keys_differing_in_case_only_are_no_change_to_diff_or_plan() -> None:
    """Spark resolves column names without regard to case: diff reports no clustering change, and the planner,
    which reads the comparison, plans no CLUSTER BY (it compared the keys case-sensitively before)."""
    old, _ = pair("change_clustering")
    recased = old.model_copy(
        update={
            "version": "2.4.1",
            "table": old.table.model_copy(
                update={"clustered_by": [c.upper() for c in old.table.clustered_by]}
            ),
        }
    )
    assert not [c for c in diff(old, recased, Target.DELTA_4) if c.code == "DC-TB402"]
    migration, _ = plan(old, recased, Target.DELTA_4)
    assert "set_clustering" not in {op.kind for op in migration.ops}
    _, moved = pair("change_clustering")
    changed, _ = plan(old, moved, Target.DELTA_4)
    assert [op.kind for op in changed.ops if op.kind == "set_clustering"] == ["set_clustering"]


def test_a_rule_change_carries_its_rule_as_delta_stores_it() -> None:
    """The planner reads a check's old and new CHECK from the change, normalised, not from the contracts."""
    old, new = pair("tighten_check")
    tightened = _only(diff(old, new), "DC-CK303")
    (rule,) = tightened.rules()
    assert rule.before is not None and rule.after is not None
    assert (rule.before.name, rule.after.name) == ("attempts_min", "attempts_min")
    assert ">= 0" in rule.before.expression and ">= 1" in rule.after.expression
    assert "IS NULL OR" in rule.after.expression  # attempts is nullable: NULL passes the CHECK
    old, new = pair("make_not_null")
    (rule,) = _only(diff(old, new), "DC-MF104").rules()  # status's enum loses its NULL clause
    assert rule.before is not None and rule.after is not None
    assert "IS NULL" in rule.before.expression and "IS NULL" not in rule.after.expression


def test_a_property_change_carries_its_key_and_values() -> None:
    old, new = pair("set_property")
    changed = _only(diff(old, new), "DC-TB403")
    assert changed.property_values() == ("delta.enableChangeDataFeed", None, "true")


def test_a_column_added_deprecated_is_reported_as_deprecated() -> None:
    old, _ = pair("add_nullable_column")
    doc = old.model_dump(by_alias=True, exclude_none=True)
    doc["columns"] = [*doc["columns"], {"name": "note", "type": "string", "deprecated": {"since": "2.5.0"}}]
    doc["version"] = "2.5.0"
    new = Contract.model_validate(doc)
    assert [c.code for c in diff(old, new)] == ["DC-AD201", "DC-LC701"]
    migration, _ = plan(old, new, Target.DELTA_4)
    assert "mark_deprecated" in {op.kind for op in migration.ops}
