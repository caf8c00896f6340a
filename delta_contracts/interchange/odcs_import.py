"""ODCS v3 import: an ODCS document (validated against the standard's JSON Schema, then read through the
`open-data-contract-standard` model) becomes a `delta-contracts/v1` contract.

Every part of the document is either mapped or reported: the mapper records each path it used, and every
part left over (a server, a relationship, an unknown quality rule, …) is one warning at its line, never
dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from delta_contracts.contract.errors import Problem, Severity, field_path
from delta_contracts.contract.yamlsource import SourceMap
from delta_contracts.errors import InputError
from delta_contracts.interchange.odcs import (
    CHECK_EXPRESSION,
    CHECKS,
    CLUSTERED_BY,
    CONSUMERS,
    CONVERSION,
    DEFAULT,
    DEPRECATION,
    EVOLUTION,
    FILL,
    FRESHNESS_SLA,
    OWNER_ROLE,
    PII_CLASSIFICATION,
    RENAMED_FROM,
    SUCCESSOR,
    TABLE_PROPERTIES,
    VERSIONING,
    schema_errors,
    type_is_known,
)
from delta_contracts.sql.dialect import DIALECT

Path = tuple[str | int, ...]
_TABLE_ID = re.compile(r"^[^.\s`]+(\.[^.\s`]+){1,2}$")
_ISO_DURATION = re.compile(r"^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$")
_UNITS = {
    **dict.fromkeys(("y", "yr", "yrs", "year", "years"), ("", "Y")),
    **dict.fromkeys(("mo", "month", "months"), ("", "M")),
    **dict.fromkeys(("w", "week", "weeks"), ("", "W")),
    **dict.fromkeys(("d", "day", "days"), ("", "D")),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), ("T", "H")),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), ("T", "M")),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), ("T", "S")),
}
_LOGICAL_TO_SPARK = {
    "string": "string",
    "integer": "bigint",
    "number": "double",
    "boolean": "boolean",
    "date": "date",
    "timestamp": "timestamp",
}
_OURS = {CONSUMERS, EVOLUTION, SUCCESSOR, VERSIONING, CLUSTERED_BY, TABLE_PROPERTIES}


class OdcsError(InputError):
    """The document is not ODCS v3, or not one that makes a contract; carries the located problems."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True)
class Imported:
    contract: dict[str, Any]  # `delta-contracts/v1` data, ready for YAML
    warnings: tuple[Problem, ...]  # one per ODCS part that has no counterpart


@dataclass
class _Reader:
    document: dict[str, Any]
    source: SourceMap
    used: set[Path] = field(default_factory=set)
    problems: list[Problem] = field(default_factory=list)

    def get(self, *path: str | int) -> Any:
        here: Any = self.document
        for part in path:
            if isinstance(here, dict):
                here = here.get(part)
            elif isinstance(here, list) and isinstance(part, int) and part < len(here):
                here = here[part]
            else:
                return None
        return here

    def take(self, *path: str | int) -> Any:
        """The value at `path`, marked as mapped."""
        value = self.get(*path)
        if value is not None:
            self.used.add(tuple(path))
        return value

    def error(self, path: Path, message: str) -> None:
        self.problems.append(Problem(self.source.locate(path), field_path(path), message, "DC-ODCS"))

    def leftovers(self) -> Iterator[Path]:
        """Each unmapped part: the largest subtree none of whose paths was used."""

        def walk(path: Path, value: Any) -> Iterator[Path]:
            if path in self.used:
                return
            if not any(u[: len(path)] == path for u in self.used):
                yield path
                return
            children = value.items() if isinstance(value, dict) else enumerate(value)
            for key, child in children:
                if child is not None:
                    yield from walk((*path, key), child)

        yield from walk((), self.document)


def from_odcs(document: Any, source: SourceMap, *, owner: str | None = None) -> Imported:
    """Map an ODCS v3 document; raise OdcsError (located) when it is invalid or has no usable table."""
    if not isinstance(document, dict):
        raise OdcsError([Problem(source.locate(()), "", "an ODCS document is a mapping", "DC-ODCS")])
    invalid = schema_errors(document)
    if invalid:
        problems = [
            Problem(source.locate(path), field_path(path), f"not valid ODCS: {message}", "DC-ODCS")
            for path, message in invalid
        ]
        raise OdcsError(problems)
    from open_data_contract_standard.model import OpenDataContractStandard

    OpenDataContractStandard.model_validate(document)  # the standard's model agrees with its schema
    reader = _Reader(document, source)
    contract = _contract(reader, owner)
    if reader.problems:
        raise OdcsError(reader.problems)
    warnings = tuple(
        Problem(
            source.locate(path, key=True),
            field_path(path),
            "has no counterpart in delta-contracts; not imported",
            "DC-ODCS",
            Severity.FINDING,
        )
        for path in reader.leftovers()
    )
    return Imported(contract, warnings)


