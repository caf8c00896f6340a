"""Contract pairs, one per planning recipe of DESIGN.md, built from a small base contract."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from delta_contracts.contract.model import Contract

BASE: dict[str, Any] = {
    "apiVersion": "delta-contracts/v1",
    "id": "payments.transactions",
    "version": "2.4.0",
    "owner": {"team": "payments"},
    "description": "One row per payment attempt.",
    "table": {"partitioned_by": ["txn_date"]},
    "columns": [
        {"name": "txn_id", "type": "string", "nullable": False, "description": "Gateway id."},
        {"name": "txn_amt_paise", "type": "bigint", "nullable": False, "checks": {"min": 1}},
        {"name": "attempts", "type": "int", "checks": {"min": 0, "max": 10}},
        {"name": "status", "type": "string", "checks": {"enum": ["OK", "FAILED"]}},
        {"name": "legacy_channel", "type": "string"},
        {"name": "txn_date", "type": "date", "nullable": False},
    ],
    "constraints": [{"name": "amount_positive_when_ok", "expression": "status <> 'OK' OR txn_amt_paise > 0"}],
}

Mutation = Callable[[dict[str, Any]], None]


def _column(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in doc["columns"] if c["name"] == name)


def _add(column: dict[str, Any]) -> Mutation:
    return lambda d: d["columns"].insert(-1, column)


def _set(name: str, **values: Any) -> Mutation:
    return lambda d: _column(d, name).update(values)


def _drop(name: str) -> Mutation:
    return lambda d: d["columns"].remove(_column(d, name))


def _rename(d: dict[str, Any]) -> None:
    col = _column(d, "txn_amt_paise")
    col.update(name="amount_paise", renamed_from="txn_amt_paise", description="Amount in paise.")
    d["constraints"][0]["expression"] = "status <> 'OK' OR amount_paise > 0"


def _checks(name: str, checks: dict[str, Any]) -> Mutation:
    return lambda d: _column(d, name).__setitem__("checks", checks)


def _widening(attempts: str, enabled: str) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        _set("attempts", type=attempts)(d)
        d["table"]["properties"] = {"delta.enableTypeWidening": enabled}

    return mutate


RECIPES: dict[str, tuple[str, Mutation]] = {
    # name: (bump, mutation)
    "add_nullable_column": ("minor", _add({"name": "note", "type": "string", "description": "Free text."})),
    "add_not_null_with_default": (
        "minor",
        _add({"name": "channel", "type": "string", "nullable": False, "default": "web"}),
    ),
    "add_not_null_without_default": (
        "major",
        _add({"name": "region", "type": "string", "nullable": False, "fill": "'unknown'"}),
    ),
    "rename_column": ("major", _rename),
    "drop_column": ("major", _drop("legacy_channel")),
    "widen_type": ("minor", _set("attempts", type="bigint")),
    "widen_small_type": ("minor", _set("attempts", type="int")),  # from smallint, see PREPARE
    "narrow_type": (
        "major",
        _set(
            "txn_amt_paise",
            type="int",
            convert={"expression": "CAST(txn_amt_paise AS INT)", "inverse": "CAST(txn_amt_paise AS BIGINT)"},
        ),
    ),
    "tighten_check": ("major", _checks("attempts", {"min": 1, "max": 10})),
    "loosen_check": ("minor", _checks("attempts", {"min": 0})),
    "add_enum_value": ("minor", _checks("status", {"enum": ["OK", "FAILED", "PENDING"]})),
    "remove_enum_value": ("major", _checks("status", {"enum": ["OK"]})),
    "make_not_null": ("major", _set("status", nullable=False)),
    "make_nullable": ("major", _set("txn_id", nullable=True)),
    "change_partitioning": ("major", lambda d: d["table"].__setitem__("partitioned_by", [])),
    "set_property": (
        "minor",
        lambda d: d["table"].__setitem__("properties", {"delta.enableChangeDataFeed": "true"}),
    ),
    "change_comment": ("patch", _set("txn_id", description="Gateway transaction id.")),
    "change_default": ("minor", _set("status", default="OK")),
    "drop_default": ("minor", lambda d: _column(d, "status").pop("default")),
    "change_table_comment": (
        "patch",
        lambda d: d.__setitem__("description", "One row per attempt, settled."),
    ),
    "change_clustering": ("minor", lambda d: d["table"].__setitem__("clustered_by", ["txn_date", "txn_id"])),
    # a last widening, then type widening off: the contract phase drops the feature (not on Delta 3)
    "type_widening_off": ("minor", _widening("int", "false")),
    # a versioned copy of a table with an identity column: the ids are copied, new rows continue above them
    "copy_identity": (
        "major",
        _set(
            "txn_amt_paise",
            type="int",
            convert={"expression": "CAST(txn_amt_paise AS INT)", "inverse": "CAST(txn_amt_paise AS BIGINT)"},
        ),
    ),
    # the partition column retyped (not a widening): a versioned copy batched by the old table's partitions
    "retype_partition_column": (
        "major",
        _set(
            "txn_date",
            type="string",
            convert={"expression": "CAST(txn_date AS STRING)", "inverse": "CAST(txn_date AS DATE)"},
        ),
    ),
}


# Columns whose types hold fields: a struct, an array of structs, a map whose values are structs. The nested
# recipes start from the base contract with these (PREPARE) and change one field, or several at once.
NESTED_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "addr", "type": "struct<zip:string,n:int>"},
    {"name": "items", "type": "array<struct<sku:string,q:int>>"},
    {"name": "m", "type": "map<string,struct<f:string,g:int>>"},
)


def _nested(d: dict[str, Any]) -> None:
    for column in NESTED_COLUMNS:
        _add(copy.deepcopy(column))(d)
    # a versioned cutover's last catch-up compares whole rows without a key, and Spark compares no map
    d["quality"] = {"unique": [["txn_id"]]}


def _fields(**changes: dict[str, Any]) -> Mutation:
    """Each named nested column updated (its type, renamed_fields, deprecated_fields)."""

    def mutate(d: dict[str, Any]) -> None:
        for name, values in changes.items():
            _column(d, name).update(copy.deepcopy(values))

    return mutate


def _deprecated_field(path: str) -> dict[str, Any]:
    return {"deprecated_fields": {path: {"since": "2.5.0", "reason": "moved"}}}


NESTED_RECIPES: dict[str, tuple[str, Mutation]] = {
    "add_struct_field": ("minor", _fields(addr={"type": "struct<zip:string,n:int,country:string>"})),
    "add_array_struct_field": (
        "minor",
        _fields(items={"type": "array<struct<sku:string,q:int,price:double>>"}),
    ),
    # in the middle of its struct: ADD COLUMNS … AFTER
    "add_map_value_field": ("minor", _fields(m={"type": "map<string,struct<f:string,h:string,g:int>>"})),
    "drop_struct_field": ("major", _fields(addr={"type": "struct<n:int>"})),
    "drop_array_struct_field": ("major", _fields(items={"type": "array<struct<q:int>>"})),
    "drop_map_value_field": ("major", _fields(m={"type": "map<string,struct<g:int>>"})),
    "rename_struct_field": (
        "major",
        _fields(addr={"type": "struct<postal_code:string,n:int>", "renamed_fields": {"zip": "postal_code"}}),
    ),
    "rename_array_struct_field": (
        "major",
        _fields(
            items={"type": "array<struct<code:string,q:int>>", "renamed_fields": {"element.sku": "code"}}
        ),
    ),
    "rename_map_value_field": (
        "major",
        _fields(m={"type": "map<string,struct<ff:string,g:int>>", "renamed_fields": {"value.f": "ff"}}),
    ),
    "widen_struct_field": ("minor", _fields(addr={"type": "struct<zip:string,n:bigint>"})),
    "widen_array_struct_field": ("minor", _fields(items={"type": "array<struct<sku:string,q:bigint>>"})),
    "widen_map_value_field": ("minor", _fields(m={"type": "map<string,struct<f:string,g:bigint>>"})),
    "deprecate_struct_field": ("minor", _fields(addr=_deprecated_field("zip"))),
    "deprecate_array_struct_field": ("minor", _fields(items=_deprecated_field("element.sku"))),
    "deprecate_map_value_field": ("minor", _fields(m=_deprecated_field("value.f"))),
    # every kind at once, one in each column: the case `make test` executes (tests/tiers.py)
    "struct_fields": (
        "major",
        _fields(
            addr={"type": "struct<zip:string,n:bigint,country:string>"},
            items={"type": "array<struct<code:string,q:int>>", "renamed_fields": {"element.sku": "code"}},
            m={"type": "map<string,struct<g:int>>"},
        ),
    ),
}
RECIPES.update(NESTED_RECIPES)


# What the old contract looks like before the mutation, where the base does not fit the recipe:
# smallint -> int widens on Delta 3 too, unlike int -> bigint.
def _clustered(d: dict[str, Any]) -> None:
    d["table"].update(partitioned_by=[], clustered_by=["txn_date"])


IDENTITY_COLUMN = {"name": "seq", "type": "bigint", "identity": {"generated": "by_default", "start": 1}}

PREPARE: dict[str, Mutation] = {
    "copy_identity": _add(IDENTITY_COLUMN),
    "widen_small_type": _set("attempts", type="smallint"),
    "drop_default": _set("status", default="OK"),
    "change_clustering": _clustered,
    "type_widening_off": _widening("smallint", "true"),
    **dict.fromkeys(NESTED_RECIPES, _nested),
}


def bump(version: str, level: str) -> str:
    major, minor, patch = (int(p) for p in version.split("."))
    if level == "major":
        return f"{major + 1}.0.0"
    if level == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}"


def pair(recipe: str, versioning: str = "in_place") -> tuple[Contract, Contract]:
    level, mutate = RECIPES[recipe]
    old = copy.deepcopy(BASE)
    old["table"]["versioning"] = versioning
    if recipe in PREPARE:
        PREPARE[recipe](old)
    new = copy.deepcopy(old)
    mutate(new)
    new["version"] = bump(old["version"], level)
    return Contract.model_validate(old), Contract.model_validate(new)


def base_contract(versioning: str = "in_place") -> Contract:
    doc = copy.deepcopy(BASE)
    doc["table"]["versioning"] = versioning
    return Contract.model_validate(doc)


def nullable_rename() -> tuple[Contract, Contract]:
    """legacy_channel renamed to channel, in place: a rename of a nullable column (the recipe's rename is of
    a NOT NULL column, whose cutover CHECK refuses every row an old-shape producer writes after the cutover's
    catch-up; see docs/migrations.md)."""
    doc = copy.deepcopy(BASE)
    doc["table"]["versioning"] = "in_place"
    old = Contract.model_validate(doc)
    column = next(c for c in doc["columns"] if c["name"] == "legacy_channel")
    column.update(name="channel", renamed_from="legacy_channel")
    doc["version"] = "3.0.0"
    return old, Contract.model_validate(doc)
