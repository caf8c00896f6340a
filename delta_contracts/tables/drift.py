"""Drift: how a live table differs from its contract and its stamp. Pure: the engine supplies the facts.

`table_drift` runs one small comparator per aspect of a table (columns, CHECKs, properties, layout,
comments, stamp), registered with `@comparator` as Alembic's autogenerate registers its comparators, so a
new aspect is one function. Columns the table still carries because they await their gated drop (listed in
`delta_contracts.deprecated.columns`) are reported as "deprecated, awaiting drop", not as drift; a
`<column>_not_null` CHECK satisfies `nullable: false` (the planner adds one where the target has no SET NOT
NULL: `target.NO_SET_NOT_NULL`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from delta_contracts.contract.model import Column, Contract
from delta_contracts.contract.types import canonical_or_text
from delta_contracts.live import Commit, LiveColumn, LiveTable
from delta_contracts.marks import DEPRECATED_COLUMNS, HOLD, STAMP_VERSION
from delta_contracts.plan.rules import contract_rules, not_null_rule
from delta_contracts.sql.normalize import same_expression
from delta_contracts.tableid import TableId

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


Comparator = Callable[[Contract, LiveTable], Iterator[DriftItem]]
COMPARATORS: list[Comparator] = []


def comparator(function: Comparator) -> Comparator:
    """Register one aspect of `table_drift`; comparators run in registration order."""
    COMPARATORS.append(function)
    return function


def table_drift(
    contract: Contract, live: LiveTable | None, physical: TableId, order: Sequence[str] | None = None
) -> list[DriftItem]:
    """What differs between the live table and the contract. `order`: the column order the table's
    migration history made (`plan.column_order`), which its columns must keep; the contract's without one."""
    if live is None:
        name = str(physical)
        return [DriftItem("missing-table", "", name, None, f"table {name} does not exist")]
    items = [item for compare in COMPARATORS for item in compare(contract, live)]
    return items + list(_column_order(contract, live, order))


def deprecated_columns(live: LiveTable) -> set[str]:
    raw = live.properties.get(DEPRECATED_COLUMNS)
    if not raw:
        return set()
    try:
        return {str(c).casefold() for c in json.loads(raw)}
    except (ValueError, TypeError):
        return set()


def _checks(live: LiveTable) -> dict[str, str]:
    return {name.casefold(): expression for name, expression in live.checks.items()}


@comparator
def _extra_columns(contract: Contract, live: LiveTable) -> Iterator[DriftItem]:
    awaiting = deprecated_columns(live)
    for found in live.columns:
        if contract.column(found.name) is not None:
            continue
        if found.name.casefold() in awaiting:
            message = f"column {found.name}: deprecated, awaiting drop"
            yield DriftItem("deprecated", found.name, None, found.type, message, is_drift=False)
        else:
            message = f"column {found.name} {found.type} is not in the contract"
            yield DriftItem("extra-column", found.name, None, found.type, message)


@comparator
def _declared_columns(contract: Contract, live: LiveTable) -> Iterator[DriftItem]:
    checks = _checks(live)
    for column in contract.columns:
        found = live.column(column.name)
        if found is None:
            want = canonical_or_text(column.type)
            yield DriftItem("missing-column", column.name, want, None, f"column {column.name} is missing")
            continue
        yield from _column_type(column, found)
        yield from _column_nullability(column, found, checks)
        yield from _column_comment(column, found)


def _column_order(contract: Contract, live: LiveTable, order: Sequence[str] | None) -> Iterator[DriftItem]:
    """The contract's columns in the table's order: a positional `INSERT … VALUES` or `SELECT *` written
    against one table of the contract must mean the same on another. Columns missing from the table, or
    that the contract does not list (deprecated, extra), are reported by their own comparators."""
    declared = {c.name.casefold(): c.name for c in contract.columns}
    actual = [declared[c.name.casefold()] for c in live.columns if c.name.casefold() in declared]
    present = {name.casefold() for name in actual}
    ranked = [c.name for c in contract.columns] if order is None else [*order]
    ranked += [c.name for c in contract.columns if c.name.casefold() not in {r.casefold() for r in ranked}]
    seen: set[str] = set()
    wanted = []
    for name in ranked:
        if name.casefold() in present and name.casefold() not in seen:
            seen.add(name.casefold())
            wanted.append(declared[name.casefold()])
    if actual != wanted:
        said = "contract says" if order is None else "its migrations made"
        message = f"column order is ({', '.join(actual)}), {said} ({', '.join(wanted)})"
        yield DriftItem("column-order", "", ", ".join(wanted), ", ".join(actual), message)


