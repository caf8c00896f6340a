"""Every spelling of a read of a deprecated column is seen (pure): paths with any slashes and `file:`
prefixes, SQL path reads resolved to the table's columns, physical column names of a column-mapped table
mapped to the logical name of the time, and a read tied to a table but not to its columns counted as a
possible read of each deprecated column of that table, never as none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delta_contracts.sql.extract import Catalog
from delta_contracts.sql.names import canonical_path, path_key
from delta_contracts.telemetry.delta_schema import logical_name
from delta_contracts.telemetry.eventlog import SQL_START, read_statements
from delta_contracts.telemetry.matching import Targets
from delta_contracts.telemetry.workers import Context, Job, answer

LOCATION = "/data/Crew/members"
SCHEMAS = {"crew.members": ("id", "grade", "seniority_no"), "crew.other": ("id",)}
WATCHED = ("crew.members.seniority_no", "crew.members.grade_old")


def _context() -> Context:
    schemas = {"crew.members": (*SCHEMAS["crew.members"], "grade_old"), "crew.other": ("id",)}
    locations = {path_key(f"file:{LOCATION}/"): "crew.members"}
    catalog = Catalog({"crew.members_compat": "SELECT * FROM crew.members"}, schemas, locations)
    return Context(catalog, Targets.of(WATCHED, schemas, {f"file:{LOCATION}/": "crew.members"}))


@pytest.mark.parametrize(
    "spelling",
    [
        LOCATION,
        f"file:{LOCATION}",
        f"file://{LOCATION}",
        f"file:///{LOCATION}",
        f"///{LOCATION}",
        f"{LOCATION}//",
    ],
)
def test_any_slashes_and_file_prefixes_are_one_path(spelling: str) -> None:
    assert canonical_path(spelling) == LOCATION
    hits = answer(Job(f"SELECT max(seniority_no) FROM delta.`{spelling}`"), _context()).hits
    assert ("crew.members.seniority_no", "read") in hits


@pytest.mark.parametrize(
    "text",
    [
        "SELECT id, seniority_no FROM crew.members",
        "SELECT id, seniority_no FROM crew.members_compat WHERE id > 0",
        f"SELECT m.seniority_no FROM delta.`file://{LOCATION}` AS m",
        f"SELECT * FROM delta.`///{LOCATION.lstrip('/')}`",
    ],
)
def test_a_column_read_by_name_view_or_path_is_a_read(text: str) -> None:
    assert ("crew.members.seniority_no", "read") in answer(Job(text), _context()).hits


def test_a_table_read_whose_columns_are_unknown_is_a_possible_read_of_each() -> None:
    context = _context()
    # an event log's plan answered from the Delta log's statistics: the table, no column
    metadata = answer(Job(None, tables_read=(f"delta.`{LOCATION}`",), columns_read=()), context)
    assert set(metadata.hits) == {(o, "possible") for o in WATCHED}
    # a column of the table known, and not a deprecated one: no read of them
    known = answer(Job(None, tables_read=("crew.members",), columns_read=("crew.members.id",)), context)
    assert known.hits == ()
    # `*`: some column of the table, which one unknown
    some = answer(Job(None, tables_read=("crew.members",), columns_read=("crew.members.*",)), context)
    assert set(some.hits) == {(o, "possible") for o in WATCHED}
    # a path no watched table lives at is no read of them
    elsewhere = answer(Job(None, tables_read=("delta.`/data/crew/others`",), columns_read=()), context)
    assert elsewhere.hits == ()


def _commit(log: Path, version: int, millis: int, names: dict[str, str]) -> None:
    fields = [
        {"name": logical, "type": "integer", "nullable": True,
         "metadata": {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": physical}}
        for i, (physical, logical) in enumerate(names.items(), start=1)
    ]  # fmt: skip
    schema = json.dumps({"type": "struct", "fields": fields})
    actions = [
        {"commitInfo": {"timestamp": millis, "operation": "X"}},
        {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
                      "partitionColumns": [], "configuration": {"delta.columnMapping.mode": "name"}}},
    ]  # fmt: skip
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


GRADE = "col-8d59d31d-ba71-4f39-a5ce-066f2396134d"
SENIORITY = "col-e0e1f418-a4f8-4cc8-9cd5-c80dcef64f2a"
LOST = "col-00000000-0000-4000-8000-000000000000"


def test_physical_names_map_to_the_logical_name_of_the_time(tmp_path: Path) -> None:
    table = tmp_path / "members"
    (table / "_delta_log").mkdir(parents=True)
    _commit(table / "_delta_log", 0, 1_000, {GRADE: "grade_old", SENIORITY: "seniority_no"})
    _commit(table / "_delta_log", 1, 5_000, {GRADE: "grade", SENIORITY: "seniority_no"})  # RENAME COLUMN
    assert logical_name(str(table), GRADE, 2_000) == "grade_old"
    assert logical_name(str(table), GRADE, 6_000) == "grade"
    assert logical_name(str(table), GRADE, None) == "grade"
    assert logical_name(str(table), LOST, 6_000) is None
    assert logical_name(str(tmp_path / "gone"), GRADE, 6_000) is None


def _plan(columns: list[str], location: str) -> str:
    schema = ",".join(f"{c}:int" for c in columns)
    return (
        "== Physical Plan ==\n* ColumnarToRow (2)\n+- Scan parquet  (1)\n\n\n(1) Scan parquet \n"
        f"Output [{len(columns)}]: [{', '.join(columns)}]\nBatched: true\n"
        f"Location: PreparedDeltaFileIndex [file:{location}]\nReadSchema: struct<{schema}>\n\n"
    )


def test_an_event_log_with_physical_names_reads_the_logical_columns(tmp_path: Path) -> None:
    table = tmp_path / "members"
    (table / "_delta_log").mkdir(parents=True)
    _commit(table / "_delta_log", 0, 1_000, {GRADE: "grade_old", SENIORITY: "seniority_no"})
    _commit(table / "_delta_log", 1, 5_000, {GRADE: "grade", SENIORITY: "seniority_no"})
    events = [{"Event": "SparkListenerApplicationStart", "App Name": "job", "App ID": "a", "User": "ann"}]
    for number, (at, columns) in enumerate([(2_000, [GRADE]), (6_000, [GRADE]), (6_500, [LOST])]):
        events.append(
            {"Event": SQL_START, "executionId": number, "rootExecutionId": number, "time": at,
             "description": "collect at job.py:1", "physicalPlanDescription": _plan(columns, f"//{table}")}
        )  # fmt: skip
    (tmp_path / "a").write_text("\n".join(json.dumps(e) for e in events) + "\n")
    got = [s.columns_read for s in read_statements(tmp_path / "a")]
    path = f"delta.`{table}`"
    assert got == [(f"{path}.grade_old",), (f"{path}.grade",), (f"{path}.*",)]
