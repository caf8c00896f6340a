"""The drop_feature op: a contract that turns type widening off gives older readers their protocol back
(ALTER TABLE … DROP FEATURE typeWidening, in the contract phase), where the target's Delta can drop it."""

from __future__ import annotations

import copy
from typing import Any

from delta_contracts.contract.model import Contract
from delta_contracts.live import LiveTable
from delta_contracts.plan.conditions import holds
from delta_contracts.plan.ops import DropFeature, FeatureAbsent, Phase, SetProperties
from delta_contracts.plan.planner import plan
from delta_contracts.plan.render import render
from delta_contracts.target import Target
from tests.recipes import BASE, pair

T = ("payments", "transactions")
WIDENING = "delta.enableTypeWidening"


def contract(version: str, properties: dict[str, str], attempts: str = "int") -> Contract:
    doc: dict[str, Any] = copy.deepcopy(BASE)
    doc["version"] = version
    doc["table"]["properties"] = properties
    next(c for c in doc["columns"] if c["name"] == "attempts")["type"] = attempts
    return Contract.model_validate(doc)


def drops(old: Contract, new: Contract, target: Target = Target.DELTA_4) -> list[DropFeature]:
    migration, _ = plan(old, new, target)
    return [op for op in migration.ops if isinstance(op, DropFeature)]


def test_turning_widening_off_drops_the_feature_in_the_contract_phase() -> None:
    old, new = pair("type_widening_off")  # attempts smallint -> int, and the property 'true' -> 'false'
    migration, state = plan(old, new, Target.DELTA_4)
    drop, unset = migration.phase(Phase.CONTRACT)
    assert isinstance(drop, DropFeature)
    assert (drop.table, drop.feature) == (T, "typeWidening")
    assert render(drop) == "ALTER TABLE `payments`.`transactions` DROP FEATURE `typeWidening`"
    assert drop.postcondition() == FeatureAbsent(T, "typeWidening")
    assert not drop.destructive  # Delta keeps every value and, on Delta 4, the history
    # DROP FEATURE unsets the property; the contract's 'false' is set after it (the widening of this same
    # migration needs the feature until then, so expand sets nothing).
    assert unset == SetProperties(
        table=T, phase=Phase.CONTRACT, properties=((WIDENING, "false"),), reason="contract properties"
    )
    # the CHECKs reading the column stand through the retype (`WidenType.checks_kept`)
    assert [op.kind for op in migration.phase(Phase.EXPAND)] == ["widen_type"]
    assert dict(state.properties)[WIDENING] == "false"
    assert drops(old, new, Target.DATABRICKS) == [drop]
    # What the drop costs writers (measured: delta-rs 1.6.6 and Sail 0.7.2 refuse to commit after it)
    warned = [w for w in migration.warnings if "checkpointProtection" in w]
    assert len(warned) == 1 and "delta-rs" in warned[0] and "TRUNCATE HISTORY" in warned[0]
    delta3, _ = plan(old, new, Target.DELTA_3)
    assert not [w for w in delta3.warnings if "checkpointProtection" in w]  # no drop there


def test_a_property_gone_from_the_contract_turns_widening_off_too() -> None:
    old = contract("2.4.0", {WIDENING: "true"})
    new = contract("2.5.0", {})
    migration, state = plan(old, new, Target.DELTA_4)
    assert [op.kind for op in migration.ops] == ["stamp_contract", "drop_feature"]
    assert not [w for w in migration.warnings if "left the contract" in w]
    assert WIDENING not in dict(state.properties)  # DROP FEATURE unsets it


def test_a_table_the_planner_widened_earlier_gets_the_feature_dropped() -> None:
    v1 = contract("2.4.0", {}, attempts="smallint")
    v2 = contract("2.5.0", {}, attempts="int")
    v3 = contract("2.6.0", {WIDENING: "false"}, attempts="int")
    _, widened = plan(v1, v2, Target.DELTA_4)
    assert dict(widened.properties)[WIDENING] == "true"  # enabled by the planner, not by the contract
    migration, _ = plan(v2, v3, Target.DELTA_4, state=widened)
    assert [op.kind for op in migration.ops] == ["stamp_contract", "drop_feature", "set_properties"]
    # Without that history the table never had the feature: nothing to drop, the property is set in expand.
    migration, _ = plan(v2, v3, Target.DELTA_4)
    assert [op.kind for op in migration.ops] == ["set_properties", "stamp_contract"]


def test_delta3_keeps_the_feature_and_says_why() -> None:
    old, new = pair("type_widening_off")
    migration, _ = plan(old, new, Target.DELTA_3)
    assert not [op for op in migration.ops if isinstance(op, DropFeature)]
    assert [op.kind for op in migration.phase(Phase.CONTRACT)] == ["set_properties"]
    assert [w for w in migration.warnings if "stays" in w] == [
        "payments.transactions: type widening is off, but the typeWidening-preview feature stays in the "
        "protocol: Delta 3.3 drops a feature only after the log retention (or 24 hours and TRUNCATE "
        "HISTORY); plan for delta-4 to drop it"
    ]
    # A property gone from the contract stays on a Delta 3 table, as any property does.
    gone, _ = plan(contract("2.4.0", {WIDENING: "true"}), contract("2.5.0", {}), Target.DELTA_3)
    assert [op.kind for op in gone.ops] == ["stamp_contract"]
    assert any("left the contract" in w for w in gone.warnings)


def test_feature_absent_reads_the_protocol() -> None:
    def table(*writer: str, reader: tuple[str, ...] = ()) -> LiveTable:
        return LiveTable("t", "/t", (), reader_features=reader, writer_features=writer)

    absent = FeatureAbsent(T, "typeWidening")
    assert not holds(absent, {T: table("appendOnly", "typeWidening")}, {})
    assert not holds(absent, {T: table(reader=("TypeWidening",))}, {})  # names compare case-insensitively
    assert holds(absent, {T: table("appendOnly", "checkpointProtection")}, {})
    assert holds(absent, {}, {})  # a table that is gone has no feature left
