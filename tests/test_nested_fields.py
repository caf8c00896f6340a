"""Fields inside a column's type (issue 46, item 3): `diff` classifies each added, dropped, renamed, widened
and deprecated field with its own code, in a struct, an array of structs and a map's struct values; `plan`
plans Delta's in-place statement for each, or refuses with exit 2 and why. The recipes of tests/recipes.py
execute the same changes on delta-spark with rows (tests/engine/test_recipes_executed.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.contract.model import ChangeClass, Contract, Quality
from delta_contracts.diff import diff
from delta_contracts.plan.building import FeatureLossError, FieldChangeError
from delta_contracts.plan.fields import AddField, DropField, RenameField, WidenField, column_type_after
from delta_contracts.plan.ops import Phase
from delta_contracts.plan.planner import plan
from delta_contracts.plan.render import render
from delta_contracts.target import Target
from tests.recipes import NESTED_RECIPES, pair

runner = CliRunner()
T = "`payments`.`transactions`"

# recipe -> (its one change: code, class, what the message names)
CLASSIFIED = {
    "add_struct_field": ("DC-AD205", ChangeClass.MINOR, "nullable field addr.country string added"),
    "add_array_struct_field": ("DC-AD205", ChangeClass.MINOR, "field items.element.price double added"),
    "add_map_value_field": ("DC-AD205", ChangeClass.MINOR, "field m.value.h string added"),
    "drop_struct_field": ("DC-DS111", ChangeClass.MAJOR, "field addr.zip removed"),
    "drop_array_struct_field": ("DC-DS111", ChangeClass.MAJOR, "field items.element.sku removed"),
    "drop_map_value_field": ("DC-DS111", ChangeClass.MAJOR, "field m.value.f removed"),
    "rename_struct_field": ("DC-BC112", ChangeClass.MAJOR, "field addr.zip renamed to addr.postal_code"),
    "rename_array_struct_field": (
        "DC-BC112",
        ChangeClass.MAJOR,
        "field items.element.sku renamed to items.element.code",
    ),
    "rename_map_value_field": ("DC-BC112", ChangeClass.MAJOR, "field m.value.f renamed to m.value.ff"),
    "widen_struct_field": ("DC-MF113", ChangeClass.MINOR, "field addr.n type widened: int -> bigint"),
    "widen_array_struct_field": (
        "DC-MF113",
        ChangeClass.MINOR,
        "items.element.q type widened: int -> bigint",
    ),
    "widen_map_value_field": ("DC-MF113", ChangeClass.MINOR, "field m.value.g type widened: int -> bigint"),
    "deprecate_struct_field": ("DC-LC704", ChangeClass.MINOR, "field addr.zip deprecated since 2.5.0"),
    "deprecate_array_struct_field": ("DC-LC704", ChangeClass.MINOR, "field items.element.sku deprecated"),
    "deprecate_map_value_field": ("DC-LC704", ChangeClass.MINOR, "field m.value.f deprecated"),
}

# recipe -> the in-place statements of its field ops (phase, SQL)
STATEMENTS = {
    "add_struct_field": [("expand", f"ALTER TABLE {T} ADD COLUMNS (`addr`.`country` STRING)")],
    "add_array_struct_field": [("expand", f"ALTER TABLE {T} ADD COLUMNS (`items`.`element`.`price` DOUBLE)")],
    "add_map_value_field": [("expand", f"ALTER TABLE {T} ADD COLUMNS (`m`.`value`.`h` STRING AFTER `f`)")],
    "drop_struct_field": [("contract", f"ALTER TABLE {T} DROP COLUMN `addr`.`zip`")],
    "drop_array_struct_field": [("contract", f"ALTER TABLE {T} DROP COLUMN `items`.`element`.`sku`")],
    "drop_map_value_field": [("contract", f"ALTER TABLE {T} DROP COLUMN `m`.`value`.`f`")],
    "rename_struct_field": [("cutover", f"ALTER TABLE {T} RENAME COLUMN `addr`.`zip` TO `postal_code`")],
    "rename_array_struct_field": [
        ("cutover", f"ALTER TABLE {T} RENAME COLUMN `items`.`element`.`sku` TO `code`")
    ],
    "rename_map_value_field": [("cutover", f"ALTER TABLE {T} RENAME COLUMN `m`.`value`.`f` TO `ff`")],
    "widen_struct_field": [("expand", f"ALTER TABLE {T} ALTER COLUMN `addr`.`n` TYPE BIGINT")],
    "widen_array_struct_field": [
        ("expand", f"ALTER TABLE {T} ALTER COLUMN `items`.`element`.`q` TYPE BIGINT")
    ],
    "widen_map_value_field": [("expand", f"ALTER TABLE {T} ALTER COLUMN `m`.`value`.`g` TYPE BIGINT")],
    "deprecate_struct_field": [],
    "deprecate_array_struct_field": [],
    "deprecate_map_value_field": [],
}
FIELD_OPS = AddField | DropField | RenameField | WidenField


def test_every_nested_recipe_is_classified_and_planned_here() -> None:
    assert set(CLASSIFIED) | {"struct_fields"} == set(NESTED_RECIPES) == set(STATEMENTS) | {"struct_fields"}


@pytest.mark.parametrize("recipe", sorted(CLASSIFIED))
def test_diff_gives_each_field_change_its_own_code(recipe: str) -> None:
    old, new = pair(recipe)
    (found,) = diff(old, new, Target.DELTA_4)
    code, change_class, words = CLASSIFIED[recipe]
    assert (found.code, found.change_class) == (code, change_class), found.message
    assert words in found.message


@pytest.mark.parametrize("recipe", sorted(STATEMENTS))
def test_plan_makes_each_field_change_in_place(recipe: str) -> None:
    old, new = pair(recipe)
    migration, _ = plan(old, new, Target.DELTA_4)
    assert migration.strategy == "in_place"
    made = [(op.phase.value, render(op)) for op in migration.ops if isinstance(op, FIELD_OPS)]
    assert made == STATEMENTS[recipe]
    props = {k: v for op in migration.phase(Phase.EXPAND) for k, v in getattr(op, "properties", ())}
    if recipe.startswith(("rename", "drop")):
        assert props.get("delta.columnMapping.mode") == "name"  # Delta renames and drops fields only so
    if recipe.startswith("widen"):
        assert props.get("delta.enableTypeWidening") == "true"
    if recipe.startswith(("drop", "deprecate")):
        marked = {k for op in migration.phase(Phase.CUTOVER) for k, _ in getattr(op, "properties", ())}
        field = CLASSIFIED[recipe][2].split()[1]
        assert f"delta_contracts.deprecated.column.{field}" in marked


def test_a_field_drop_waits_at_its_own_gate() -> None:
    old, new = pair("drop_map_value_field")
    migration, _ = plan(old, new, Target.DELTA_4)
    (drop,) = [op for op in migration.ops if isinstance(op, DropField)]
    assert drop.destructive and drop.phase is Phase.CONTRACT
    assert drop.gate.objects == ("payments.transactions.m.value.f",)
    assert drop.gate.deprecated_by == "delta_contracts.deprecated.column.m.value.f"


def test_renames_inside_a_renamed_field_name_the_parent_as_it_still_is() -> None:
    """The deeper rename runs first, while its parent still has its old name."""
    old, new = pair("rename_struct_field")
    doc = new.model_dump(mode="json", exclude_defaults=True)
    before = old.model_dump(mode="json", exclude_defaults=True)
    for d in (before, doc):
        d["columns"] = [c for c in d["columns"] if c["name"] != "addr"]
    before["columns"].insert(0, {"name": "addr", "type": "struct<loc:struct<zip:string>,n:int>"})
    doc["columns"].insert(
        0,
        {
            "name": "addr",
            "type": "struct<place:struct<postal_code:string>,n:int>",
            "renamed_fields": {"loc": "place", "loc.zip": "postal_code"},
        },
    )
    migration, _ = plan(Contract.model_validate(before), Contract.model_validate(doc), Target.DELTA_4)
    renames = [render(op) for op in migration.ops if isinstance(op, RenameField)]
    assert renames == [
        f"ALTER TABLE {T} RENAME COLUMN `addr`.`loc`.`zip` TO `postal_code`",
        f"ALTER TABLE {T} RENAME COLUMN `addr`.`loc` TO `place`",
    ]


def test_a_versioned_major_copies_each_value_reshaped_field_by_field() -> None:
    old, new = pair("struct_fields", "versioned")
    migration, _ = plan(old, new, Target.DELTA_4)
    assert migration.strategy == "versioned"
    copy_sql = render(next(op for op in migration.ops if op.kind == "copy_rows"))
    assert (
        "STRUCT(`addr`.`zip` AS `zip`, CAST(`addr`.`n` AS BIGINT) AS `n`, CAST(NULL AS STRING) AS `country`)"
        in (copy_sql)
    )
    assert (
        "TRANSFORM(`items`, `e` -> IF(`e` IS NULL, NULL, STRUCT(`e`.`sku` AS `code`, `e`.`q` AS `q`)))"
        in copy_sql
    )
    assert "TRANSFORM_VALUES(`m`, (`k`, `v`) -> IF(`v` IS NULL, NULL, STRUCT(`v`.`g` AS `g`)))" in copy_sql


def test_each_field_op_leaves_the_column_type_the_next_contract_declares() -> None:
    """What the local engine's rewrite takes each op to do to its column's type."""
    old, new = pair("struct_fields")
    migration, _ = plan(old, new, Target.DELTA_4)
    types = {c.name: c.type for c in old.columns}
    for op in migration.ops:
        if isinstance(op, FIELD_OPS):
            types[op.path[0]] = column_type_after(op, types[op.path[0]])
    assert {n: types[n] for n in ("addr", "items", "m")} == {
        c.name: c.type for c in new.columns if c.name in ("addr", "items", "m")
    }


def _with_addr(addr: dict[str, Any], version: str = "3.0.0") -> tuple[Contract, Contract]:
    old, new = pair("add_struct_field")
    doc = new.model_dump(mode="json", exclude_defaults=True)
    column = next(c for c in doc["columns"] if c["name"] == "addr")
    column.clear()
    column.update(addr)
    doc["version"] = version
    return old, Contract.model_validate(doc)


REFUSED = {
    "a NOT NULL field": (
        {"name": "addr", "type": "struct<zip:string,n:int,country:string NOT NULL>"},
        "field country is added NOT NULL",
    ),
    "a field made NOT NULL": (
        {"name": "addr", "type": "struct<zip:string NOT NULL,n:int>"},
        "field zip changes nullability",
    ),
    "fields reordered": ({"name": "addr", "type": "struct<n:int,zip:string>"}, "are reordered"),
    "a field that does not widen": (
        {"name": "addr", "type": "struct<zip:string,n:string>"},
        "n changes from int to string, not a widening",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_delta_cannot_do_to_a_field_is_refused_with_the_reason(case: str) -> None:
    addr, reason = REFUSED[case]
    old, new = _with_addr(addr)
    (found,) = diff(old, new, Target.DELTA_4)
    assert found.code == "DC-MF107" and reason in found.message
    with pytest.raises(FieldChangeError, match="no CAST reshapes them") as refused:
        plan(old, new, Target.DELTA_4)
    assert refused.value.exit_code == 2
    assert reason in str(refused.value)


def test_a_widening_delta_3_cannot_make_inside_a_struct_is_a_type_change_there() -> None:
    old, new = pair("widen_struct_field")
    (found,) = diff(old, new, Target.DELTA_3)
    assert found.code == "DC-MF107" and "not a widening" in found.message


def test_a_column_renamed_while_its_fields_change_is_refused_in_place() -> None:
    old, new = pair("add_struct_field")
    doc = new.model_dump(mode="json", exclude_defaults=True)
    column = next(c for c in doc["columns"] if c["name"] == "addr")
    column.update(name="address", renamed_from="addr")
    doc["version"] = "3.0.0"
    with pytest.raises(FieldChangeError, match="rename the column in one version") as refused:
        plan(old, Contract.model_validate(doc), Target.DELTA_4)
    assert refused.value.exit_code == 2


def test_lint_names_a_field_path_the_type_lacks(tmp_path: Path) -> None:
    _, new = pair("rename_struct_field")
    doc = new.model_dump(mode="json", exclude_defaults=True)
    column = next(c for c in doc["columns"] if c["name"] == "addr")
    column["renamed_fields"] = {"zip": "postcode"}
    column["deprecated_fields"] = {"nope": {"since": "3.0.0"}}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    done = runner.invoke(app, ["lint", str(path)])
    assert done.exit_code == 1, done.output
    assert "renamed_fields 'zip': the type has no field postcode there" in done.output
    assert "deprecated_fields 'nope': the type has no such field" in done.output
    assert f"{path.name}:" in done.output


def test_plan_exits_2_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    old, new = _with_addr(REFUSED["a NOT NULL field"][0])
    folder = tmp_path / "contracts" / "payments"
    folder.mkdir(parents=True)
    path = folder / "transactions.yaml"
    for contract in (old, new):
        data = copy.deepcopy(contract.model_dump(mode="json", by_alias=True, exclude_defaults=True))
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        done = runner.invoke(app, ["plan", str(path)])
    assert done.exit_code == 2, done.output
    assert "field country is added NOT NULL" in done.stderr
    assert "Traceback" not in done.output
    assert len(list((tmp_path / "migrations" / "payments.transactions").glob("0002_*"))) == 0


def test_a_versioned_cutover_over_a_map_column_needs_a_unique_key() -> None:
    """Without a key the cutover's fence copies the rows the new table lacks by EXCEPT ALL over whole rows,
    which Spark refuses over a map column (UNSUPPORTED_FEATURE.SET_OPERATION_ON_MAP_TYPE): refused at plan."""
    old, new = pair("drop_map_value_field", "versioned")
    keyless = [c.model_copy(update={"quality": Quality()}) for c in (old, new)]
    with pytest.raises(FeatureLossError, match=r"declare a unique key \(`quality.unique`\)") as refused:
        plan(*keyless, Target.DELTA_4)
    assert refused.value.exit_code == 2 and "map column (m)" in str(refused.value)