def _custom(r: _Reader, *path: str | int) -> dict[str, Any]:
    """Our customProperties under `path` (vendor delta-contracts or one of our names), marked as used."""
    found: dict[str, Any] = {}
    for i, item in enumerate(r.get(*path, "customProperties") or []):
        name = item.get("property")
        vendor = item.get("vendor")
        ours = vendor == "delta-contracts" or (vendor is None and name in _OURS)
        if ours and name is not None:
            r.take(*path, "customProperties", i)
            found[name] = item.get("value")
    return found


def _contract(r: _Reader, owner: str | None) -> dict[str, Any]:
    for key in ("apiVersion", "kind"):
        r.take(key)
    schemas = r.get("schema") or []
    if not schemas:
        r.error((), "the document has no schema: nothing to make a table of")
        return {}
    table_id = _table_id(r)
    out: dict[str, Any] = {"apiVersion": "delta-contracts/v1", "id": table_id}
    version = r.take("version")
    if not re.match(r"^\d+\.\d+\.\d+", str(version)):
        r.error(("version",), f"'{version}' is not a semantic version (MAJOR.MINOR.PATCH)")
    out["version"] = str(version)
    contract_owner = _owner(r, owner)
    if contract_owner:
        out["owner"] = contract_owner
    if r.get("description", "purpose") is not None:
        out["description"] = r.take("description", "purpose")
    custom = _custom(r)
    if CONSUMERS in custom:
        out["consumers"] = custom[CONSUMERS]
    if r.get("tags"):
        out["tags"] = r.take("tags")
    table = _table(r)
    if table:
        out["table"] = table
    columns, quality, constraints = _columns(r), _quality(r), _constraints(r)
    out["columns"] = columns
    if constraints:
        out["constraints"] = constraints
    if quality:
        out["quality"] = quality
    if EVOLUTION in custom:
        out["evolution"] = custom[EVOLUTION]
    lifecycle: dict[str, Any] = {}
    status = r.get("status")
    if status in ("draft", "active", "deprecated", "retired"):
        r.take("status")
        if status != "active":
            lifecycle["status"] = status
    if SUCCESSOR in custom:
        lifecycle["successor"] = custom[SUCCESSOR]
    if lifecycle:
        out["lifecycle"] = lifecycle
    return out


def _table_id(r: _Reader) -> str:
    candidates: list[Path] = [("schema", 0, "physicalName"), ("name",), ("schema", 0, "name")]
    for path in candidates:
        value = r.get(*path)
        if isinstance(value, str) and _TABLE_ID.match(value):
            r.take(*path)
            if r.get("name") == value:
                r.take("name")
            r.take("schema", 0, "name")  # the table name, part of the id
            document_id = r.get("id")
            if document_id == re.sub(r"[^A-Za-z0-9_-]", "_", value):
                r.take("id")
            return value
    r.error(("schema", 0), "cannot tell the table: set schema[0].physicalName to schema.table")
    return ""


def _owner(r: _Reader, given: str | None) -> dict[str, Any]:
    team = r.get("team")
    result: dict[str, Any] = {}
    members: list[Any] = []
    base: Path = ("team",)
    if isinstance(team, dict):
        if team.get("name"):
            result["team"] = r.take("team", "name")
        members = team.get("members") or []
        base = ("team", "members")
    elif isinstance(team, list):
        members = team
    for i, member in enumerate(members):
        if str(member.get("role", "")).casefold() == OWNER_ROLE and set(member) <= {"username", "role"}:
            r.take(*base, i)
            result["email"] = member["username"]
            break
    if given:
        result["team"] = given
    return result


def _table(r: _Reader) -> dict[str, Any]:
    table: dict[str, Any] = {}
    custom = _custom(r, "schema", 0)
    partitions: list[tuple[int, str]] = []
    for j, prop in enumerate(r.get("schema", 0, "properties") or []):
        if prop.get("partitioned"):
            r.take("schema", 0, "properties", j, "partitioned")
            position = r.take("schema", 0, "properties", j, "partitionKeyPosition")
            partitions.append((position if isinstance(position, int) else 10_000 + j, prop["name"]))
    if partitions:
        table["partitioned_by"] = [name for _, name in sorted(partitions)]
    if CLUSTERED_BY in custom:
        table["clustered_by"] = custom[CLUSTERED_BY]
    if TABLE_PROPERTIES in custom:
        table["properties"] = custom[TABLE_PROPERTIES]
    if VERSIONING in custom:
        table["versioning"] = custom[VERSIONING]
    if r.get("schema", 0, "description") is not None:
        table["comment"] = r.take("schema", 0, "description")
    if r.get("schema", 0, "physicalType") in ("table", "TABLE"):
        r.take("schema", 0, "physicalType")
    if r.get("schema", 0, "logicalType") == "object":
        r.take("schema", 0, "logicalType")
    return table


