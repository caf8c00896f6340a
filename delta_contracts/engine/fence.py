"""The versioned cutover's fence at run time, on any engine: the versions its statements read are bound
here (`plan.fence` builds them), and the old table's changes since the catch-up are applied before the insert.

1. V, the old table's version the fence carries over: the commit that sets `marks.FENCED_INTO` on it (a
   metadata commit, which also fails every write still in flight on it, as the deprecation mark does). Set
   once: a fence run again reads the same V, so what a first run applied is found applied, and every change
   made to the old table after V is left to the drop's pre-check (`UnchangedSinceFence`), which refuses it.
2. S, the new table's version at its stamp: what the catch-up left, before any producer wrote to it.
3. With a key: the keys changed on the old table since the catch-up that the new table still holds as of S
   are MERGEd (updated, or deleted), then counted again: none may be left. Without one: rows gone from the old
   table since the catch-up and still in the new one are refused, named (which of equal rows is unknown).
4. The insert of the keys (or rows) the new table lacks, reading the old table as of V.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from delta_contracts.engine.base import Engine, EngineError
from delta_contracts.live import property_set_by
from delta_contracts.marks import FENCED_INTO, STAMP_VERSION
from delta_contracts.plan.catch_up import CatchUpRows
from delta_contracts.plan.conditions import RenamedColumnCarried
from delta_contracts.plan.fence import (
    changes_merge,
    pending_changes,
    removed_rows,
    renamed_column_merge,
    renamed_column_updates,
)
from delta_contracts.plan.ops import Backfill, Phase, SetProperties
from delta_contracts.sql import expressions as x

SAMPLE = 5


@dataclass(frozen=True, slots=True)
class FenceVersions:
    source: int  # V: the old table's version the fence carries over
    stamp: int  # S: the new table's version at its stamp


def _source_version(engine: Engine, op: CatchUpRows, tag: str | None) -> int:
    target = str(op.table)
    version = property_set_by(engine.history(op.source), FENCED_INTO, target)
    if version is not None:
        return version
    mark = SetProperties(
        table=op.source,
        phase=Phase.CUTOVER,
        properties=((FENCED_INTO, target),),
        reason="the version the fence carries over",
    )
    engine.run(mark, tag=tag)
    version = property_set_by(engine.history(op.source), FENCED_INTO, target)
    if version is None:
        raise EngineError(f"{op.summary()}: {op.source}'s history shows no commit setting {FENCED_INTO}")
    return version


def fence_versions(engine: Engine, op: CatchUpRows, tag: str | None = None) -> FenceVersions:
    stamp = property_set_by(engine.history(op.table), STAMP_VERSION)
    if stamp is None:
        raise EngineError(
            f"{op.summary()}: {op.table} was never stamped: the fence runs after the cutover's stamp"
        )
    return FenceVersions(_source_version(engine, op, tag), stamp)


def _rows(engine: Engine, query: exp.Query, limit: int | None = None) -> list[dict[str, Any]]:
    limited = query.limit(limit) if limit is not None else query
    return engine.sql(x.sql(limited))


def _count(engine: Engine, query: exp.Query) -> int:
    counted = exp.select(exp.Count(this=exp.Star()).as_("n")).from_(
        exp.Subquery(this=query, alias=exp.TableAlias(this=x.ident("q")))
    )
    return int(engine.sql(x.sql(counted))[0]["n"])


def _shown(rows: list[dict[str, Any]]) -> str:
    return "\n".join(f"    {json.dumps(r, default=str, ensure_ascii=False)}" for r in rows)


def apply_old_changes(
    engine: Engine, op: CatchUpRows, versions: FenceVersions, tag: str | None = None
) -> None:
    """Step 3 of the module docstring."""
    if not op.key:
        removed = removed_rows(op, versions.source, versions.stamp)
        count = _count(engine, removed)
        if count:
            raise EngineError(
                f"{op.summary()}: {count} row(s) of {op.table} were updated or deleted on {op.source} after "
                f"the catch-up (it no longer has them) and {op.table} still holds them; without a unique key "
                "(`quality.unique`) the fence cannot tell which of equal rows to change. Delete these rows "
                f"from {op.table} (or write them again as {op.source} has them now), then run apply again. "
                f"Sample:\n{_shown(_rows(engine, removed, SAMPLE))}"
            )
        return
    pending = pending_changes(op, versions.source, versions.stamp)
    if not _count(engine, pending):
        return
    engine.run_statement(x.sql(changes_merge(op, versions.source, versions.stamp)), tag=tag, table=op.table)
    left = _count(engine, pending)
    if left:
        raise EngineError(
            f"{op.summary()}: {left} key(s) updated or deleted on {op.source} after the catch-up still "
            f"differ in {op.table} after the fence's MERGE; nothing else was changed by it. Keys:\n"
            f"{_shown(_rows(engine, pending, SAMPLE))}"
        )


def carry_renamed_column(engine: Engine, op: Backfill, tag: str | None = None) -> None:
    """An in-place rename's last catch-up, before its `UPDATE … WHERE new IS NULL`: the keys whose old
    column an upserting old producer updated after the cutover's backfill get the new value, where the new
    column still holds what it held at the old column's deprecation mark (a producer that switched wrote it
    since, later). Needs the table's unique key (from its stamp); without one nothing is known to carry."""
    condition = RenamedColumnCarried(op.table, op.column, op.expression)
    basis = engine.renamed_column_basis(condition)
    if basis is None:
        return
    key, mark = basis
    if not engine.count_rows(renamed_column_updates(op.table, op.column, op.expression, key, mark)):
        return
    merge = renamed_column_merge(op.table, op.column, op.expression, key, mark)
    engine.run_statement(x.sql(merge), tag=tag, table=op.table)