def _column_type(column: Column, found: LiveColumn) -> Iterator[DriftItem]:
    want = canonical_or_text(column.type)
    if found.type != want:
        message = f"column {column.name}: type {found.type}, contract says {want}"
        yield DriftItem("type", column.name, want, found.type, message)


def _column_nullability(column: Column, found: LiveColumn, checks: Mapping[str, str]) -> Iterator[DriftItem]:
    enforced_not_null = not found.nullable or not_null_rule(column.name).key in checks
    if not column.nullable and not enforced_not_null:
        message = f"column {column.name} accepts NULL, contract says NOT NULL"
        yield DriftItem("nullability", column.name, "NOT NULL", "nullable", message)
    if column.nullable and not found.nullable:
        message = f"column {column.name} is NOT NULL, contract says nullable"
        yield DriftItem("nullability", column.name, "nullable", "NOT NULL", message)


def _column_comment(column: Column, found: LiveColumn) -> Iterator[DriftItem]:
    if (column.description or None) != (found.comment or None):
        message = f"column {column.name}: comment differs from the description"
        yield DriftItem("comment", column.name, column.description, found.comment, message)


@comparator
def _contract_checks(contract: Contract, live: LiveTable) -> Iterator[DriftItem]:
    checks = _checks(live)
    for key, rule in contract_rules(contract).items():
        actual = checks.get(key)
        if actual is None:
            yield DriftItem(
                "check-missing", rule.name, rule.expression, None, f"CHECK {rule.name} is missing"
            )
        elif not same_expression(actual, rule.expression):
            message = f"CHECK {rule.name} is {actual!r}, contract says {rule.expression!r}"
            yield DriftItem("check-changed", rule.name, rule.expression, actual, message)


@comparator
def _extra_checks(contract: Contract, live: LiveTable) -> Iterator[DriftItem]:
    awaiting = deprecated_columns(live)
    allowed = set(contract_rules(contract))
    allowed |= {not_null_rule(c.name).key for c in contract.columns if not c.nullable}
    for key, expression in _checks(live).items():
        reads_deprecated = any(key.startswith(f"{column}_") for column in awaiting)
        if key not in allowed and not reads_deprecated:
            yield DriftItem("check-extra", key, None, expression, f"CHECK {key} is not in the contract")


@comparator
def _properties(contract: Contract, live: LiveTable) -> Iterator[DriftItem]:
    for key, value in sorted(contract.table.properties.items()):
        actual = live.properties.get(key)
        if actual != value:
            message = f"property {key} is {actual!r}, contract says {value!r}"
            yield DriftItem("property", key, value, actual, message)


def _layout(kind: str, wanted: Sequence[str], actual: Sequence[str]) -> Iterator[DriftItem]:
    if [c.casefold() for c in actual] != [c.casefold() for c in wanted]:
        message = f"{kind} is ({', '.join(actual) or 'none'}), contract says ({', '.join(wanted) or 'none'})"
        yield DriftItem(kind, "", ",".join(wanted), ",".join(actual), message)


@comparator
def _partitioning(contract: Contract, live: LiveTable) -> Iterator[DriftItem]:
    yield from _layout("partitioning", contract.table.partitioned_by, live.partition_columns)


@comparator
def _clustering(contract: Contract, live: LiveTable) -> Iterator[DriftItem]:
    yield from _layout("clustering", contract.table.clustered_by, live.clustering_columns)


@comparator
def _table_comment(contract: Contract, live: LiveTable) -> Iterator[DriftItem]:
    if (contract.description or None) != (live.comment or None):
        message = "table comment differs from the description"
        yield DriftItem("table-comment", "", contract.description, live.comment, message)


@comparator
def _stamp(contract: Contract, live: LiveTable) -> Iterator[DriftItem]:
    stamped = live.properties.get(STAMP_VERSION)
    if stamped != contract.version:
        message = f"stamped version {stamped or '(none)'}, contract version {contract.version}"
        yield DriftItem("stamp", STAMP_VERSION, contract.version, stamped, message)