def _spark_type(r: _Reader, path: Path) -> str:
    """The column's Spark type: its physicalType when Spark knows it, else one from the logical type."""
    physical = r.get(*path, "physicalType")
    if isinstance(physical, str) and type_is_known(physical):
        r.take(*path, "physicalType")
        if r.get(*path, "logicalType") is not None:
            r.take(*path, "logicalType")
        return physical
    logical = r.get(*path, "logicalType")
    if logical in _LOGICAL_TO_SPARK:
        r.take(*path, "logicalType")
        return _LOGICAL_TO_SPARK[logical]
    if logical == "array" and r.get(*path, "items") is not None:
        r.take(*path, "logicalType")
        return f"array<{_spark_type(r, (*path, 'items'))}>"
    if logical == "object" and r.get(*path, "properties"):
        r.take(*path, "logicalType")
        fields = [
            f"{p['name']}:{_spark_type(r, (*path, 'properties', k))}"
            for k, p in enumerate(r.get(*path, "properties"))
        ]
        for k in range(len(fields)):
            r.take(*path, "properties", k, "name")
        return f"struct<{','.join(fields)}>"
    r.error(path, f"no Spark type: physicalType {physical!r}, logicalType {logical!r}")
    return "string"


def _columns(r: _Reader) -> list[dict[str, Any]]:
    columns = []
    for j, prop in enumerate(r.get("schema", 0, "properties") or []):
        path: Path = ("schema", 0, "properties", j)
        column: dict[str, Any] = {"name": r.take(*path, "name"), "type": _spark_type(r, path)}
        if r.get(*path, "required") is not None or r.get(*path, "primaryKey"):
            required = bool(r.take(*path, "required")) or bool(prop.get("primaryKey"))
            if required:
                column["nullable"] = False
        if prop.get("description") is not None:
            column["description"] = r.take(*path, "description")
        checks = _checks(r, path)
        if checks:
            column["checks"] = checks
        custom = _custom(r, *path)
        if DEFAULT in custom:
            column["default"] = custom[DEFAULT]
        if RENAMED_FROM in custom:
            column["renamed_from"] = custom[RENAMED_FROM]
        if FILL in custom:
            column["fill"] = custom[FILL]
        if CONVERSION in custom:
            column["convert"] = custom[CONVERSION]
        if DEPRECATION in custom:
            column["deprecated"] = custom[DEPRECATION]
            r.take(*path, "deprecated")
        elif prop.get("deprecated"):
            r.take(*path, "deprecated")
            column["deprecated"] = {"since": str(r.get("version"))}
        elif prop.get("deprecated") is False:
            r.take(*path, "deprecated")
        if prop.get("tags"):
            column["tags"] = r.take(*path, "tags")
        if prop.get("classification") == PII_CLASSIFICATION:
            r.take(*path, "classification")
            column["pii"] = True
        columns.append(column)
    return columns


def _checks(r: _Reader, path: Path) -> dict[str, Any]:
    checks: dict[str, Any] = {}
    options = r.get(*path, "logicalTypeOptions") or {}
    for ours, theirs in (("min", "minimum"), ("max", "maximum"), ("regex", "pattern")):
        if theirs in options:
            checks[ours] = r.take(*path, "logicalTypeOptions", theirs)
    extra = _custom(r, *path).get(CHECKS)
    if isinstance(extra, dict):
        checks.update(extra)
    enum = r.get(*path, "enum")
    if enum and all(set(item) == {"value"} for item in enum):
        r.take(*path, "enum")
        checks["enum"] = [item["value"] for item in enum]
    return checks


