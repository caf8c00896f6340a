"""The op protocol (issue 50): what a caller needs of an op it asks the op (`Op` in plan/ops.py), never its
class. Read from the source: no `isinstance` test (nor `match` class pattern) names an op class, indirect
subclasses included, outside the engines' op tables, and nothing reads an op's `gate` attribute by name;
then the decisions the protocol's answers encode."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from delta_contracts.apply.reports import OpInFlight
from delta_contracts.apply.schedule import Schedule, Verdict, held_runs
from delta_contracts.marks import DEPRECATED_COLUMNS, column_mark_key
from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
from delta_contracts.plan.fields import WidenField
from delta_contracts.plan.migrations import StoredMigration
from delta_contracts.plan.ops import (
    CHECK_DEPENDENT_EXPRESSIONS,
    AddCheck,
    AddColumn,
    Backfill,
    CloseColumn,
    ColumnSpec,
    CopyRows,
    CreateTable,
    CreateView,
    DropColumns,
    DropTable,
    Gate,
    LastCatchUp,
    MarkDeprecated,
    Phase,
    SetNotNull,
    SetProperties,
    StampContract,
    UnlistDeprecated,
    WidenType,
    registered_ops,
)
from delta_contracts.plan.planner import plan
from delta_contracts.plan.render import render
from delta_contracts.tableid import TableId
from delta_contracts.target import Target
from tests.recipes import pair

PACKAGE = Path(__file__).resolve().parents[1] / "delta_contracts"
# Where an op's class is the key by design: each engine's per-op code is one table keyed by op class
# (`engine/op_table.OpTable`), which its engine looks each op up in. Nothing else may test an op's class.
OP_TABLES = frozenset({"engine/local/ops.py", "engine/spark/ops.py"})

T = TableId(("main", "sales", "orders"))
NEW = TableId(("main", "sales", "orders__v2"))
GATE = Gate("P30D", "P30D", column_mark_key("note"), ("main.sales.orders.note",))


def _trees(root: Path) -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(root.rglob("*.py")):
        yield path.relative_to(root).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def op_classes(trees: list[tuple[str, ast.Module]]) -> frozenset[str]:
    """The names of every subclass of `Op`, indirect ones included, as the class statements say."""
    bases: dict[str, set[str]] = {}
    for _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases.setdefault(node.name, set()).update(n for b in node.bases if (n := _name(b)))
    found = {"Op"}
    while grown := {c for c, of in bases.items() if c not in found and of & found}:
        found |= grown
    return frozenset(found - {"Op"})


def class_tests(trees: list[tuple[str, ast.Module]], classes: frozenset[str]) -> list[str]:
    """`file:line name` of each isinstance call and each `case Class()` pattern naming one of `classes`."""
    hits = []
    for where, tree in trees:
        for node in ast.walk(tree):
            named: list[ast.expr] = []
            if isinstance(node, ast.Call) and _name(node.func) == "isinstance" and len(node.args) == 2:
                named = [n for n in ast.walk(node.args[1]) if isinstance(n, ast.Name | ast.Attribute)]
            elif isinstance(node, ast.MatchClass):
                named = [node.cls]
            line = getattr(node, "lineno", 0)
            hits += [f"{where}:{line} {n}" for n in map(_name, named) if n in classes]
    return hits


def gate_reads(trees: list[tuple[str, ast.Module]]) -> list[str]:
    """`file:line` of each `getattr(…, "gate"…)`."""
    return [
        f"{where}:{node.lineno}"
        for where, tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and _name(node.func) == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value == "gate"
    ]


TREES = list(_trees(PACKAGE))
OP_CLASSES = op_classes(TREES)


def test_the_reader_sees_every_op_class() -> None:
    registered = {cls.__name__ for cls in registered_ops().values()}
    assert registered <= OP_CLASSES
    # indirect subclasses, and an intermediate base without a kind of its own would be found too
    assert {"LastCatchUp", "CloseColumn", "MarkDeprecated", "StampContract"} <= OP_CLASSES


def test_no_op_class_is_tested_outside_the_op_tables() -> None:
    outside = [(where, tree) for where, tree in TREES if where not in OP_TABLES]
    assert class_tests(outside, OP_CLASSES) == []
    assert gate_reads(TREES) == []


def test_the_checker_finds_each_form_of_class_test(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(
        "class Op: ...\nclass Base(Op): ...\nclass Leaf(Base): ...\nclass Other: ...\n", encoding="utf-8"
    )
    (tmp_path / "user.py").write_text(
        "from x import ops\n"
        "def f(op, other):\n"
        "    isinstance(op, Leaf)\n"
        "    isinstance(op, (Other, ops.Base))\n"
        "    isinstance(op, Other | Leaf)\n"
        "    isinstance(other, Other)\n"
        "    getattr(op, 'gate', None)\n"
        "    match op:\n"
        "        case Leaf():\n"
        "            pass\n",
        encoding="utf-8",
    )
    trees = list(_trees(tmp_path))
    assert op_classes(trees) == {"Base", "Leaf"}
    assert class_tests(trees, op_classes(trees)) == [
        "user.py:3 Leaf",
        "user.py:4 Base",
        "user.py:5 Leaf",
        "user.py:9 Leaf",
    ]
    assert gate_reads(trees) == ["user.py:7"]


def test_a_discard_undoes_only_expand_and_populate_work_and_never_a_stamp() -> None:
    create = CreateTable(table=NEW, phase=Phase.EXPAND, columns=(ColumnSpec("id", "bigint"),))
    copy = CopyRows(table=NEW, phase=Phase.POPULATE, source=T, mapping=(("id", "`id`"),))
    stamp = StampContract(table=NEW, phase=Phase.EXPAND, properties=(("delta_contracts.version", "2.0.0"),))
    drop = DropColumns(table=T, phase=Phase.CONTRACT, columns=("note",), gate=GATE)
    backfill = Backfill(table=T, phase=Phase.CUTOVER, column="id", expression="1")
    assert create.undone_by_discard() and copy.undone_by_discard()
    assert not stamp.undone_by_discard()
    assert not drop.undone_by_discard() and not backfill.undone_by_discard()


def test_only_a_create_has_a_reverse_and_it_drops_what_it_created() -> None:
    create = CreateTable(table=NEW, phase=Phase.EXPAND, columns=(ColumnSpec("id", "bigint"),))
    reverse = create.reverse("discard 0002")
    assert isinstance(reverse, DropTable)
    assert (reverse.table, reverse.reason) == (NEW, "discard 0002")
    assert render(reverse) == "DROP TABLE IF EXISTS `main`.`sales`.`orders__v2`"
    assert create.creates() == (ColumnSpec("id", "bigint"),)
    view = CreateView(table=T, phase=Phase.CUTOVER, source=NEW)
    assert view.creates() is None and view.reverse("x") is None  # a view is no table a discard drops
    assert AddColumn(table=NEW, phase=Phase.EXPAND, column=ColumnSpec("n", "int")).reverse("x") is None


def test_only_a_mark_op_starts_a_gates_window() -> None:
    mark = MarkDeprecated.of(T, columns=("note",), newly=("note",), window="P30D", since="2.0.0", reason="")
    assert mark.marks(column_mark_key("note")) and mark.marks(DEPRECATED_COLUMNS)
    assert not mark.marks(column_mark_key("other"))
    # Setting the same list again (a drop's unlisting, a hand-set property op) restarts no window.
    unlist = UnlistDeprecated(
        table=T, phase=Phase.CONTRACT, column="note", properties=((DEPRECATED_COLUMNS, "[]"),)
    )
    props = SetProperties(table=T, phase=Phase.EXPAND, properties=((column_mark_key("note"), "{}"),))
    assert not unlist.marks(DEPRECATED_COLUMNS) and not props.marks(column_mark_key("note"))


def test_what_a_fill_and_a_tightening_answer_makes_the_held_run() -> None:
    fill = Backfill(table=T, phase=Phase.CUTOVER, column="Total", expression="`amount`")
    check = AddCheck(table=T, phase=Phase.CUTOVER, name="c", expression="total > 0 AND amount > 0")
    not_null = SetNotNull(table=T, phase=Phase.CUTOVER, column="other")
    stamp = StampContract(table=T, phase=Phase.CUTOVER, properties=(("delta_contracts.version", "2.0.0"),))
    assert fill.fills() == "Total" and check.fills() is None
    assert check.tightening_reads() == {"total", "amount"}
    assert not_null.tightening_reads() == {"other"} and fill.tightening_reads() is None
    closing = CloseColumn(table=T, phase=Phase.CONTRACT, name="c2", expression="old IS NULL", gate=GATE)
    assert closing.tightening_reads() == {"old"}  # a CHECK, as any other
    last = LastCatchUp(table=T, phase=Phase.CONTRACT, column="total", expression="`old`", gate=GATE)
    assert last.fills() == "total"
    # the fill's column is read (case aside) by a tightening after it: held from the fill through the stamp
    assert held_runs((fill, not_null, check, stamp)) == {1: 4}
    assert held_runs((fill, not_null, stamp)) == {}
    assert held_runs((fill, stamp, check)) == {}  # the stamp is no tightening: the run of them ended


def test_only_row_copies_copy_from_a_table() -> None:
    copy = CopyRows(table=NEW, phase=Phase.POPULATE, source=T, mapping=(("id", "`id`"),))
    catch_up = CatchUpRows(table=NEW, phase=Phase.CUTOVER, source=T, mapping=copy.mapping, key=("id",))
    assert copy.copies_from() == T and catch_up.copies_from() == T
    assert CreateView(table=T, phase=Phase.CUTOVER, source=NEW).copies_from() is None


def test_session_settings_keep_the_checks_standing_only_where_asked() -> None:
    kept = ((CHECK_DEPENDENT_EXPRESSIONS, "false", "true"),)
    widen = WidenType(table=T, phase=Phase.EXPAND, column="n", from_type="int", to_type="bigint")
    assert widen.session_settings() == ()
    assert replace(widen, checks_kept=("c",)).session_settings() == kept
    field = WidenField(table=T, phase=Phase.EXPAND, path=("a", "n"), from_type="int", to_type="bigint")
    assert field.session_settings() == ()
    assert replace(field, checks_kept=("c",)).session_settings() == kept
    drop = DropColumns(table=T, phase=Phase.CONTRACT, columns=("old",), gate=GATE)
    assert drop.session_settings() == ()
    assert replace(drop, closed_by=("c2",)).session_settings() == kept


def test_file_guards_a_copy_a_fence_and_a_table_drop() -> None:
    copy = CopyRows(table=NEW, phase=Phase.POPULATE, source=T, mapping=(("id", "`id`"),))
    fence = CatchUpRows(
        table=NEW,
        phase=Phase.CUTOVER,
        source=TableId(("main", "sales", "orders__v1")),
        mapping=copy.mapping,
        key=(),
        strategy=CatchUpStrategy.INSERT_MISSING,
    )
    alias = TableId(("main", "sales", "orders_alias"))
    guards = [statement for _, statement in copy.file_guards(alias)]
    assert guards[0] == "DESCRIBE DETAIL `main`.`sales`.`orders`"
    assert "ASSERT_TRUE(NOT EXISTS(SELECT INPUT_FILE_NAME() FROM `main`.`sales`.`orders_alias`" in guards[1]
    assert len(guards) == 2
    assert len(copy.file_guards(T)) == 1  # the source is the alias itself: nothing else reads it
    assert [s for _, s in fence.file_guards(alias)] == ["DESCRIBE DETAIL `main`.`sales`.`orders__v1`"]
    drop = DropTable(table=T, phase=Phase.CONTRACT, gate=GATE)
    assert [s for _, s in drop.file_guards(alias)] == ["DESCRIBE DETAIL `main`.`sales`.`orders`"]
    assert AddColumn(table=T, phase=Phase.EXPAND, column=ColumnSpec("n", "int")).file_guards(alias) == ()


def test_which_ops_change_the_columns_a_stream_or_a_view_froze() -> None:
    ops = registered_ops()
    assert {k for k, c in ops.items() if c.changes_columns} == {"add_column", "widen_type", "drop_columns"}
    assert {k for k, c in ops.items() if c.changes_fields} == {
        "add_field",
        "widen_field",
        "rename_field",
        "drop_field",
    }


def test_the_schedule_hands_its_gate_check_the_op_in_flight() -> None:
    old, new = pair("rename_column")
    _, state = plan(None, old, Target.DELTA_4)
    migration, _ = plan(old, new, Target.DELTA_4, state=state)
    paths = Path("0002_rename.sql"), Path("0002_rename.json")
    stored = StoredMigration("0002_rename", migration, new, state, Target.DELTA_4, *paths)
    asked: list[OpInFlight] = []

    def shut(flight: OpInFlight) -> tuple[str, ...]:
        asked.append(flight)
        return (f"shut for {flight.name}",)

    decisions = list(Schedule(new.id, set(Phase), None, shut).decisions(stored, done=set()))
    ops = migration.ops
    assert [(f.index, f.op) for f, _ in decisions] == list(enumerate(ops, start=1))
    gated = [i for i, op in enumerate(ops, start=1) if op.phase is Phase.CONTRACT and op.gated_by()]
    assert gated  # the last catch-up, the closing CHECK and the drop of the old column
    first = gated[0]
    # the first gated op is held at its gate; each destructive op after it, waiting, says its own gate's state
    later_drops = [i for i in range(first + 1, len(ops) + 1) if ops[i - 1].destructive]
    assert later_drops
    expected = [(new.id, stored, i) for i in (first, *later_drops)]
    assert [(f.contract, f.stored, f.index) for f in asked] == expected
    verdict = {f.index: d for f, d in decisions}
    assert verdict[first].verdict is Verdict.HELD
    assert verdict[first].reasons == (f"shut for 0002_rename op {first}",)
    after = [verdict[i] for i in range(first + 1, len(ops) + 1)]
    assert all(d.verdict is not Verdict.RUN for d in after)
    assert all(v.verdict is Verdict.RUN for i, v in verdict.items() if ops[i - 1].phase is not Phase.CONTRACT)
