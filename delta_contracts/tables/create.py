"""`create_table`: the notebook entry point. Creates a table from its contract, or verifies an existing one.

from delta_contracts import create_table
create_table(spark, "contracts/sales/orders.yaml")          # a SparkSession with delta-spark
create_table(LocalEngine("warehouse"), contract)           # or any engine
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.contract.model import Contract
from delta_contracts.errors import FailedError
from delta_contracts.marks import STAMP_VERSION
from delta_contracts.plan.planner import initial_state, plan
from delta_contracts.tables.drift import DriftItem, alias_drift, alias_view_query, table_drift
from delta_contracts.target import DEFAULT_TARGET, Target

if TYPE_CHECKING:
    from collections.abc import Sequence

    from delta_contracts.engine.base import Engine, OpOutcome
    from delta_contracts.plan.ops import Op


class ContractMismatchError(FailedError):
    """The table exists and differs from its contract; `differences` lists every difference."""

    def __init__(self, table: str, differences: list[DriftItem]) -> None:
        self.table = table
        self.differences = differences
        lines = "\n".join(f"  - {d.message}" for d in differences)
        super().__init__(f"{table} exists but does not match its contract:\n{lines}")


@dataclass(frozen=True)
class CreateResult:
    table: str
    created: bool  # False: it existed and matches
    outcomes: tuple[OpOutcome, ...]
    notes: tuple[DriftItem, ...] = ()


class PendingMigrationError(FailedError):
    """The table exists at an older version: a planned migration, not `create`, takes it forward."""

    def __init__(self, table: str, found: str, version: str) -> None:
        self.table = table
        self.found = found
        super().__init__(
            f"{table} is {found}; contract {version} needs a migration applied first "
            "(delta-contracts plan, then delta-contracts apply): create never moves a table forward"
        )


def create_table(
    spark_or_engine: Any, contract: Contract | str | Path, *, target: Target = DEFAULT_TARGET
) -> CreateResult:
    """Create what does not exist yet; verify what does. Never moves an alias view or a stamp."""
    from delta_contracts.contract.lint import as_contract
    from delta_contracts.engine.base import EngineError
    from delta_contracts.engine.select import as_engine

    engine = as_engine(spark_or_engine)
    model = as_contract(contract)
    physical = initial_state(model).physical
    name = str(physical)
    live = engine.describe(physical)
    if live is not None:
        _refuse_older_stamp(name, live.properties.get(STAMP_VERSION), model.version)
        found = table_drift(model, live, physical) + alias_drift(model, physical, engine.views())
        differences = [d for d in found if d.is_drift]
        if differences:
            raise ContractMismatchError(name, differences)
        return CreateResult(name, False, (), tuple(found))
    _refuse_older_alias(engine, model, physical)
    migration, _ = plan(None, model, target)
    engine.check_supported(migration.ops)  # refuse up front rather than leave a half-created table
    _check_rules_compile(engine, migration.ops)
    tag = f"delta-contracts create {model.id} {model.version}"
    outcomes: list[OpOutcome] = []
    try:
        for i, op in enumerate(migration.ops):
            outcomes.append(engine.apply_op(op, tag=f"{tag} op {i + 1}"))
    except Exception as err:  # undone, then raised again as it is: all or nothing
        _undo(engine, migration.ops, outcomes)
        if isinstance(err, EngineError):
            raise EngineError(f"{err}\n(nothing was left behind: the create was undone)") from err
        err.add_note("nothing was left behind: the create was undone")
        raise
    from delta_contracts.state.record import TableRecord, open_ledger

    record = TableRecord(model.id, (), None, open_ledger(engine))
    record.append_created(model.version, migration.ops, outcomes, engine.name)
    return CreateResult(name, True, tuple(outcomes))


def _check_rules_compile(engine: Engine, ops: Sequence[Op]) -> None:
    """Evaluate every CHECK over an empty relation of the table's columns before anything is created, so
    that a rule the engine cannot type (`ts >= 0` on a timestamp) stops the create with nothing made."""
    from sqlglot import exp

    from delta_contracts.contract.errors import first_line
    from delta_contracts.engine.base import EngineError
    from delta_contracts.sql import expressions as x

    created = {op.table: columns for op in ops if (columns := op.creates()) is not None}
    failures = []
    for op in ops:
        columns = created.get(op.table)
        check = op.adds_check()
        if check is None or columns is None:
            continue
        name, expression = check
        empty = exp.select(*(x.cast(exp.Null(), c.type).as_(x.ident(c.name)) for c in columns))
        probe = exp.select(x.parse(expression).as_("ok")).from_(empty.subquery("probe")).where(exp.false())
        try:
            engine.sql(x.sql(probe))
        except Exception as err:  # the engine's analysis error, whatever its class: reported, not hidden
            reason = first_line(err)
            failures.append(f"CHECK {name} ({expression}): {reason}")
    if failures:
        raise EngineError("the engine refuses these rules; nothing was created:\n  " + "\n  ".join(failures))


def _undo(engine: Engine, ops: Sequence[Op], outcomes: Sequence[OpOutcome]) -> None:
    """Drop the tables this create made a moment ago (the one whose creation failed too, if it exists).

    Views need no undo: the alias view is the last op of a create, so nothing follows it that can fail."""
    attempted = ops[: len(outcomes) + 1]
    skipped = {op.table for op, outcome in zip(ops, outcomes, strict=False) if outcome.path == "skipped"}
    reason = "undo a create that failed: the table was made by it a moment ago, never read"
    undo = [(op.table, reverse) for op in attempted if (reverse := op.reverse(reason)) is not None]
    for table, reverse in reversed(undo):
        if table not in skipped and engine.describe(table) is not None:
            engine.run(reverse)


def _refuse_older_stamp(table: str, stamped: str | None, version: str) -> None:
    from delta_contracts.contract.model import semver_tuple

    if stamped is not None and semver_tuple(stamped) < semver_tuple(version):
        raise PendingMigrationError(table, f"stamped {stamped}", version)


def _refuse_older_alias(engine: Engine, model: Contract, physical: tuple[str, ...]) -> None:
    """A versioned contract's new `__vN` is made by its migration, which also copies the rows and moves
    the alias view: creating it empty here would serve readers an empty table."""
    alias = model.table_parts
    if physical == alias:
        return
    query = alias_view_query(alias, engine.views())
    if query is not None:
        raise PendingMigrationError(model.id, f"a view serving an older version ({query})", model.version)
    older = engine.describe(alias)
    if older is not None:
        stamped = older.properties.get(STAMP_VERSION) or "with no stamp"
        raise PendingMigrationError(model.id, f"a table stamped {stamped}", model.version)
