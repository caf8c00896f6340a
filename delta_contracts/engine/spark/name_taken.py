"""A name a versioned cutover freed, taken by a producer before the alias view takes it.

Between the cutover's rename of the old table (to `<table>__v<n>`) and the alias view, the old name is free.
A producer that writes by name with a create-if-missing write (`writeStream….toTable`, `saveAsTable` in
append mode) and starts again in that moment creates a new Delta table under it (measured: a Structured
Streaming writer restarted after the rename; apply then failed, its rows in that table). Its rows are the
producer's, written to the old name in the old shape: they belong to the renamed old table, from which the
cutover's fence carries rows to the new one after the stamp. So, before the view is made, that table is
renamed aside (which ends its writes: a managed table's folder moves with its name, and a later start meets
the view or takes the name again, which is taken back again), its rows are inserted into the renamed old
table in a commit tagged with its name (so that a run again after a crash carries them once), and it is
dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from delta_contracts.engine.base import EngineError
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.engine.spark.engine import SparkEngine

ASIDE_SUFFIX = "__taken"
# A producer starting again and again could take the name as often as it is given back; each time costs it
# a failed start, so a few rounds end it.
ROUNDS = 5


def _carried_tag(aside: TableId) -> str:
    return f"delta-contracts: rows of {aside}, a table a producer created under the old name at the cutover"


def take_back_name(engine: SparkEngine, name: TableId, home: TableId | None) -> None:
    """Leave `name` free of tables for the view: a Delta table under it is renamed aside, its rows carried
    to `home` (the old table the cutover renamed away from `name`, by this run or, found under its new name,
    an earlier one) and dropped. `home` None: no rename of this run freed the name, so a table under it is
    not the view's to take: refused with what to do, never guessed at."""
    if home is not None:
        for aside in _asides(engine, name):
            _carry(engine, aside, home, name)
    for _ in range(ROUNDS):
        if engine.describe(name, with_version=False) is None:
            return  # free, or a view (CREATE OR REPLACE VIEW takes it)
        if home is None:
            raise EngineError(_unknown_home(name))
        aside = _aside_name(engine, name)
        engine.sql(x.sql(_rename(name, aside)))
        _carry(engine, aside, home, name)
    raise EngineError(
        f"{name}: a producer created a table under this name {ROUNDS} times since the cutover renamed the "
        "old table away (a create-if-missing write such as writeStream.toTable or saveAsTable in append "
        "mode); stop it until the new version's stamp appears, then run `apply` again"
    )


def _carry(engine: SparkEngine, aside: TableId, home: TableId | None, name: TableId) -> None:
    """The rows of `aside` into `home`, once (its tag in `home`'s history), then `aside` dropped."""
    from sqlglot import exp

    if home is None:
        raise EngineError(_unknown_home(name))
    tag = _carried_tag(aside)
    if not any(commit.user_metadata == tag for commit in engine.history(home)):
        target = engine.describe(home, with_version=False)
        source = engine.describe(aside, with_version=False)
        if target is None or source is None:
            raise EngineError(f"{name}: cannot carry the rows of {aside} to {home}: one of them is gone")
        present = {c.name.casefold() for c in source.columns}
        columns = [c.name for c in target.columns if c.name.casefold() in present]
        query = exp.select(*(x.column(c) for c in columns)).from_(x.table(aside))
        into = exp.Schema(this=x.table(home), expressions=[x.ident(c) for c in columns])
        insert = exp.Insert(this=into, expression=query)
        engine.run_statement(x.sql(insert), tag=tag, table=home)
    engine.sql(x.sql(exp.Drop(tables=[x.table(aside)], kind="TABLE", exists=True)))


def _rename(table: TableId, to: TableId) -> Any:
    from sqlglot import exp

    return exp.Alter(this=x.table(table), kind="TABLE", actions=[exp.AlterRename(this=x.table(to))])


def _asides(engine: SparkEngine, name: TableId) -> list[TableId]:
    """Tables renamed aside earlier and left by a crash before their drop."""
    found = []
    for number in range(1, ROUNDS * 4):
        aside = _numbered(name, number)
        if engine.describe(aside, with_version=False) is None:
            break
        found.append(aside)
    return found


def _aside_name(engine: SparkEngine, name: TableId) -> TableId:
    return _numbered(name, len(_asides(engine, name)) + 1)


def _numbered(name: TableId, number: int) -> TableId:
    return TableId((*name[:-1], f"{name[-1]}{ASIDE_SUFFIX}_{number}"))


def _unknown_home(name: TableId) -> str:
    return (
        f"{name} is a Delta table, not the view this op makes, and no rename of this migration freed the "
        f"name: move its rows where they belong and drop it (or rename it), then run `apply` again"
    )
