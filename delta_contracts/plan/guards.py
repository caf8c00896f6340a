"""The guard statements of a migration's `.sql` file (`plan.sqlfile`): each fails first, in the cell of an op
whose statement would succeed and do harm if a DBA ran it by hand again. An op says which it needs
(`Op.file_guards`): a copy into the new table reads the old table by name, which after the cutover is the
alias view over the new table (or, later, its compatibility view); and `DROP TABLE IF EXISTS` also drops a
view of that name."""

from __future__ import annotations

from sqlglot import exp

from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId


def must_be_table(table: TableId) -> str:
    """Fails (EXPECT_TABLE_NOT_VIEW, or TABLE_OR_VIEW_NOT_FOUND) unless `table` is a table: Delta's
    DESCRIBE DETAIL refuses views, and reads only the table's snapshot."""
    return x.sql(exp.Describe(this=x.table(table), style="DETAIL"))


def _files_read(table: TableId) -> exp.Select:
    return exp.select(exp.Anonymous(this="input_file_name", expressions=[])).from_(x.table(table))


def copy_guards(
    source: TableId, target: TableId, alias: TableId, *, fence: bool
) -> tuple[tuple[str, str], ...]:
    """The guards of a copy from `source` into `target`: `source` is still a table, and (unless `source` is
    the alias itself, or the copy is the versioned cutover's fence, which runs after the alias view moved and
    only inserts the old rows the new table lacks, so running it again inserts nothing) the alias view still
    reads `source`."""
    gone = (
        "dropped by the contract phase, nothing is left to copy"
        if fence
        else "renamed away or a view, the cutover ran"
    )
    guards = [(f"fails unless {source} is still a table: {gone}", must_be_table(source))]
    if source != alias and not fence:
        # The alias view reads the source until the cutover swaps it to the new table: compared by the
        # data files each reads, which says where the view points whatever its name or its columns.
        message = (
            f"{alias} no longer reads {source}: the cutover ran, and copying {source} "
            f"into {target} again would overwrite rows written since; nothing was changed"
        )
        moved = exp.Except(this=_files_read(alias), expression=_files_read(source), distinct=True)
        assertion = exp.Anonymous(
            this="assert_true",
            expressions=[exp.Not(this=exp.Exists(this=moved)), exp.Literal.string(message)],
        )
        guards.append((f"fails once {alias} reads another table than {source}", x.sql(exp.select(assertion))))
    return tuple(guards)


def table_guard(table: TableId) -> tuple[tuple[str, str], ...]:
    """The guard of a DROP TABLE IF EXISTS, which drops a view of that name too (the compatibility view made
    after the drop)."""
    name = str(table)
    return ((f"fails unless {name} is a table: dropped already, or now a view", must_be_table(table)),)
