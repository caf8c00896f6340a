"""ODCS v3 (Open Data Contract Standard) export, through the `open-data-contract-standard` pydantic model.

Everything with an ODCS counterpart maps to it: columns → schema properties (physical and logical type,
`required`, `unique`, `primaryKey`, `partitioned`), rules → `logicalTypeOptions` and property `enum`,
table constraints → SQL quality rules, volume / completeness / uniqueness → library quality rules,
freshness → the `latency` SLA property, owner → `team`, description → `description.purpose`, lifecycle →
`status`. What ODCS has no field for (consumers, evolution, defaults, renames, fills and conversions,
deprecation details, versioning, clustering, table properties) travels in `customProperties` of vendor
`delta-contracts`, the standard's extension point, so that an exported contract imports back unchanged.
The import side is in `odcs_import`; the two share the names below.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from functools import cache
from importlib import resources
from typing import Any

from delta_contracts.contract.model import Column, Contract
from delta_contracts.contract.types import TypeParseError, canonical, parse_type

ODCS_API_VERSION = "v3.2.0"
VENDOR = "delta-contracts"
# customProperties names (camelCase, as ODCS asks)
CONSUMERS, EVOLUTION, SUCCESSOR = "consumers", "evolution", "lifecycleSuccessor"
VERSIONING, CLUSTERED_BY, TABLE_PROPERTIES = "versioning", "clusteredBy", "tableProperties"
DEFAULT, RENAMED_FROM, DEPRECATION, CHECKS = "default", "renamedFrom", "deprecation", "checks"
FILL, CONVERSION = "fill", "conversion"
CHECK_EXPRESSION = "checkExpression"
PII_CLASSIFICATION = "pii"
OWNER_ROLE = "owner"
FRESHNESS_SLA = "latency"

_DURATION_UNITS = {"Y": "years", "W": "weeks", "D": "days", "H": "hours", "S": "seconds"}
_SINGLE_DURATION = re.compile(r"^P(?:(\d+)([YWD])|(\d+)(M)|T(\d+)([HMS]))$")


@cache
def odcs_json_schema() -> dict[str, Any]:
    """The standard's JSON Schema, as shipped inside the `open-data-contract-standard` package."""
    text = resources.files("open_data_contract_standard").joinpath("schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def stable_id(text: str) -> str:
    """ODCS ids allow letters, digits, `-` and `_` only."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def logical_type(spark_type: str) -> str | None:
    """The ODCS logical type of a Spark type, or None when ODCS has none (binary, variant)."""
    try:
        text = canonical(spark_type)
    except TypeParseError:
        return None
    head = re.split(r"[<(]", text, maxsplit=1)[0]
    if head in ("tinyint", "smallint", "int", "bigint"):
        return "integer"
    if head in ("float", "double", "decimal"):
        return "number"
    if head in ("string", "char", "varchar"):
        return "string"
    if head in ("timestamp", "timestamp_ntz"):
        return "timestamp"
    table = {"boolean": "boolean", "date": "date", "array": "array", "map": "map", "struct": "object"}
    return table.get(head)


def duration_to_sla(duration: str) -> tuple[str | int, str | None]:
    """`PT30M` → (30, 'minutes'); a duration of several parts stays an ISO string without a unit."""
    match = _SINGLE_DURATION.match(duration)
    if not match:
        return duration, None
    number, unit = next((match.group(i), match.group(i + 1)) for i in (1, 3, 5) if match.group(i))
    if unit == "M":
        return int(number), "months" if match.group(4) else "minutes"
    return int(number), _DURATION_UNITS[unit]


def _custom(name: str, value: Any) -> Any:
    from open_data_contract_standard.model import CustomProperty

    return CustomProperty(property=name, value=value, vendor=VENDOR)


def _bound(value: Any) -> Any:
    return value.isoformat() if isinstance(value, date | datetime) else value


def _column_property(contract: Contract, column: Column, primary_key: tuple[str, ...]) -> Any:
    from open_data_contract_standard.model import DataQuality, EnumValue, SchemaProperty

    logical = logical_type(column.type)
    options: dict[str, Any] = {}
    leftover: dict[str, Any] = {}
    checks = column.checks
    for name, value in (("minimum", checks.min), ("maximum", checks.max)):
        if value is None:
            continue
        if logical in ("integer", "number", "date", "timestamp"):
            options[name] = _bound(value)
        else:
            leftover[name.removesuffix("imum")] = _bound(value)
    if checks.regex is not None:
        if logical == "string":
            options["pattern"] = checks.regex
        else:
            leftover["regex"] = checks.regex
    custom = []
    if column.default is not None:
        custom.append(_custom(DEFAULT, column.default))
    if column.renamed_from is not None:
        custom.append(_custom(RENAMED_FROM, column.renamed_from))
    if column.fill is not None:
        custom.append(_custom(FILL, column.fill))
    if column.convert is not None:
        custom.append(_custom(CONVERSION, column.convert.model_dump(mode="json", exclude_none=True)))
    if column.deprecated is not None:
        custom.append(_custom(DEPRECATION, column.deprecated.model_dump(mode="json", exclude_none=True)))
    if leftover:
        custom.append(_custom(CHECKS, leftover))
    quality = [
        DataQuality(
            type="library",
            metric="nullValues",
            unit="percent",
            dimension="completeness",
            mustBeLessOrEqualTo=round((1 - rule.min_ratio) * 100, 10),
        )
        for rule in contract.quality.completeness
        if rule.column.casefold() == column.name.casefold()
    ]
    folded = column.name.casefold()
    keys = contract.quality.unique[1:] if primary_key else contract.quality.unique
    single_unique = any(len(u) == 1 and u[0].casefold() == folded for u in keys)
    in_key = [c.casefold() for c in primary_key]
    partitions = [c.casefold() for c in contract.table.partitioned_by]
    return SchemaProperty(
        name=column.name,
        physicalType=column.type,
        logicalType=logical,
        logicalTypeOptions=options or None,
        description=column.description,
        required=True if not column.nullable else None,
        unique=True if single_unique else None,
        primaryKey=True if folded in in_key else None,
        primaryKeyPosition=in_key.index(folded) + 1 if folded in in_key else None,
        partitioned=True if folded in partitions else None,
        partitionKeyPosition=partitions.index(folded) + 1 if folded in partitions else None,
        classification=PII_CLASSIFICATION if column.pii else None,
        tags=list(column.tags) or None,
        deprecated=True if column.deprecated is not None else None,
        enum=[EnumValue(value=v) for v in checks.enum] if checks.enum is not None else None,
        quality=quality or None,
        customProperties=custom or None,
    )


def primary_key(contract: Contract) -> tuple[str, ...]:
    """The first unique key, when all its columns are NOT NULL: ODCS's primary key."""
    if not contract.quality.unique:
        return ()
    first = contract.quality.unique[0]
    columns = [contract.column(name) for name in first]
    if all(c is not None and not c.nullable for c in columns):
        return tuple(first)
    return ()


def check_query(contract: Contract, expression: str) -> str:
    """`SELECT COUNT(*) FROM <table> WHERE NOT (<expression>)`: the rows that break a CHECK (must be 0)."""
    from sqlglot import exp

    from delta_contracts.sql import expressions as x

    query = (
        exp.select(exp.Count(this=exp.Star()))
        .from_(x.table(contract.table_parts))
        .where(exp.Not(this=exp.Paren(this=x.parse(expression))))
    )
    return x.sql(query)


def _schema_quality(contract: Contract, key: tuple[str, ...]) -> list[Any]:
    from open_data_contract_standard.model import DataQuality

    rules: list[Any] = []
    volume = contract.quality.volume
    if volume is not None and (volume.min_rows is not None or volume.max_rows is not None):
        if volume.min_rows is not None and volume.max_rows is not None:
            bounds: dict[str, Any] = {"mustBeBetween": [volume.min_rows, volume.max_rows]}
        elif volume.min_rows is not None:
            bounds = {"mustBeGreaterOrEqualTo": volume.min_rows}
        else:
            bounds = {"mustBeLessOrEqualTo": volume.max_rows}
        rules.append(DataQuality(type="library", metric="rowCount", dimension="completeness", **bounds))
    for columns in contract.quality.unique[1:] if key else contract.quality.unique:
        if len(columns) == 1:
            continue  # a single-column key is the property's `unique`
        rules.append(
            DataQuality(
                type="library",
                metric="duplicateValues",
                dimension="uniqueness",
                arguments={"properties": list(columns)},
                mustBe=0,
            )
        )
    for constraint in contract.constraints:
        rules.append(
            DataQuality(
                type="sql",
                name=constraint.name,
                dimension="conformity",
                query=check_query(contract, constraint.expression),
                mustBe=0,
                customProperties=[_custom(CHECK_EXPRESSION, constraint.expression)],
            )
        )
    return rules


def to_odcs(contract: Contract) -> dict[str, Any]:
    """The contract as an ODCS v3 document (plain data, ready for YAML)."""
    from open_data_contract_standard.model import (
        Description,
        OpenDataContractStandard,
        SchemaObject,
        ServiceLevelAgreementProperty,
        Team,
        TeamMember,
    )

    key = primary_key(contract)
    table = contract.table
    schema_custom = []
    if table.versioning.value != "in_place":
        schema_custom.append(_custom(VERSIONING, table.versioning.value))
    if table.clustered_by:
        schema_custom.append(_custom(CLUSTERED_BY, list(table.clustered_by)))
    if table.properties:
        schema_custom.append(_custom(TABLE_PROPERTIES, dict(table.properties)))
    table_name = contract.table_parts[-1]
    schema = SchemaObject(
        name=table_name,
        physicalName=contract.id,
        physicalType="table",
        logicalType="object",
        description=table.comment,
        properties=[_column_property(contract, c, key) for c in contract.columns],
        quality=_schema_quality(contract, key) or None,
        customProperties=schema_custom or None,
    )
    sla = []
    if contract.quality.freshness is not None:
        value, unit = duration_to_sla(contract.quality.freshness.max_age)
        sla.append(
            ServiceLevelAgreementProperty(
                property=FRESHNESS_SLA,
                value=value,
                unit=unit,
                element=f"{table_name}.{contract.quality.freshness.column}",
            )
        )
    custom = []
    if contract.consumers:
        consumers = [c.model_dump(mode="json", exclude_none=True) for c in contract.consumers]
        custom.append(_custom(CONSUMERS, consumers))
    evolution = contract.evolution.model_dump(mode="json", exclude_defaults=True)
    if evolution:
        custom.append(_custom(EVOLUTION, evolution))
    if contract.lifecycle.successor is not None:
        custom.append(_custom(SUCCESSOR, contract.lifecycle.successor))
    members = [TeamMember(username=contract.owner.email, role=OWNER_ROLE)] if contract.owner.email else None
    document = OpenDataContractStandard(
        apiVersion=ODCS_API_VERSION,
        kind="DataContract",
        id=stable_id(contract.id),
        name=contract.id,
        version=contract.version,
        status=contract.lifecycle.status.value,
        description=Description(purpose=contract.description) if contract.description else None,
        tags=list(contract.tags) or None,
        team=Team(name=contract.owner.team, members=members),
        schema=[schema],
        slaProperties=sla or None,
        customProperties=custom or None,
    )
    data: dict[str, Any] = document.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def schema_errors(document: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """Every place where `document` breaks the ODCS JSON Schema: (path, message), in document order."""
    from jsonschema import Draft201909Validator

    validator = Draft201909Validator(odcs_json_schema())
    found = dict.fromkeys((tuple(e.absolute_path), e.message) for e in validator.iter_errors(document))
    return sorted(found, key=lambda item: [str(p) for p in item[0]])


def type_is_known(text: str) -> bool:
    try:
        parse_type(text)
    except TypeParseError:
        return False
    return True
