"""`write`: enforce the contract on a batch, then append it (or MERGE it on the contract's unique key), the
commit tagged in `userMetadata` with the contract id and version it was written under."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from delta_contracts.contract.model import Contract
from delta_contracts.errors import FailedError, InputError
from delta_contracts.live import LiveTable, held_until
from delta_contracts.marks import HOLD
from delta_contracts.quality import sink
from delta_contracts.quality.enforce import Mode, enforce
from delta_contracts.quality.locate import resolve_contract
from delta_contracts.quality.shape import Fill, batch_shape, fills, known_versions
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.engine.base import Engine


class NoMergeKeyError(InputError, ValueError):
    """A merge was asked for a contract that declares no unique key to merge on."""


class ContractTableMissingError(FailedError, LookupError):
    """The contract's table does not exist yet: create it (`delta-contracts create`) before writing."""


@dataclass(frozen=True, slots=True)
class WriteResult:
    table: str
    version: int  # the Delta table version of the data commit
    how: str  # append | merge
    user_metadata: str
    written_as: str = ""  # the contract version whose shape the batch had (the table's stamped one)


def commit_tag(contract: Contract, how: str) -> str:
    """What the data commit says about itself: which contract (id, version) it was written under."""
    payload = {"delta_contracts.id": contract.id, "delta_contracts.version": contract.version, "op": how}
    return json.dumps(payload, separators=(",", ":"))


def write(
    df: Any,
    contract_or_id: Contract | str | Path,
    mode: Mode = "fail",
    *,
    engine: Engine | None = None,
    merge: bool | None = None,
    contracts: Path | None = None,
    migrations: Path | None = None,
) -> WriteResult:
    """Enforce the contract on `df` (see `enforce`), then append it to the contract's table.

    The batch is written as the contract version whose shape it has: the caller's, or the one the live table
    is stamped with while a migration runs (its contract read from `migrations`, default ./migrations), and
    only when that is the stamped version (`shape.ShapeNotStampedError` otherwise, nothing written). Its rows
    fill every column the table has: the other side of a rename, a deprecated column kept for its readers.
    `merge`: upsert on the version's first unique key instead of appending; by default the write merges
    exactly when it declares a unique key. A versioned contract writes its live versioned table
    (`<table>__v<major>`), never the alias view.
    """
    from delta_contracts.engine.select import as_engine

    model = resolve_contract(contract_or_id, contracts)
    live_engine = engine or as_engine(df.sparkSession)
    table, live = unheld_table(live_engine, model)
    known = known_versions(model, migrations if migrations is not None else Path("migrations"))
    written_as = batch_shape(df.schema, model, live, known, cast=mode == "cast")
    checked = enforce(df, written_as, mode, engine=live_engine)
    filled = fills(live, written_as, known)
    good = checked.selectExpr(*(x.sql(f.value) for f in filled))  # the table's columns, by name
    keyed = written_as.quality.unique[0] if written_as.quality.unique else ()
    use_merge = bool(keyed) if merge is None else merge
    if use_merge and not keyed:
        raise NoMergeKeyError(
            f"contract {written_as.id} {written_as.version} declares no unique key to merge on"
        )
    how = "merge" if use_merge else "append"
    tag = commit_tag(written_as, how)
    if use_merge:
        _merge(live_engine, good, table, keyed, filled, tag)
    else:
        sink.append(live_engine, good, table, tag)
    history = live_engine.history(table)
    return WriteResult(str(table), history[-1].version if history else 0, how, tag, written_as.version)


HOLD_POLL_SECONDS = 0.5


def unheld_table(
    engine: Engine, model: Contract, sleep: Callable[[float], None] = time.sleep
) -> tuple[TableId, LiveTable]:
    """The table to write (`write_table`) and its live state, once `apply` holds no producer off it: while
    its `delta_contracts.hold` names an instant still to come, wait (looking again every half second, never
    past the instant) and find the table again, since the stamp may have moved producers to another one
    meanwhile (docs/migrations.md, "Wait while the table is held")."""
    while True:
        table = write_table(engine, model)
        live = engine.describe(table, with_version=False)
        if live is None:
            raise ContractTableMissingError(
                f"{table} does not exist: create it from contract {model.id} first"
            )
        until = held_until(live.properties.get(HOLD))
        left = 0.0 if until is None else (until - datetime.now(UTC)).total_seconds()
        if left <= 0:
            return table, live
        sleep(min(HOLD_POLL_SECONDS, left))


def write_table(engine: Engine, model: Contract) -> TableId:
    """The table producers write to, found live: the table the contract's name is, or the one its alias view
    reads — after a versioned cutover `<table>__v<major>`, whatever the contract itself declares. Never an
    older version's table still waiting for its drop: rows written there after the cutover would not be
    served, and would go with it."""
    from delta_contracts.state.record import TableRecord

    current = (
        TableRecord(model.id, ())
        .location(model, engine.views(), lambda t: engine.describe(t, with_version=False) is not None)
        .current
    )
    if engine.describe(current, with_version=False) is None:
        raise ContractTableMissingError(
            f"{current} does not exist: create it from contract {model.id} {model.version} first"
        )
    return current


def merge_statement(table: TableId, source: str, key: tuple[str, ...], filled: Sequence[Fill]) -> exp.Expr:
    """MERGE INTO table USING source ON key equality: a matched row gets the columns the batch determines
    (a deprecated column it knows nothing of keeps its value), a new row every column of the table."""

    def src(name: str) -> exp.Column:
        return exp.Column(this=x.ident(name), table=x.ident("source"))

    on = exp.and_(
        *(exp.EQ(this=exp.Column(this=x.ident(k), table=x.ident("target")), expression=src(k)) for k in key)
    )
    update = exp.Update(
        expressions=[
            exp.EQ(this=x.column(f.column), expression=src(f.column)) for f in filled if f.determined
        ]
    )
    insert = exp.Insert(
        this=exp.Tuple(expressions=[x.column(f.column) for f in filled]),
        expression=exp.Tuple(expressions=[src(f.column) for f in filled]),
    )
    return exp.Merge(
        this=exp.alias_(x.table(table), "target", table=True),
        using=exp.alias_(x.table((source,)), "source", table=True),
        on=on,
        whens=exp.Whens(
            expressions=[
                exp.When(matched=True, source=False, then=update),
                exp.When(matched=False, source=False, then=insert),
            ]
        ),
    )


def _merge(
    engine: Engine, frame: Any, table: TableId, key: tuple[str, ...], filled: Sequence[Fill], tag: str
) -> None:
    view = f"delta_contracts_batch_{uuid.uuid4().hex[:12]}"
    frame.createOrReplaceTempView(view)
    try:
        sink.run_tagged(engine, x.sql(merge_statement(table, view, key, filled)), tag)
    finally:
        engine.spark.catalog.dropTempView(view)  # type: ignore[attr-defined]