def commit_drift(commits: Sequence[Commit], is_toolkit: Callable[[int], bool]) -> list[DriftItem]:
    """Every commit since the table's creation that changed more than data and that the apply ledger does not
    claim (`is_toolkit(version)`): out-of-band changes."""
    items = []
    for commit in commits:
        version, operation = commit.version, commit.operation
        if is_toolkit(version) or operation.upper() in DATA_OPERATIONS or _only_holds(commit):
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


def _only_holds(commit: Commit) -> bool:
    """A commit that set the producer hold alone (`engine.spark.hold`): `apply` holding producers off the
    table, around a run of ops too, or in a run that died holding it; it changes nothing a contract says."""
    try:
        properties = json.loads(commit.parameters.get("properties") or "{}")
    except ValueError:
        return False
    return commit.operation.upper() == "SET TBLPROPERTIES" and set(properties) == {HOLD}


def alias_drift(
    contract: Contract, physical: TableId, views: Mapping[TableId, str], alias: TableId | None = None
) -> list[DriftItem]:
    """A table served under another name must be read through the alias view `<id>` pointing at it.
    `alias`: the contract id's name in the environment (the id itself by default)."""
    alias = contract.table_parts if alias is None else alias
    if physical == alias:
        return []
    from delta_contracts.plan.building import alias_columns
    from delta_contracts.sql.expressions import view_query_text

    want = view_query_text(physical, alias_columns(contract))
    found = alias_view_query(alias, views)
    if found is None:
        return [DriftItem("alias-view", str(alias), want, None, f"alias view {alias} is missing")]
    if same_expression(found, want):
        return []
    reads = _view_source(found)
    if reads is None or reads.casefold() != str(physical).casefold():
        why = f"alias view {alias} does not read {physical}"
        why += f" (it reads {reads})" if reads else ""
    else:
        why = f"alias view {alias} does not serve the contract's columns and types"
    return [DriftItem("alias-view", str(alias), want, found, why)]


def _view_source(query: str) -> str | None:
    """The table a view's query reads (the alias views the toolkit writes read exactly one)."""
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from delta_contracts.sql import expressions as x

    try:
        source = x.parse(query).find(exp.Table)
    except SqlglotError:
        return None
    return None if source is None else ".".join(part.name for part in source.parts)


def alias_view_query(alias: TableId, views: Mapping[TableId, str]) -> str | None:
    """The query of the view named `alias`, if there is one. A name without its catalog (the local engine
    lists views as schema.view; a contract id may name none) matches by schema and view; two names that both
    give their catalog match only in it, as `catalog.schema.view` in another catalog of the same server is
    another view."""
    if alias in views:
        return views[alias]
    return next(
        (query for key, query in views.items() if min(len(key), len(alias)) < 3 and key[-2:] == alias[-2:]),
        None,
    )


def write_target(
    contract: Contract,
    physical: TableId,
    exists: bool,
    views: Mapping[TableId, str],
    alias: TableId | None = None,
) -> str | None:
    """The table producers must write to. Readers use the contract id; a versioned table's id is a view,
    which nobody can write to: writers use the `__vN` table it reads (None when no table exists yet)."""
    if exists:
        return str(physical)
    query = alias_view_query(contract.table_parts if alias is None else alias, views)
    return None if query is None else _view_source(query)


def compatibility_drift(
    contract: Contract,
    views: Mapping[TableId, str],
    unreadable: Callable[[TableId], str | None],
) -> list[DriftItem]:
    """Every compatibility view of an older major (`<table>__v<N>`, N below the contract's) that no longer
    reads: a later migration dropped or changed a column it needs, and its readers now fail."""
    import re

    from delta_contracts.contract.model import semver_tuple

    alias = contract.table_parts
    pattern = re.compile(re.escape(alias[-1]) + r"__v(\d+)", re.IGNORECASE)
    current = semver_tuple(contract.version)[0]
    items = []
    for view in sorted(views):
        found = pattern.fullmatch(view[-1])
        if found is None or int(found.group(1)) >= current:
            continue
        if tuple(p.casefold() for p in view[-2:-1]) != tuple(p.casefold() for p in alias[-2:-1]):
            continue
        why = unreadable(view)
        if why is not None:
            name = str(view)
            message = f"compatibility view {name} no longer reads: {why}"
            items.append(DriftItem("compatibility-view", name, "readable", "broken", message))
    return items