def _quality(r: _Reader) -> dict[str, Any]:
    quality: dict[str, Any] = {}
    sla = _freshness(r)
    if sla:
        quality["freshness"] = sla
    unique: list[list[str]] = []
    key = []
    completeness = []
    props = r.get("schema", 0, "properties") or []
    for j, prop in sorted(enumerate(props), key=lambda jp: jp[1].get("primaryKeyPosition") or 0):
        if prop.get("primaryKey"):
            r.take("schema", 0, "properties", j, "primaryKey")
            r.take("schema", 0, "properties", j, "primaryKeyPosition")
            key.append(prop["name"])
    if key:
        unique.append(key)
    for j, prop in enumerate(props):
        path: Path = ("schema", 0, "properties", j)
        if prop.get("unique"):
            r.take(*path, "unique")
            unique.append([prop["name"]])
        elif prop.get("unique") is False:
            r.take(*path, "unique")
        for q, rule in enumerate(prop.get("quality") or []):
            ratio = _non_null_ratio(rule)
            if ratio is not None:
                r.take(*path, "quality", q)
                completeness.append({"column": prop["name"], "min_ratio": ratio})
    for q, rule in enumerate(r.get("schema", 0, "quality") or []):
        where: Path = ("schema", 0, "quality", q)
        metric = rule.get("metric") or rule.get("rule")
        if metric == "rowCount" and rule.get("type", "library") == "library":
            volume = _volume(rule)
            if volume:
                r.take(*where)
                quality["volume"] = volume
        elif metric == "duplicateValues" and rule.get("mustBe") == 0:
            columns = (rule.get("arguments") or {}).get("properties")
            if isinstance(columns, list) and columns:
                r.take(*where)
                unique.append([str(c) for c in columns])
    if completeness:
        quality["completeness"] = completeness
    if unique:
        quality["unique"] = unique
    return quality


def _non_null_ratio(rule: dict[str, Any]) -> float | None:
    if (rule.get("metric") or rule.get("rule")) != "nullValues":
        return None
    if rule.get("unit") == "percent" and isinstance(rule.get("mustBeLessOrEqualTo"), int | float):
        return round(1 - float(rule["mustBeLessOrEqualTo"]) / 100, 10)
    if rule.get("mustBe") == 0:
        return 1.0
    return None


def _volume(rule: dict[str, Any]) -> dict[str, int]:
    if isinstance(rule.get("mustBeBetween"), list):
        low, high = rule["mustBeBetween"]
        return {"min_rows": int(low), "max_rows": int(high)}
    if rule.get("mustBeGreaterOrEqualTo") is not None:
        return {"min_rows": int(rule["mustBeGreaterOrEqualTo"])}
    if rule.get("mustBeGreaterThan") is not None:
        return {"min_rows": int(rule["mustBeGreaterThan"]) + 1}
    if rule.get("mustBeLessOrEqualTo") is not None:
        return {"max_rows": int(rule["mustBeLessOrEqualTo"])}
    return {}


def _freshness(r: _Reader) -> dict[str, Any]:
    for i, sla in enumerate(r.get("slaProperties") or []):
        if sla.get("property") not in (FRESHNESS_SLA, "freshness") or not sla.get("element"):
            continue
        elements = str(sla["element"]).split(",")
        duration = _duration(sla.get("value"), sla.get("unit"))
        if len(elements) != 1 or duration is None:
            continue
        r.take("slaProperties", i)
        return {"column": elements[0].strip().rsplit(".", 1)[-1], "max_age": duration}
    return {}


def _duration(value: Any, unit: Any) -> str | None:
    if unit is None:
        return value if isinstance(value, str) and _ISO_DURATION.match(value) else None
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    known = _UNITS.get(str(unit).casefold())
    if known is None:
        return None
    time_part, letter = known
    return f"P{time_part}{value}{letter}"


def _constraints(r: _Reader) -> list[dict[str, str]]:
    found = []
    for q, rule in enumerate(r.get("schema", 0, "quality") or []):
        if rule.get("type") != "sql" or rule.get("mustBe") != 0:
            continue
        expression = _custom(r, "schema", 0, "quality", q).get(CHECK_EXPRESSION)
        if not isinstance(expression, str):
            expression = _violations_predicate(str(rule.get("query", "")))
        if expression is None:
            continue
        r.take("schema", 0, "quality", q)
        found.append({"name": rule.get("name") or f"check_{q + 1}", "expression": expression})
    return found


def _violations_predicate(query: str) -> str | None:
    """`e` from `SELECT COUNT(*) FROM t WHERE NOT (e)` (a CHECK as ODCS writes it), else None."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    try:
        parsed = sqlglot.parse_one(query, read=DIALECT)
    except (ParseError, TokenError):
        return None
    if not isinstance(parsed, exp.Select) or len(parsed.expressions) != 1:
        return None
    if not isinstance(parsed.expressions[0], exp.Count):
        return None
    where = parsed.args.get("where")
    condition = where.this if where is not None else None
    if not isinstance(condition, exp.Not):
        return None
    inner = condition.this
    while isinstance(inner, exp.Paren):
        inner = inner.this
    return str(inner.sql(dialect=DIALECT))
