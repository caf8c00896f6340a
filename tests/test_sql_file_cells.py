"""Every golden and committed `.sql` file, split as `spark-sql -f` splits it: one cell per op, ending with the
statement `apply` runs, and a guard first in each cell that would do harm run again by hand (a copy into the
new table after the cutover, a DROP TABLE of what is now a view). Every target, delta-3 and databricks
included; the delta-4 files are also run twice on delta-spark (tests/engine/test_recipes_executed.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
from delta_contracts.plan.migrations import load_history
from delta_contracts.plan.ops import CopyRows, DropTable, Migration, Op, Phase
from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.plan.render import setting_statement
from delta_contracts.target import Target
from tests.engine.sql_rerun import first_pass_cells
from tests.recipes import RECIPES, base_contract, pair
from tests.test_plan_golden import golden_path

REPO = Path(__file__).resolve().parents[1]
CASES = [
    (recipe, versioning, target)
    for recipe in ["create", *RECIPES]
    for versioning in ("in_place", "versioned")
    for target in Target
]


def _is_fence(op: Op) -> bool:
    """The versioned cutover's last catch-up (`plan.fence`)."""
    return isinstance(op, CatchUpRows) and op.strategy is CatchUpStrategy.INSERT_MISSING


def _guarded(migration: Migration, text: str) -> list[tuple[Op, tuple[str, ...]]]:
    cells = first_pass_cells(migration, text)
    ops = [op for phase in Phase for op in migration.phase(phase)]
    previous: Op | None = None
    for op, whole in zip(ops, cells, strict=True):
        # The session settings a statement needs are set right before it, and put back by the next cell.
        restored = previous.session_settings() if previous is not None else ()
        settings = (
            *(setting_statement(k, default) for k, _, default in restored),
            *(setting_statement(k, value) for k, value, _ in op.session_settings()),
        )
        assert whole[len(whole) - 1 - len(settings) : -1] == settings, f"{op.summary()}: session settings"
        cell = (*whole[: len(whole) - 1 - len(settings)], whole[-1])
        previous = op
        if isinstance(op, CopyRows | CatchUpRows):
            assert cell[0].startswith("DESCRIBE DETAIL "), f"{op.summary()}: no guard on its source"
            if op.source != migration.table and not _is_fence(op):
                assert "ASSERT_TRUE(NOT EXISTS(SELECT INPUT_FILE_NAME() FROM" in cell[1], op.summary()
            elif _is_fence(op):  # it runs after the alias moved, and inserts only what the new table lacks
                assert len(cell) == 2, f"{op.summary()}: unexpected statements {cell[:-1]}"
        elif isinstance(op, DropTable):
            assert cell[:-1] == (f"DESCRIBE DETAIL {_quoted(op.table)}",), f"{op.summary()}: no guard"
        else:
            assert len(cell) == 1, f"{op.summary()}: unexpected statements {cell[:-1]}"
    return list(zip(ops, cells, strict=True))


def _quoted(table: tuple[str, ...]) -> str:
    return ".".join(f"`{part}`" for part in table)


@pytest.mark.parametrize(("recipe", "versioning", "target"), CASES)
def test_golden_file_cells(recipe: str, versioning: str, target: Target) -> None:
    text = golden_path(recipe, versioning, target).read_text(encoding="utf-8")
    if recipe == "create":
        migration, _ = plan(None, base_contract(versioning), target)
    else:
        try:
            migration, _ = plan(*pair(recipe, versioning), target)
        except PlanError:
            assert text.startswith("-- refused:")
            return
    _guarded(migration, text)


def test_committed_migration_file_cells() -> None:
    seen = 0
    for folder in sorted((REPO / "migrations").iterdir()):
        for stored in load_history(folder):
            guarded = _guarded(stored.migration, stored.sql_path.read_text(encoding="utf-8"))
            seen += sum(len(cell) > 1 for _, cell in guarded)
    assert seen == 3, "0004 guards its two copies and its drop"
