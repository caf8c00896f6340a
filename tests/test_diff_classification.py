"""Every row of DESIGN.md's classification table, in both directions where it has one."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from delta_contracts.contract.model import ChangeClass, Contract
from delta_contracts.diff import diff, verdict
from delta_contracts.target import Target

BASE: dict[str, Any] = {
    "apiVersion": "delta-contracts/v1",
    "id": "sales.orders",
    "version": "1.0.0",
    "owner": {"team": "commerce", "email": "c@example.com"},
    "description": "Orders.",
    "consumers": [{"name": "mart"}],
    "tags": ["gold"],
    "table": {"partitioned_by": ["order_date"], "properties": {"delta.enableChangeDataFeed": "true"}},
    "columns": [
        {"name": "order_id", "type": "bigint", "nullable": False, "description": "Id."},
        {"name": "qty", "type": "int", "checks": {"min": 0, "max": 100}},
        {"name": "status", "type": "string", "checks": {"enum": ["A", "B"], "regex": "^[A-Z]$"}},
        {"name": "price", "type": "decimal(10,2)"},
        {"name": "ratio", "type": "float"},
        {"name": "order_date", "type": "date", "nullable": False},
    ],
    "constraints": [{"name": "qty_ok", "expression": "qty < 50 OR status = 'B'"}],
    "quality": {
        "freshness": {"column": "order_date", "max_age": "PT30M"},
        "volume": {"min_rows": 100},
        "completeness": [{"column": "status", "min_ratio": 0.9}],
        "unique": [["order_id"]],
    },
}

Edit = Callable[[dict[str, Any]], None]


def col(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in doc["columns"] if c["name"] == name)


def on_column(name: str, **values: Any) -> Edit:
    return lambda d: col(d, name).update(values)


def on_checks(name: str, **values: Any) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        checks = col(d, name).setdefault("checks", {})
        for key, value in values.items():
            if value is None:
                checks.pop(key, None)
            else:
                checks[key] = value

    return edit


def add_column(spec: dict[str, Any]) -> Edit:
    return lambda d: d["columns"].append(spec)


def remove_column(name: str) -> Edit:
    return lambda d: d["columns"].remove(col(d, name))


def rename(d: dict[str, Any]) -> None:
    col(d, "price").update(name="unit_price", renamed_from="price")


def quality(key: str, value: Any) -> Edit:
    return lambda d: d["quality"].__setitem__(key, value)


# (row of the table, edit, expected codes, expected class, reverse expected codes, reverse class)
ROWS: list[tuple[str, Edit, list[str], str, list[str] | None, str | None]] = [
    (
        "description",
        lambda d: d.update(description="All orders."),
        ["DC-DC601"],
        "patch",
        ["DC-DC601"],
        "patch",
    ),
    ("owner", lambda d: d.update(owner={"team": "other"}), ["DC-DC602"], "patch", ["DC-DC602"], "patch"),
    (
        "consumers",
        lambda d: d["consumers"].append({"name": "bi"}),
        ["DC-DC603"],
        "patch",
        ["DC-DC603"],
        "patch",
    ),
    ("tags", lambda d: d.update(tags=["silver"]), ["DC-DC604"], "patch", ["DC-DC604"], "patch"),
    ("column comment", on_column("qty", description="Units."), ["DC-DC605"], "patch", ["DC-DC605"], "patch"),
    (
        "add/remove nullable column",
        add_column({"name": "note", "type": "string"}),
        ["DC-AD201"],
        "minor",
        ["DC-DS103"],
        "major",
    ),
    (
        "add/remove NOT NULL column with default",
        add_column({"name": "ch", "type": "string", "nullable": False, "default": "web"}),
        ["DC-AD202"],
        "minor",
        ["DC-DS103"],
        "major",
    ),
    (
        "add/remove NOT NULL column without default",
        add_column({"name": "region", "type": "string", "nullable": False}),
        ["DC-AD203"],
        "major",
        ["DC-DS103"],
        "major",
    ),
    (
        "widen int->bigint / narrow back",
        on_column("qty", type="bigint"),
        ["DC-MF106"],
        "minor",
        ["DC-MF107"],
        "major",
    ),
    ("widen float->double", on_column("ratio", type="double"), ["DC-MF106"], "minor", ["DC-MF107"], "major"),
    (
        "widen decimal precision",
        on_column("price", type="decimal(12,2)"),
        ["DC-MF106"],
        "minor",
        ["DC-MF107"],
        "major",
    ),
    ("other type change", on_column("price", type="string"), ["DC-MF107"], "major", ["DC-MF107"], "major"),
    (
        "add/remove enum value",
        on_checks("status", enum=["A", "B", "C"]),
        ["DC-CK305"],
        "minor",
        ["DC-CK306"],
        "major",
    ),
    ("loosen/tighten min", on_checks("qty", min=-5), ["DC-CK304"], "minor", ["DC-CK303"], "major"),
    ("loosen/tighten max", on_checks("qty", max=500), ["DC-CK304"], "minor", ["DC-CK303"], "major"),
    ("drop/add min check", on_checks("qty", min=None), ["DC-CK302"], "minor", ["DC-CK301"], "major"),
    ("drop/add regex", on_checks("status", regex=None), ["DC-CK302"], "minor", ["DC-CK301"], "major"),
    ("change regex", on_checks("status", regex="^[A-Z]+$"), ["DC-CK307"], "major", ["DC-CK307"], "major"),
    ("drop/add enum", on_checks("status", enum=None), ["DC-CK302"], "minor", ["DC-CK301"], "major"),
    (
        "drop/add table CHECK",
        lambda d: d.update(constraints=[]),
        ["DC-CK312"],
        "minor",
        ["DC-CK311"],
        "major",
    ),
    (
        "change table CHECK",
        lambda d: d.update(constraints=[{"name": "qty_ok", "expression": "qty < 40"}]),
        ["DC-CK313"],
        "major",
        ["DC-CK313"],
        "major",
    ),
    (
        "tighten/loosen freshness",
        quality("freshness", {"column": "order_date", "max_age": "PT10M"}),
        ["DC-QA501"],
        "minor",
        ["DC-QA502"],
        "major",
    ),
    (
        "tighten/loosen volume",
        quality("volume", {"min_rows": 1000}),
        ["DC-QA501"],
        "minor",
        ["DC-QA502"],
        "major",
    ),
    (
        "tighten/loosen completeness",
        quality("completeness", [{"column": "status", "min_ratio": 0.99}]),
        ["DC-QA501"],
        "minor",
        ["DC-QA502"],
        "major",
    ),
    ("remove/rename column", remove_column("ratio"), ["DC-DS103"], "major", ["DC-AD201"], "minor"),
    ("rename via renamed_from", rename, ["DC-BC102"], "major", None, None),
    (
        "nullable -> NOT NULL / back",
        on_column("qty", nullable=False),
        ["DC-MF104"],
        "major",
        ["DC-MF105"],
        "major",
    ),
    (
        "change partitioning",
        lambda d: d["table"].update(partitioned_by=[]),
        ["DC-TB401"],
        "major",
        ["DC-TB401"],
        "major",
    ),
    (
        "change unique keys",
        quality("unique", [["order_id", "order_date"]]),
        ["DC-QA503"],
        "major",
        ["DC-QA503"],
        "major",
    ),
    (
        "table property",
        lambda d: d["table"].update(properties={}),
        ["DC-TB403"],
        "minor",
        ["DC-TB403"],
        "minor",
    ),
    ("default", on_column("status", default="A"), ["DC-MF108"], "minor", ["DC-MF108"], "minor"),
    (
        "deprecation marked",
        on_column("ratio", deprecated={"since": "1.1.0"}),
        ["DC-LC701"],
        "minor",
        [],
        None,
    ),
]


def contracts(edit: Edit) -> tuple[Contract, Contract]:
    old = copy.deepcopy(BASE)
    new = copy.deepcopy(BASE)
    edit(new)
    new["version"] = "2.0.0"
    return Contract.model_validate(old), Contract.model_validate(new)


@pytest.mark.parametrize(
    ("row", "edit", "codes", "cls", "back_codes", "back_cls"), ROWS, ids=[r[0] for r in ROWS]
)
def test_classification_row(
    row: str, edit: Edit, codes: list[str], cls: str, back_codes: list[str] | None, back_cls: str | None
) -> None:
    old, new = contracts(edit)
    forward = diff(old, new)
    assert [c.code for c in forward] == codes
    assert verdict(old, new, forward).required == ChangeClass(cls)
    if back_codes is None:
        return
    backward = diff(new.model_copy(update={"version": "1.0.0"}), old.model_copy(update={"version": "2.0.0"}))
    assert [c.code for c in backward] == back_codes
    required = verdict(new, old, backward).required
    assert (required.value if required else None) == back_cls


def test_widening_depends_on_target() -> None:
    old, new = contracts(on_column("qty", type="bigint"))
    assert [c.code for c in diff(old, new, Target.DELTA_3)] == ["DC-MF107"]
    old, new = contracts(on_column("qty", type="smallint"))
    assert [c.code for c in diff(new.model_copy(update={"version": "0.9.0"}), old, Target.DELTA_3)] == [
        "DC-MF106"
    ]


def test_look_alike_rename_is_hinted_but_classified_as_remove_and_add() -> None:
    old, new = contracts(lambda d: col(d, "price").update(name="unit_price"))
    codes = {c.code: c.message for c in diff(old, new)}
    assert set(codes) == {"DC-DS103", "DC-AD201"}
    assert "looks like a rename of unit_price" in codes["DC-DS103"]


@pytest.mark.parametrize(
    ("old_version", "new_version", "declared", "ok"),
    [
        ("1.0.0", "1.1.0", "minor", True),
        ("1.0.0", "1.0.1", "patch", False),
        ("1.0.0", "2.0.0", "major", True),
        ("1.0.0", "1.0.0", "none", False),
        ("1.2.0", "1.1.9", "downgrade", False),
    ],
)
def test_declared_version_must_cover_required_bump(
    old_version: str, new_version: str, declared: str, ok: bool
) -> None:
    old, new = contracts(add_column({"name": "note", "type": "string"}))  # a minor change
    old = old.model_copy(update={"version": old_version})
    new = new.model_copy(update={"version": new_version})
    result = verdict(old, new, diff(old, new))
    assert result.declared == declared
    assert result.declared_ok is ok


def test_nothing_changed_needs_no_bump() -> None:
    old, _ = contracts(lambda d: None)
    result = verdict(old, old, diff(old, old))
    assert result.required is None and result.ok


def test_backwards_compatible_refuses_major_without_major_bump() -> None:
    old, new = contracts(remove_column("ratio"))
    new = new.model_copy(update={"version": "1.1.0"})
    result = verdict(old, new, diff(old, new))
    assert result.violations and "backwards_compatible" in result.violations[0]
    any_policy = new.model_copy(update={"evolution": new.evolution.model_copy(update={"policy": "any"})})
    assert not verdict(old, any_policy, diff(old, any_policy)).violations


def test_reclassify_allow_and_deny() -> None:
    old, new = contracts(on_column("qty", type="bigint"))
    strict = new.evolution.model_copy(update={"reclassify": {"DC-MF106": ChangeClass.MAJOR}})
    tightened = new.model_copy(update={"version": "1.1.0", "evolution": strict})
    result = verdict(old, tightened, diff(old, tightened))
    assert result.required is ChangeClass.MAJOR and not result.declared_ok and result.violations
    allowed = tightened.model_copy(update={"evolution": strict.model_copy(update={"allow": ("DC-MF106",)})})
    assert not verdict(old, allowed, diff(old, allowed)).violations
    denied = new.model_copy(update={"evolution": new.evolution.model_copy(update={"deny": ("DC-MF106",)})})
    assert "denied" in verdict(old, denied, diff(old, denied)).violations[0]
