"""`write`: enforce the contract on a batch, then append it (or MERGE it on the contract's unique key), the
commit tagged in `userMetadata` with the contract id and version it was written under."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from delta_contracts.contract.model import Contract
from delta_contracts.errors import FailedError, InputError
from delta_contracts.plan.planner import initial_state
from delta_contracts.quality import sink
from delta_contracts.quality.enforce import Mode, enforce
from delta_contracts.quality.locate import resolve_contract
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
) -> WriteResult:
    """Enforce `contract_or_id` on `df` (see `enforce`), then append it to the contract's table.

    `merge`: upsert on the contract's first unique key instead of appending; by default the write merges
    exactly when the contract declares a unique key. A versioned contract writes its versioned table
    (`<table>__v<major>`), never the alias view.
    """
    from delta_contracts.engine.select import as_engine

    model = resolve_contract(contract_or_id, contracts)
    live_engine = engine or as_engine(df.sparkSession)
    table = write_table(live_engine, model)
    name = str(table)
    checked = enforce(df, model, mode, engine=live_engine)
    good = checked.selectExpr(*(x.sql(x.column(c.name)) for c in model.columns))  # contract order, by name
    keyed = model.quality.unique[0] if model.quality.unique else ()
    use_merge = bool(keyed) if merge is None else merge
    if use_merge and not keyed:
        raise NoMergeKeyError(f"contract {model.id} declares no unique key to merge on")
    how = "merge" if use_merge else "append"
    tag = commit_tag(model, how)
    if use_merge:
        _merge(live_engine, good, table, keyed, tag)
    else:
        sink.append(live_engine, good, table, tag)
    history = live_engine.history(table)
    return WriteResult(name, history[-1].version if history else 0, how, tag)


def write_table(engine: Engine, model: Contract) -> TableId:
    """The table producers write to, found live: the table the contract's name is, or the one its alias view
    reads — after a versioned cutover `<table>__v<major>`, whatever the contract itself declares. Never an
    older version's table still waiting for its drop: rows written there after the cutover would not be
    served, and would go with it."""
    from delta_contracts.apply.status import live_physical

    planned = initial_state(model).physical
    current = live_physical(
        model.table_parts,
        planned,
        engine.views(),
        lambda t: engine.describe(t, with_version=False) is not None,
    )
    if engine.describe(current, with_version=False) is None:
        raise ContractTableMissingError(
            f"{current} does not exist: create it from contract {model.id} {model.version} first"
        )
    return current


def merge_statement(table: TableId, source: str, key: tuple[str, ...]) -> exp.Expr:
    """MERGE INTO table USING source ON key equality: matched rows updated, new rows inserted."""
    template = x.parse(
        "MERGE INTO t AS target USING s AS source ON TRUE "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    assert isinstance(template, exp.Merge)
    on = exp.and_(
        *(
            exp.EQ(
                this=exp.Column(this=x.ident(k), table=x.ident("target")),
                expression=exp.Column(this=x.ident(k), table=x.ident("source")),
            )
            for k in key
        )
    )
    template.set("this", exp.alias_(x.table(table), "target", table=True))
    template.set("using", exp.alias_(x.table((source,)), "source", table=True))
    template.set("on", on)
    return template


def _merge(engine: Engine, frame: Any, table: TableId, key: tuple[str, ...], tag: str) -> None:
    view = f"delta_contracts_batch_{uuid.uuid4().hex[:12]}"
    frame.createOrReplaceTempView(view)
    try:
        sink.run_tagged(engine, x.sql(merge_statement(table, view, key)), tag)
    finally:
        engine.spark.catalog.dropTempView(view)  # type: ignore[attr-defined]
