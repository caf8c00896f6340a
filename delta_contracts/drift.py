"""Drift: how a live table differs from its contract and its stamp. Pure: the engine supplies the facts.

Columns the table still carries because they await their gated drop (listed in
`delta_contracts.deprecated.columns`) are reported as "deprecated, awaiting drop", not as drift; a
`<column>_not_null` CHECK satisfies `nullable: false` (OSS Delta has no SET NOT NULL).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from delta_contracts.contract.model import Contract
from delta_contracts.contract.types import TypeParseError, canonical
from delta_contracts.live import Commit, LiveTable
from delta_contracts.plan.ops import DEPRECATED_COLUMNS, STAMP_VERSION, table_name
from delta_contracts.plan.rules import contract_rules, not_null_rule
from delta_contracts.plan.sqlnorm import same_expression

# Commits that change data only; anything else out of band changed the table's shape or settings.
DATA_OPERATIONS = frozenset(
    {
        "WRITE",
        "UPDATE",
        "DELETE",
        "MERGE",
        "STREAMING UPDATE",
        "OPTIMIZE",
        "VACUUM START",
        "VACUUM END",
        "INSERT",
        "TRUNCATE",
        "RESTORE",
    }
)


@dataclass(frozen=True, slots=True)
class DriftItem:
    kind: str  # missing-table, missing-column, extra-column, type, nullability, comment, check-missing, …
    subject: str  # the column, constraint or property concerned ("" for the table)
    expected: str | None
    actual: str | None
    message: str
    is_drift: bool = True  # False for informational items (deprecated columns awaiting drop)

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "expected": self.expected,
            "actual": self.actual,
            "message": self.message,
            "drift": self.is_drift,
        }


def _canon(text: str) -> str:
    try:
        return canonical(text)
    except TypeParseError:
        return text


def deprecated_columns(live: LiveTable) -> set[str]:
    raw = live.properties.get(DEPRECATED_COLUMNS)
    if not raw:
        return set()
    try:
        return {str(c).casefold() for c in json.loads(raw)}
    except (ValueError, TypeError):
        return set()


def table_drift(contract: Contract, live: LiveTable | None, physical: tuple[str, ...]) -> list[DriftItem]:
    name = table_name(physical)
    if live is None:
        return [DriftItem("missing-table", "", name, None, f"table {name} does not exist")]
    items: list[DriftItem] = []
    awaiting = deprecated_columns(live)
    expected = {c.name.casefold(): c for c in contract.columns}
    for live_column in live.columns:
        folded = live_column.name.casefold()
        if folded in expected:
            continue
        if folded in awaiting:
            items.append(
                DriftItem(
                    "deprecated",
                    live_column.name,
                    None,
                    live_column.type,
                    f"column {live_column.name}: deprecated, awaiting drop",
                    is_drift=False,
                )
            )
        else:
            items.append(
                DriftItem(
                    "extra-column",
                    live_column.name,
                    None,
                    live_column.type,
                    f"column {live_column.name} {live_column.type} is not in the contract",
                )
            )
    checks = {n.casefold(): e for n, e in live.checks.items()}
    for column in contract.columns:
        found = live.column(column.name)
        if found is None:
            items.append(
                DriftItem(
                    "missing-column",
                    column.name,
                    _canon(column.type),
                    None,
                    f"column {column.name} is missing",
                )
            )
            continue
        want = _canon(column.type)
        if found.type != want:
            items.append(
                DriftItem(
                    "type",
                    column.name,
                    want,
                    found.type,
                    f"column {column.name}: type {found.type}, contract says {want}",
                )
            )
        enforced_not_null = not found.nullable or not_null_rule(column.name).key in checks
        if not column.nullable and not enforced_not_null:
            items.append(
                DriftItem(
                    "nullability",
                    column.name,
                    "NOT NULL",
                    "nullable",
                    f"column {column.name} accepts NULL, contract says NOT NULL",
                )
            )
        if column.nullable and not found.nullable:
            items.append(
                DriftItem(
                    "nullability",
                    column.name,
                    "nullable",
                    "NOT NULL",
                    f"column {column.name} is NOT NULL, contract says nullable",
                )
            )
        if (column.description or None) != (found.comment or None):
            items.append(
                DriftItem(
                    "comment",
                    column.name,
                    column.description,
                    found.comment,
                    f"column {column.name}: comment differs from the description",
                )
            )
    wanted_rules = contract_rules(contract)
    for key, rule in wanted_rules.items():
        actual = checks.get(key)
        if actual is None:
            items.append(
                DriftItem("check-missing", rule.name, rule.expression, None, f"CHECK {rule.name} is missing")
            )
        elif not same_expression(actual, rule.expression):
            items.append(
                DriftItem(
                    "check-changed",
                    rule.name,
                    rule.expression,
                    actual,
                    f"CHECK {rule.name} is {actual!r}, contract says {rule.expression!r}",
                )
            )
    allowed = set(wanted_rules) | {not_null_rule(c.name).key for c in contract.columns if not c.nullable}
    for key, expression in checks.items():
        if key in allowed:
            continue
        reads_deprecated = any(key.startswith(f"{c}_") for c in awaiting)
        if not reads_deprecated:
            items.append(
                DriftItem("check-extra", key, None, expression, f"CHECK {key} is not in the contract")
            )
    for key, value in sorted(contract.table.properties.items()):
        if live.properties.get(key) != value:
            items.append(
                DriftItem(
                    "property",
                    key,
                    value,
                    live.properties.get(key),
                    f"property {key} is {live.properties.get(key)!r}, contract says {value!r}",
                )
            )
    want_parts = [c.casefold() for c in contract.table.partitioned_by]
    if [c.casefold() for c in live.partition_columns] != want_parts:
        items.append(
            DriftItem(
                "partitioning",
                "",
                ",".join(contract.table.partitioned_by),
                ",".join(live.partition_columns),
                "partitioning differs",
            )
        )
    if (contract.description or None) != (live.comment or None):
        items.append(
            DriftItem(
                "table-comment",
                "",
                contract.description,
                live.comment,
                "table comment differs from the description",
            )
        )
    stamped = live.properties.get(STAMP_VERSION)
    if stamped != contract.version:
        items.append(
            DriftItem(
                "stamp",
                STAMP_VERSION,
                contract.version,
                stamped,
                f"stamped version {stamped or '(none)'}, contract version {contract.version}",
            )
        )
    return items


def commit_drift(commits: Sequence[Commit], last_toolkit_version: int | None) -> list[DriftItem]:
    """Commits after the toolkit's last one that changed more than data: out-of-band changes."""
    items = []
    for commit in commits:
        version, operation = commit.version, commit.operation
        if last_toolkit_version is not None and version <= last_toolkit_version:
            continue
        if operation.upper() in DATA_OPERATIONS:
            continue
        who = commit.engine_info or "unknown engine"
        items.append(
            DriftItem(
                "out-of-band-commit",
                str(version),
                None,
                operation,
                f"version {version}: {operation} by {who} was not made by delta-contracts",
            )
        )
    return items


def alias_drift(
    contract: Contract, physical: tuple[str, ...], views: Mapping[tuple[str, ...], str]
) -> list[DriftItem]:
    """A table served under another name must be read through the alias view `<id>` pointing at it."""
    alias = contract.table_parts
    if physical == alias:
        return []
    from delta_contracts.plan.ops import CreateView, Phase
    from delta_contracts.plan.render import view_query_sql

    want = view_query_sql(CreateView(table=alias, phase=Phase.CUTOVER, source=physical))
    local = {key[-2:]: query for key, query in views.items()}
    found = views.get(alias, local.get(alias[-2:]))
    if found is None:
        return [
            DriftItem(
                "alias-view", table_name(alias), want, None, f"alias view {table_name(alias)} is missing"
            )
        ]
    if not same_expression(found, want):
        return [
            DriftItem(
                "alias-view",
                table_name(alias),
                want,
                found,
                f"alias view {table_name(alias)} does not read {table_name(physical)}",
            )
        ]
    return []
