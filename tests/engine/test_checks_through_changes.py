"""Every CHECK of a table stands at every commit of an in-place migration, on delta-spark with rows.

- Every widening Delta 4.4 allows in place (tinyint/smallint/int -> wider, float -> double, date ->
  timestamp_ntz, decimal precision, a struct's field), from a table with neither type widening nor
  timestampNtz enabled and a CHECK over every widened column: the run's commits are read back from the
  `_delta_log` JSON (each commit's metaData configuration, `delta.constraints.*`) and every rule is in force
  at each one; a row that breaks a rule is refused between the phases, and a wider value is accepted after.
- A column a CHECK reads, renamed in place: at every phase boundary until the contract phase an old producer's
  row (the old column only) that satisfies the old rule is accepted, and one that breaks it is refused; at
  every commit each rule stands, in its old, both-shapes or final form.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.contract.model import Contract
from delta_contracts.diff.rules import contract_rules
from delta_contracts.engine.base import Engine
from delta_contracts.plan.in_place_rules import both_shapes_name, bridge_name
from delta_contracts.plan.ops import Migration, Phase
from delta_contracts.plan.planner import plan
from delta_contracts.target import Target
from tests.engine.conftest import location_of
from tests.engine.recipe_run import apply_checked, create_schema, drop_schema

pytestmark = pytest.mark.engine
_schemas = itertools.count()
CONSTRAINT = "delta.constraints."

WIDE_OLD: dict[str, Any] = {
    "apiVersion": "delta-contracts/v1",
    "id": "s.t",
    "version": "1.0.0",
    "owner": {"team": "t"},
    "table": {"versioning": "in_place"},
    "columns": [
        {"name": "id", "type": "string", "nullable": False},
        {"name": "i", "type": "int", "checks": {"min": 0}},
        {"name": "sh", "type": "smallint", "checks": {"min": 0}},
        {"name": "by", "type": "tinyint", "checks": {"max": 100}},
        {"name": "f", "type": "float", "checks": {"min": 0}},
        {"name": "d", "type": "date"},
        {"name": "p", "type": "decimal(5,2)", "checks": {"min": 0}},
        {"name": "st", "type": "struct<n:int>"},
    ],
    "constraints": [
        {"name": "d_recent", "expression": "d IS NULL OR d >= DATE'2000-01-01'"},
        {"name": "st_n_positive", "expression": "st IS NULL OR st.n > 0"},
    ],
}
WIDER = {
    "i": "bigint",
    "sh": "int",
    "by": "smallint",
    "f": "double",
    "d": "timestamp_ntz",
    "p": "decimal(10,2)",
    "st": "struct<n:bigint>",
}
GOOD_OLD = "('g', 1, 2, 3, CAST(1.5 AS FLOAT), DATE'2020-01-01', 1.25, named_struct('n', 4))"
BREAKING = {  # one row per rule, each breaking only that rule
    "i_min": "('b', -1, 2, 3, CAST(1.5 AS FLOAT), DATE'2020-01-01', 1.25, named_struct('n', 4))",
    "sh_min": "('b', 1, -2, 3, CAST(1.5 AS FLOAT), DATE'2020-01-01', 1.25, named_struct('n', 4))",
    "by_max": "('b', 1, 2, 101, CAST(1.5 AS FLOAT), DATE'2020-01-01', 1.25, named_struct('n', 4))",
    "f_min": "('b', 1, 2, 3, CAST(-1.5 AS FLOAT), DATE'2020-01-01', 1.25, named_struct('n', 4))",
    "d_recent": "('b', 1, 2, 3, CAST(1.5 AS FLOAT), DATE'1999-01-01', 1.25, named_struct('n', 4))",
    "p_min": "('b', 1, 2, 3, CAST(1.5 AS FLOAT), DATE'2020-01-01', -1.25, named_struct('n', 4))",
    "st_n_positive": "('b', 1, 2, 3, CAST(1.5 AS FLOAT), DATE'2020-01-01', 1.25, named_struct('n', -4))",
}
WIDE_NEW_ROW = (
    "('w', 3000000000, 70000, 99, CAST(1e300 AS DOUBLE), TIMESTAMP_NTZ'2020-01-01 12:30:00', "
    "12345678.25, named_struct('n', 5000000000))"
)

RENAME_OLD: dict[str, Any] = {
    "apiVersion": "delta-contracts/v1",
    "id": "s.t",
    "version": "1.0.0",
    "owner": {"team": "t"},
    "table": {"versioning": "in_place"},
    "columns": [
        {"name": "id", "type": "string", "nullable": False},
        {"name": "lo", "type": "int", "checks": {"min": 0}},
        {"name": "hi", "type": "int"},
    ],
    "constraints": [{"name": "lo_le_hi", "expression": "lo <= hi"}],
}


def contracts(
    old_doc: dict[str, Any], mutate: Callable[[dict[str, Any]], None], schema: str
) -> tuple[Contract, Contract]:
    old = copy.deepcopy(old_doc)
    old["id"] = f"{schema}.t"
    new = copy.deepcopy(old)
    mutate(new)
    new["version"] = "2.0.0"
    return Contract.model_validate(old), Contract.model_validate(new)


def widen(doc: dict[str, Any]) -> None:
    for column in doc["columns"]:
        column["type"] = WIDER.get(column["name"], column["type"])


def rename(nullable: bool) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        lo = doc["columns"][1]
        lo.update(name="low", renamed_from="lo", nullable=nullable)
        doc["constraints"] = [{"name": "lo_le_hi", "expression": "low <= hi"}]

    return mutate


def run(engine: Engine, migration: Migration, between: Callable[[Phase], None]) -> None:
    """Op by op (pre-check counted, postcondition proven); `between(phase)` before each phase."""
    for phase in Phase:
        between(phase)
        for i, op in enumerate(migration.phase(phase)):
            apply_checked(engine, op, f"{phase.value}[{i}] {op.kind}")


def refused(engine: Engine, statement: str) -> str:
    with pytest.raises(Exception) as caught:
        engine.sql(statement)
    return str(caught.value)


def commits(location: str) -> list[tuple[int, set[str]]]:
    """Each commit's version and the CHECKs in force at it, from the `_delta_log` JSON: the configuration of
    the last metaData action at or before it."""
    out: list[tuple[int, set[str]]] = []
    current: set[str] = set()
    for path in sorted(Path(location, "_delta_log").glob("*.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            action = json.loads(line)
            if "metaData" in action:
                config = action["metaData"].get("configuration") or {}
                current = {k.removeprefix(CONSTRAINT) for k in config if k.startswith(CONSTRAINT)}
        out.append((int(path.stem), set(current)))
    return out


def audit(location: str, since: int, rules: set[str], names: Callable[[str], set[str]]) -> list[int]:
    """Every commit after `since` where some rule stands in none of its forms (`names(rule)`)."""
    gaps = []
    for version, standing in commits(location):
        if version > since and any(not (names(rule) & standing) for rule in rules):
            gaps.append(version)
    return gaps


def create(engine: Engine, contract: Contract) -> tuple[str, ...]:
    created, state = plan(None, contract, Target.DELTA_4)
    for op in created.ops:
        apply_checked(engine, op, f"create {op.kind}")
    return state.physical


@pytest.mark.exhaustive
def test_every_widening_keeps_every_check_at_every_commit(spark_engine: Engine) -> None:
    engine = spark_engine
    schema = f"checks{next(_schemas)}"
    create_schema(engine, schema)
    try:
        old, new = contracts(WIDE_OLD, widen, schema)
        table = create(engine, old)
        name = ".".join(f"`{p}`" for p in table)
        engine.sql(f"INSERT INTO {name} VALUES {GOOD_OLD}")
        location = location_of(engine, table)
        start = max(v for v, _ in commits(location))
        props = {r["key"]: r["value"] for r in engine.sql(f"SHOW TBLPROPERTIES {name}")}
        assert "delta.feature.typeWidening" not in props and "delta.feature.timestampNtz" not in props
        migration, _ = plan(old, new, Target.DELTA_4)

        def between(phase: Phase) -> None:
            for rule, row in BREAKING.items():
                message = refused(engine, f"INSERT INTO {name} VALUES {row}")
                assert rule in message, f"before {phase.value}: {rule} did not refuse {row}: {message}"
            engine.sql(f"INSERT INTO {name} VALUES {GOOD_OLD}")

        run(engine, migration, between)
        between(Phase.CONTRACT)
        engine.sql(f"INSERT INTO {name} VALUES {WIDE_NEW_ROW}")
        types = {c.name: c.type for c in engine.describe(table, with_version=False).columns}  # type: ignore[union-attr]
        assert types == {"id": "string", **WIDER}
        rows = engine.sql(f"SELECT i, st.n AS n FROM {name} WHERE id = 'w'")
        assert rows == [{"i": 3000000000, "n": 5000000000}]
        # one before the run, one before each phase, one after
        assert engine.count_where(table, "id = 'g'") == 1 + len(Phase) + 1
        rules = set(BREAKING)
        assert rules == {r.name for r in contract_rules(new).values()}
        assert audit(location, start, rules, lambda rule: {rule}) == []
        assert max(v for v, _ in commits(location)) > start + 8  # the run committed: features, retypes, rows
    finally:
        drop_schema(engine, schema)


def rename_case(engine: Engine, nullable: bool) -> None:
    schema = f"checks{next(_schemas)}"
    create_schema(engine, schema)
    try:
        old, new = contracts(RENAME_OLD, rename(nullable), schema)
        table = create(engine, old)
        name = ".".join(f"`{p}`" for p in table)
        location = location_of(engine, table)
        start = max(v for v, _ in commits(location))
        migration, _ = plan(old, new, Target.DELTA_4)
        seen: list[str] = []

        def old_shape(phase: Phase) -> None:
            seen.append(phase.value)
            engine.sql(f"INSERT INTO {name} (id, lo, hi) VALUES ('good-{phase.value}', 2, 9)")
            for row in ("(id, lo, hi) VALUES ('x', 12, 9)", "(id, lo, hi) VALUES ('x', -1, 9)"):
                message = refused(engine, f"INSERT INTO {name} {row}")
                assert "DELTA_VIOLATE_CONSTRAINT" in message or "CHECK constraint" in message, message

        # At every boundary before the contract phase; and inside it, right before its first op (its
        # last catch-up), since until then old producers may still write only the old column.
        run(engine, migration, old_shape)
        assert seen == [p.value for p in Phase]
        assert engine.count_where(table, "id LIKE 'good-%' AND low = 2") == len(Phase)
        # The old column is gone: a new producer's row is held to the final rules.
        engine.sql(f"INSERT INTO {name} (id, low, hi) VALUES ('new', 3, 9)")
        for row in ("(id, low, hi) VALUES ('x', 12, 9)", "(id, low, hi) VALUES ('x', -1, 9)"):
            refused(engine, f"INSERT INTO {name} {row}")
        standing = commits(location)[-1][1]
        assert standing == {r.name for r in contract_rules(new).values()} | (
            set() if nullable else {"low_not_null"}
        )
        pairs = {"lo_le_hi": {"lo_le_hi"}, "lo_min": {"lo_min", "low_min"}}
        if not nullable:
            pairs["not_null"] = {"low_not_null"}  # from the cutover on, over both shapes first

        def forms(rule: str) -> set[str]:
            names = pairs[rule]
            return names | {both_shapes_name(n) for n in names} | {bridge_name(n) for n in names}

        rules = {"lo_le_hi", "lo_min"}
        assert audit(location, start, rules, forms) == []
        if not nullable:
            cutover = [v for v, s in commits(location) if both_shapes_name("low_not_null") in s]
            assert cutover and audit(location, min(cutover), {"not_null"}, forms) == []
    finally:
        drop_schema(engine, schema)


@pytest.mark.exhaustive
def test_a_rename_admits_both_shapes_until_the_contract_phase(spark_engine: Engine) -> None:
    rename_case(spark_engine, nullable=True)


@pytest.mark.exhaustive
def test_a_not_null_rename_admits_both_shapes_until_the_contract_phase(spark_engine: Engine) -> None:
    rename_case(spark_engine, nullable=False)
