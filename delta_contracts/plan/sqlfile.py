"""The human half of a migration: the rendered SQL per phase, with gates, pre-checks, warnings and guards.

A DBA may run the file by hand (`spark-sql -f`, or cell by cell in a notebook), and may run it again: every
cell must then be safe to run twice. Most statements are idempotent or fail on a state they do not expect
(ADD CONSTRAINT of a constraint that exists, ALTER TABLE on what is now a view). Where a statement would
succeed and do harm, its cell opens with a guard statement that fails first (`refusal_guards`): a copy into
the new table reads the old table by name, which after the cutover is the alias view over the new table
(or, later, its compatibility view); and `DROP TABLE IF EXISTS` also drops a view of that name. `apply`
runs the ops alone: it checks the same states against the live table before each op (postconditions).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
from delta_contracts.plan.conditions import AllOf, NoRowsWhere
from delta_contracts.plan.ops import (
    PHASES,
    CopyRows,
    DropTable,
    Migration,
    Op,
    Phase,
)
from delta_contracts.plan.render import render, session_settings, setting_statement
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import Target

PHASE_HEADINGS = {
    "expand": "metadata-only additions; safe for current readers",
    "populate": "data work; resumable",
    "cutover": "tighten, swap, mark deprecated, stamp; readers of the new shape",
    "contract": "destructive; gated on the deprecation window and zero readers",
}
# A contract phase with nothing destructive in it (a feature dropped, a property set after it) is no drop.
CONTRACT_WITHOUT_DROPS = "after the cutover; nothing destructive, no gate"


def phase_heading(phase: Phase, ops: Sequence[Op]) -> str:
    if phase is Phase.CONTRACT and not any(op.destructive for op in ops):
        return CONTRACT_WITHOUT_DROPS
    return PHASE_HEADINGS[phase.value]


def comment_text(text: str) -> str:
    """One comment line, whatever the text holds (names may carry newlines). Backslashes stay as they are,
    so a pre-check pasted from the comment runs exactly the query the engine runs."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def precheck_queries(op: Op) -> tuple[str, ...]:
    """The counting queries that must return 0 before the op may run, one per data condition."""
    condition = op.precondition()
    checks = condition.conditions if isinstance(condition, AllOf) else (condition,)
    return tuple(
        x.sql(exp.select(exp.Count(this=exp.Star())).from_(x.table(c.table)).where(x.parse(c.predicate)))
        for c in checks
        if isinstance(c, NoRowsWhere)
    )


def _must_be_table(table: TableId) -> str:
    """Fails (EXPECT_TABLE_NOT_VIEW, or TABLE_OR_VIEW_NOT_FOUND) unless `table` is a table: Delta's
    DESCRIBE DETAIL refuses views, and reads only the table's snapshot."""
    return x.sql(exp.Describe(this=x.table(table), style="DETAIL"))


def _files_read(table: TableId) -> exp.Select:
    return exp.select(exp.Anonymous(this="input_file_name", expressions=[])).from_(x.table(table))


def is_fence(op: Op) -> bool:
    """The versioned cutover's last catch-up: it runs after the alias view moved, and only inserts the old
    rows the new table lacks, so running it again inserts nothing and needs no guard but its source's."""
    return isinstance(op, CatchUpRows) and op.strategy is CatchUpStrategy.INSERT_MISSING


def refusal_guards(op: Op, alias: TableId) -> tuple[tuple[str, str], ...]:
    """(why, statement) pairs run before `op`'s statement in its cell, each failing on a state in which the
    statement would do harm if run (again) by hand."""
    if isinstance(op, CopyRows | CatchUpRows):
        source, target = str(op.source), str(op.table)
        gone = (
            "dropped by the contract phase, nothing is left to copy"
            if is_fence(op)
            else "renamed away or a view, the cutover ran"
        )
        guards = [(f"fails unless {source} is still a table: {gone}", _must_be_table(op.source))]
        if op.source != alias and not is_fence(op):
            # The alias view reads the source until the cutover swaps it to the new table: compared by the
            # data files each reads, which says where the view points whatever its name or its columns.
            message = (
                f"{alias} no longer reads {source}: the cutover ran, and copying {source} "
                f"into {target} again would overwrite rows written since; nothing was changed"
            )
            moved = exp.Except(this=_files_read(alias), expression=_files_read(op.source), distinct=True)
            assertion = exp.Anonymous(
                this="assert_true",
                expressions=[exp.Not(this=exp.Exists(this=moved)), exp.Literal.string(message)],
            )
            guards.append(
                (
                    f"fails once {alias} reads another table than {source}",
                    x.sql(exp.select(assertion)),
                )
            )
        return tuple(guards)
    if isinstance(op, DropTable):
        # DROP TABLE IF EXISTS drops a view of that name too: the compatibility view made after the drop.
        name = str(op.table)
        return (
            (f"fails unless {name} is a table: dropped already, or now a view", _must_be_table(op.table)),
        )
    return ()


def render_sql_file(migration: Migration, *, migration_id: str, target: Target) -> str:
    versions = f"{migration.from_version or '(new)'} -> {migration.to_version}"
    table = comment_text(str(migration.table))
    lines = [
        f"-- delta-contracts migration {migration_id}: {table} {versions}",
        f"-- strategy: {migration.strategy}; target: {target.value}",
        "-- Generated by `delta-contracts plan`. Do not edit: migrations.sum guards every byte.",
    ]
    for title, items in (("warnings", migration.warnings), ("notes", migration.notes)):
        if items:
            lines.append(f"-- {title}:")
            lines.extend(f"--   - {comment_text(item)}" for item in items)
    number = 0
    # Session settings the previous cell's statement changed, put back before the next cell's statement.
    restore: tuple[tuple[str, str, str], ...] = ()
    for phase in PHASES:
        ops = migration.phase(phase)
        if not ops:
            continue
        lines += ["", f"-- === {phase.value}: {phase_heading(phase, ops)} ==="]
        for op in ops:
            number += 1
            reason = f" ({comment_text(op.reason)})" if op.reason else ""
            lines.append(f"-- [{number}] {comment_text(op.summary())}{reason}")
            for check in precheck_queries(op):
                lines.append(f"-- pre-check, must return 0: {comment_text(check)}")
            if (gate := op.gated_by()) is not None:
                lines.append(f"-- gate: {comment_text(gate.describe())}")
            for why, guard in refusal_guards(op, migration.table):
                lines.append(f"-- guard, {comment_text(why)}:")
                lines.append(guard + ";")
            for key, _, default in restore:
                lines.append(f"-- the session setting back to its default ({key}):")
                lines.append(setting_statement(key, default) + ";")
            restore = session_settings(op)
            for key, value, _ in restore:
                lines.append(f"-- session setting for this statement ({key}; the next cell sets it back):")
                lines.append(setting_statement(key, value) + ";")
            lines.append(render(op) + ";")
    return "\n".join(lines) + "\n"
