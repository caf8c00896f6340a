"""A migration's `.sql` file run by hand, as a DBA would: statement by statement, in file order, and again.

The file is split as `spark-sql -f` splits it (at each `;` outside quotes and comments) and its statements
grouped by op cell (`-- [n] …`). `first_pass_cells` holds the file against the ops `apply` runs (each cell
ends with its op's statement; the cell's guards run before the op and must pass); `run_again` runs every cell
of the file once more on the migrated table, as a DBA re-running the file (or its cells in a notebook) does:
a cell stops at its first failing statement (a refusal), and the next cell runs; after each cell the schema
holds the same tables and views. `inventory` is what the
re-run must leave as a single `apply` left it: every table and view of the schema, what each serves, and each
table's Delta state (schema, rules, properties, rows) read from its log. No pytest here: the delta-3
virtualenv runs it too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from delta_contracts.engine.base import Engine
from delta_contracts.plan.ops import Migration, Phase
from delta_contracts.plan.render import render

_CELL = re.compile(r"^-- \[\d+\] ", re.MULTILINE)


def sql_cells(text: str) -> list[tuple[str, ...]]:
    """The file's statements (text as written, comments left out) grouped by op cell, in file order."""
    from sqlglot import TokenType
    from sqlglot.dialects.dialect import Dialect

    from delta_contracts.sql.dialect import DIALECT

    cells: list[list[str]] = []
    after_previous = 0
    first: int | None = None
    for token in Dialect.get_or_raise(DIALECT).tokenize(text):
        if token.token_type is not TokenType.SEMICOLON:
            first = token.start if first is None else first
            continue
        assert first is not None, f"an empty statement before offset {token.start}"
        if _CELL.search(text[after_previous:first]):
            cells.append([])
        assert cells, "a statement before the first op cell"
        cells[-1].append(text[first : token.start])
        after_previous, first = token.end + 1, None
    assert first is None, "the file ends with a statement without `;`"
    return [tuple(cell) for cell in cells]


def schema_file(text: str, old_schema: str, schema: str) -> str:
    """A file planned for `old_schema` as it reads for the same tables under `schema` (names only, quoted or
    not; other words such as an owner team are kept)."""
    quoted = text.replace(f"`{old_schema}`.", f"`{schema}`.")
    return re.sub(rf"(?<![\w`]){re.escape(old_schema)}(?=\.)", schema, quoted)


def first_pass_cells(migration: Migration, text: str) -> list[tuple[str, ...]]:
    """The cells of `text`, one per op of `migration` in the order `apply` runs them, each ending with the
    op's statement as `apply` renders it."""
    cells = sql_cells(text)
    ops = [op for phase in Phase for op in migration.phase(phase)]
    assert len(cells) == len(ops), f"the file has {len(cells)} cells for {len(ops)} ops"
    for op, cell in zip(ops, cells, strict=True):
        assert cell[-1] == render(op), (
            f"cell of {op.summary()} ends with {cell[-1]!r}, apply runs {render(op)!r}"
        )
    return cells


def run_guards(engine: Engine, cell: Sequence[str]) -> None:
    """A cell's guards, before its op runs for the first time: each must pass."""
    for statement in cell[:-1]:
        engine.sql(statement)


def run_again(engine: Engine, cells: Sequence[Sequence[str]], schema: str) -> list[str]:
    """Every cell once more; the refusals (cell number and the error's first line). After each cell the
    schema still holds the same tables and views (a DBA may stop after any cell): a later cell must not be
    what puts back what an earlier one took away."""
    names = _names(engine, schema)
    refused = []
    for number, cell in enumerate(cells, start=1):
        for statement in cell:
            try:
                engine.sql(statement)
            except Exception as err:  # any refusal counts; what it left is compared after the run
                refused.append(f"[{number}] {str(err).strip().splitlines()[0][:160]}")
                break
        now = _names(engine, schema)
        assert now == names, f"cell [{number}] run again left the tables and views {now}, not {names}"
    return refused


def _names(engine: Engine, schema: str) -> dict[str, str]:
    """The schema's tables and views by name (SHOW rather than `spark.catalog.listTables`, which fails to
    decode its rows without code generation: tests/engine/session_conf.py)."""
    from delta_contracts.sql import expressions as x

    namespace = x.sql(x.ident(schema))
    names = {row["tableName"] for row in engine.sql(f"SHOW TABLES IN {namespace}") if not row["isTemporary"]}
    views = {row["viewName"] for row in engine.sql(f"SHOW VIEWS IN {namespace}") if not row["isTemporary"]}
    return {name: "view" if name in views else "table" for name in sorted(names)}


def inventory(engine: Engine, schema: str) -> dict[str, Any]:
    """Every table and view of `schema`: its kind and the rows read through it; a table's Delta state too."""
    from delta_contracts.sql import expressions as x
    from tests.engine.recipe_run import checksum, table_state

    found: dict[str, Any] = {}
    for table, kind in _names(engine, schema).items():
        name = (schema, table)
        rows = engine.sql(f"SELECT * FROM {x.sql(x.table(name))}")
        record: dict[str, Any] = {"kind": kind, "served": checksum(rows)}
        if kind == "table":
            live = engine.describe(name, with_version=False)
            assert live is not None, name
            record["state"] = table_state(live.location.removeprefix("file:"), schema)
        found[table] = record
    return found


def run_again_unchanged(engine: Engine, text: str, schema: str, where: str) -> list[str]:
    """Run the whole file again on the migrated schema; it must leave every table and view as it found them.
    The refusals, for the record."""
    before = inventory(engine, schema)
    refused = run_again(engine, sql_cells(text), schema)
    after = inventory(engine, schema)
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    assert not changed, (
        f"{where}: running the .sql file again changed {sorted(changed)}: before {before}, after {after}; "
        f"refused: {refused}"
    )
    return refused
