"""A process the rewrite crash test kills: `python rewrite_child.py WAREHOUSE setup|STEP`.

`setup` creates the table with rows; a STEP name (see `rewrite.STEPS`) runs DROP COLUMNS by an allowed
rewrite and SIGKILLs itself right after that step, as a crash would.
"""

from __future__ import annotations

import os
import signal
import sys

from delta_contracts.engine.local.engine import LocalEngine
from delta_contracts.plan.ops import ColumnSpec, CreateTable, DropColumns, Gate, Phase

TABLE = ("crash", "t")
DROP = DropColumns(
    table=TABLE,
    phase=Phase.CONTRACT,
    columns=("note",),
    gate=Gate("P30D", "P14D", "delta_contracts.deprecated.columns", ("crash.t.note",)),
)


def main(warehouse: str, step: str) -> None:
    if step == "setup":
        with LocalEngine(warehouse) as engine:
            columns = (
                ColumnSpec("id", "bigint", False),
                ColumnSpec("note", "string"),
                ColumnSpec("p", "string"),
            )
            engine.apply_op(
                CreateTable(table=TABLE, phase=Phase.EXPAND, columns=columns, partitioned_by=("p",))
            )
            engine.sql("INSERT INTO `crash`.`t` VALUES (1, 'one', 'a'), (2, 'two', 'b'), (3, NULL, 'a')")
            engine.sql("ALTER TABLE `crash`.`t` ADD CONSTRAINT `id_positive` CHECK (`id` > 0)")
        return

    def on_step(name: str) -> None:
        if name == step:
            os.kill(os.getpid(), signal.SIGKILL)

    with LocalEngine(warehouse, allow_rewrite=True, on_step=on_step) as engine:
        engine.apply_op(DROP)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
