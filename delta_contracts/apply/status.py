"""What `status` and `drift` learn from the ledger: the live table of a contract (through its alias view and
its stamp), the migrations the ledger has not finished, and which commits of a table are the toolkit's."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from delta_contracts.plan.migrations import StoredMigration
from delta_contracts.plan.ops import PHASES
from delta_contracts.state import ledger as lg
from delta_contracts.tableid import TableId


@dataclass(frozen=True, slots=True)
class Pending:
    migration_id: str
    phases: tuple[str, ...]  # the phases with ops the ledger has not finished

    def to_json(self) -> dict[str, object]:
        return {"migration": self.migration_id, "phases": list(self.phases)}


def pending_migrations(
    history: Sequence[StoredMigration], entries: Sequence[lg.LedgerEntry], contract: str
) -> list[Pending]:
    """Exactly the migrations the ledger has not finished. A table `create` made at version V never needs the
    migrations up to V (they describe a past it never had)."""
    from delta_contracts.contract.model import semver_tuple

    baseline = lg.created_version(entries, contract)
    out = []
    for stored in history:
        to = stored.migration.to_version
        if baseline is not None and semver_tuple(to) <= semver_tuple(baseline):
            continue
        done = lg.done_ops(entries, contract, stored)
        open_phases = {op.phase for i, op in enumerate(stored.migration.ops, start=1) if i not in done}
        if open_phases:
            out.append(Pending(stored.migration_id, tuple(p.value for p in PHASES if p in open_phases)))
    return out


def alias_source(alias: TableId, views: Mapping[TableId, str]) -> tuple[str, ...] | None:
    """The table an alias view `SELECT * FROM t` reads, named as the view names it (perhaps unqualified), or
    None when `alias` is no such view."""
    from sqlglot import exp

    from delta_contracts.sql import expressions as x

    local = {key[-2:]: query for key, query in views.items()}
    query = views.get(alias, local.get(alias[-2:]))
    if query is None:
        return None
    tables = list(x.parse(query).find_all(exp.Table))
    if len(tables) != 1:
        return None
    table = tables[0]
    return tuple(part for part in (table.catalog, table.db, table.name) if part)


def live_physical(
    alias: TableId, planned: TableId, views: Mapping[TableId, str], exists: Callable[[TableId], bool]
) -> TableId:
    """Where the contract's rows live now: the table behind its alias view, else the table of its name, else
    (nothing created yet) where the planned migrations will put it."""
    source = alias_source(alias, views)
    if source is not None:
        return TableId(source if len(source) >= len(alias) else (*alias[: len(alias) - len(source)], *source))
    return alias if exists(alias) else planned


def cell_summary(cell: Mapping[str, object]) -> str:
    """One cell of the contract × environment matrix (`status --all-envs`, the site's index) in words: the
    stamped version, what is pending and what a gate waits for."""
    if "error" in cell:
        return f"error: {cell['error']}"
    stamped = cell["stamped"] or "not created"
    pending = cell["pending"]
    assert isinstance(pending, list)
    parts = [str(stamped)]
    for item in pending:
        parts.append(f"pending {item['migration']} [{'/'.join(item['phases'])}]")
    waiting = cell["waiting"]
    assert isinstance(waiting, list)
    parts += [f"waiting {w['migration']}: {w['waits_for']}" for w in waiting]
    return "; ".join(parts)
