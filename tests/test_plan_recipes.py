"""What each recipe of DESIGN.md plans: the ops, their phases, and the target differences."""

from __future__ import annotations

import pytest

from delta_contracts.plan.fields import DropField
from delta_contracts.plan.ops import (
    AddCheck,
    AddColumn,
    Backfill,
    CloseColumn,
    CopyRows,
    CreateTable,
    CreateView,
    DropCheck,
    DropColumns,
    DropNotNull,
    DropTable,
    LastCatchUp,
    MarkDeprecated,
    Op,
    Phase,
    RenameTable,
    SetColumnComment,
    SetColumnDefault,
    SetNotNull,
    SetProperties,
    StampContract,
    UnlistDeprecated,
    WidenType,
)
from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.plan.render import render
from delta_contracts.sql import expressions as x
from delta_contracts.target import Target
from tests.recipes import base_contract, pair

T = ("payments", "transactions")


# A rewritten rule's swap: the new form under a bridge name, the old dropped, the new added, the bridge
# dropped.
SWAP = ["add_check", "drop_check", "add_check", "drop_check"]


def ops_of(recipe: str, target: Target = Target.DELTA_4, versioning: str = "in_place") -> list[Op]:
    old, new = pair(recipe, versioning)
    migration, _ = plan(old, new, target)
    return list(migration.ops)


def kinds(ops: list[Op], phase: Phase) -> list[str]:
    return [op.kind for op in ops if op.phase is phase]


def test_create_in_place_makes_table_checks_and_stamp() -> None:
    migration, state = plan(None, base_contract(), Target.DELTA_4)
    assert state.physical == T
    assert isinstance(migration.ops[0], CreateTable)
    names = [op.name for op in migration.ops if isinstance(op, AddCheck)]
    assert names == [
        "txn_amt_paise_min",
        "attempts_min",
        "attempts_max",
        "status_enum",
        "amount_positive_when_ok",
    ]
    assert isinstance(migration.ops[-1], StampContract)
    create_sql = render(migration.ops[0])
    assert "`txn_id` STRING NOT NULL COMMENT 'Gateway id.'" in create_sql
    assert "PARTITIONED BY (`txn_date`)" in create_sql


def test_create_versioned_makes_a_major_numbered_table_behind_view() -> None:
    migration, state = plan(None, base_contract("versioned"), Target.DELTA_4)
    assert state.physical == ("payments", "transactions__v2")
    views = [op for op in migration.ops if isinstance(op, CreateView)]
    assert [(v.table, v.source) for v in views] == [(T, ("payments", "transactions__v2"))]


def test_null_safe_checks_on_nullable_columns_only() -> None:
    migration, _ = plan(None, base_contract(), Target.DELTA_4)
    exprs = {op.name: op.expression for op in migration.ops if isinstance(op, AddCheck)}
    assert exprs["attempts_min"] == "`attempts` IS NULL OR `attempts` >= 0"
    assert exprs["txn_amt_paise_min"] == "`txn_amt_paise` >= 1"


def test_add_nullable_column_is_one_expand_op() -> None:
    ops = ops_of("add_nullable_column")
    assert kinds(ops, Phase.EXPAND) == ["add_column"]
    assert kinds(ops, Phase.POPULATE) == []
    assert kinds(ops, Phase.CONTRACT) == []
    assert render(ops[0]) == (
        "ALTER TABLE `payments`.`transactions` ADD COLUMNS (`note` STRING COMMENT 'Free text.' "
        "AFTER `legacy_channel`)"
    )


@pytest.mark.parametrize(
    ("target", "tighten"),
    [(Target.DELTA_3, "add_check"), (Target.DELTA_4, "add_check"), (Target.DATABRICKS, "set_not_null")],
)
def test_add_not_null_with_default(target: Target, tighten: str) -> None:
    ops = ops_of("add_not_null_with_default", target)
    assert kinds(ops, Phase.EXPAND) == ["set_properties", "add_column", "set_column_default"]
    features = next(op for op in ops if isinstance(op, SetProperties))
    assert ("delta.feature.allowColumnDefaults", "supported") in features.properties
    fills = [op for op in ops if isinstance(op, Backfill)]
    assert [f.phase for f in fills] == [Phase.POPULATE, Phase.CUTOVER]
    assert {f.expression for f in fills} == {"'web'"}
    # the catch-up fill runs right before the NOT NULL check (DataFrame appends do not apply defaults)
    assert kinds(ops, Phase.CUTOVER) == ["backfill", tighten, "stamp_contract"]
    if tighten == "add_check":
        check = next(op for op in ops if isinstance(op, AddCheck))
        assert check.name == "channel_not_null" and check.expression == "NOT `channel` IS NULL"


def test_add_not_null_without_default_fills_from_the_contract() -> None:
    old, new = pair("add_not_null_without_default")
    migration, _ = plan(old, new, Target.DELTA_4)
    fills = [op for op in migration.ops if isinstance(op, Backfill)]
    assert [(f.phase, f.expression) for f in fills] == [
        (Phase.POPULATE, "'unknown'"),
        (Phase.CUTOVER, "'unknown'"),
    ]
    check = next(op for op in migration.ops if isinstance(op, AddCheck))
    assert check.precondition().predicate == "NOT COALESCE((NOT `region` IS NULL), FALSE)"  # type: ignore[union-attr]


@pytest.mark.parametrize("versioning", ["in_place", "versioned"])
def test_add_not_null_without_default_or_fill_is_refused(versioning: str) -> None:
    old, new = pair("add_not_null_without_default", versioning)
    columns = tuple(c.model_copy(update={"fill": None}) for c in new.columns)
    with pytest.raises(PlanError, match=r"region.*fill"):
        plan(old, new.model_copy(update={"columns": columns}), Target.DELTA_4)


def test_rename_is_add_populate_deprecate_drop() -> None:
    ops = ops_of("rename_column")
    expand = [op for op in ops if op.phase is Phase.EXPAND]
    assert isinstance(expand[0], SetProperties)
    assert ("delta.columnMapping.mode", "name") in expand[0].properties
    assert not any(isinstance(op, DropCheck) for op in expand)  # old rules keep guarding until cutover
    assert any(isinstance(op, AddColumn) and op.column.name == "amount_paise" for op in expand)
    fills = [op for op in ops if isinstance(op, Backfill)]
    # populate, the cutover's catch-up, and the contract phase's last catch-up right before the drop
    assert [f.phase for f in fills] == [Phase.POPULATE, Phase.CUTOVER, Phase.CONTRACT]
    assert {f.expression for f in fills} == {"`txn_amt_paise`"}
    cutover = [op for op in ops if op.phase is Phase.CUTOVER]
    # Every rule over the renamed column reads both shapes of a row until the contract phase: an old
    # producer sets only txn_amt_paise, and its row is held to the rule it was held to before.
    both = {op.name: op.expression for op in cutover if isinstance(op, AddCheck)}
    assert both == {
        "dc_amount_paise_not_null_both": "NOT (COALESCE(`amount_paise`, `txn_amt_paise`)) IS NULL",
        "dc_amount_paise_min_both": "(COALESCE(`amount_paise`, `txn_amt_paise`)) >= 1",
        "dc_amount_positive_when_ok_both": (
            "`status` <> 'OK' OR (COALESCE(`amount_paise`, `txn_amt_paise`)) > 0"
        ),
    }
    mark = next(op for op in cutover if isinstance(op, MarkDeprecated))
    assert dict(mark.properties)["delta_contracts.deprecated.columns"] == '["txn_amt_paise"]'
    # then the old rules go, each after the bridge that stands for it, so producers may stop writing the
    # old column; before the stamp
    relaxed = [(op.kind, getattr(op, "name", getattr(op, "column", ""))) for op in cutover[-5:-1]]
    assert relaxed == [
        ("drop_check", "txn_amt_paise_min"),
        ("drop_check", "amount_positive_when_ok"),
        ("drop_check", "txn_amt_paise_not_null"),
        ("drop_not_null", "txn_amt_paise"),
    ]
    assert max(i for i, op in enumerate(cutover) if isinstance(op, AddCheck)) < len(cutover) - 5
    contract = [op for op in ops if op.phase is Phase.CONTRACT]
    # the final forms between the CHECK that closes the old column and its drop, each before its bridge goes
    assert [(op.kind, getattr(op, "name", "")) for op in contract[:8]] == [
        ("last_catch_up", ""),
        ("close_column", "dc_txn_amt_paise_closed"),
        ("add_check", "amount_paise_not_null"),
        ("drop_check", "dc_amount_paise_not_null_both"),
        ("add_check", "amount_paise_min"),
        ("drop_check", "dc_amount_paise_min_both"),
        ("add_check", "amount_positive_when_ok"),
        ("drop_check", "dc_amount_positive_when_ok_both"),
    ]
    contract = contract[:2] + contract[8:]
    assert [op.kind for op in contract] == [
        "last_catch_up",
        "close_column",
        "drop_columns",
        "drop_check",
        "unlist_deprecated",
        "purge_dropped_columns",
    ]
    last, close, drop, unclose, unlist, purge = contract
    assert purge.table == drop.table and getattr(purge, "columns", ()) == ("txn_amt_paise",)
    # the deprecation list names only columns still there (issue 37)
    assert isinstance(unlist, UnlistDeprecated) and unlist.column == "txn_amt_paise"
    assert unlist.properties == (("delta_contracts.deprecated.columns", "[]"),)
    assert isinstance(drop, DropColumns) and drop.columns == ("txn_amt_paise",)
    assert drop.gate.objects == ("payments.transactions.txn_amt_paise",)
    assert drop.gate.deprecation_window == "P30D"
    # the last catch-up waits for the drop's gate, so it runs in the same run as the drop
    assert isinstance(last, LastCatchUp) and last.gate == drop.gate and last.column == "amount_paise"
    # and the drop refuses rows whose value is still only in the old column
    assert drop.copies == (("amount_paise", "`txn_amt_paise`"),)
    # and, between the two, a CHECK closes the old column to values the new one lacks (Delta checks every
    # row as it adds it and every commit after), under the same gate; the drop runs while it stands (no
    # commit can land between its check and the drop), and the CHECK is dropped right after
    assert isinstance(close, CloseColumn) and close.gate == drop.gate
    assert close.expression == "NOT `amount_paise` IS NULL OR (`txn_amt_paise`) IS NULL"
    assert drop.closed_by == (close.name,)
    assert isinstance(unclose, DropCheck) and unclose.name == close.name


def test_drop_only_in_contract_phase_with_gate() -> None:
    ops = ops_of("drop_column")
    destructive = [op for op in ops if op.destructive]
    assert destructive and all(op.phase is Phase.CONTRACT for op in destructive)
    assert any(isinstance(op, MarkDeprecated) and op.phase is Phase.CUTOVER for op in ops)


@pytest.mark.parametrize("target", list(Target))
def test_destructive_ops_never_outside_contract_phase(target: Target) -> None:
    from tests.recipes import RECIPES

    for recipe in RECIPES:
        for versioning in ("in_place", "versioned"):
            old, new = pair(recipe, versioning)
            try:
                migration, _ = plan(old, new, target)
            except PlanError:
                continue
            for op in migration.ops:
                if op.destructive:
                    assert op.phase is Phase.CONTRACT, (recipe, op)
                    assert isinstance(op, DropColumns | DropTable | DropField)


def test_widen_in_place_on_delta4_but_versioned_on_delta3() -> None:
    old, new = pair("widen_type")
    m4, _ = plan(old, new, Target.DELTA_4)
    assert m4.strategy == "in_place"
    widen = next(op for op in m4.ops if isinstance(op, WidenType))
    assert render(widen) == "ALTER TABLE `payments`.`transactions` ALTER COLUMN `attempts` TYPE BIGINT"
    # the CHECKs reading the column stand through the retype: never dropped, never re-added
    assert not [op for op in m4.ops if isinstance(op, DropCheck | AddCheck)]
    assert widen.checks_kept == ("attempts_min", "attempts_max")
    with pytest.raises(PlanError, match=r"DC-MF107 column attempts type changed: int -> bigint"):
        plan(old, new, Target.DELTA_3)


def test_small_widening_in_place_everywhere() -> None:
    old, new = pair("widen_small_type")
    for target in Target:
        migration, _ = plan(old, new, target)
        assert migration.strategy == "in_place"


def test_narrowing_switches_to_versioned_and_says_why() -> None:
    old, new = pair("narrow_type")
    migration, state = plan(old, new, Target.DELTA_4)
    assert migration.strategy == "versioned"
    assert state.physical == ("payments", "transactions__v3")
    assert any("not a type widening" in n for n in migration.notes)
    copy = next(op for op in migration.ops if isinstance(op, CopyRows) and op.phase is Phase.POPULATE)
    # the conversion, made never to wrap (ANSI off) nor to fail on an overflow of its own (ANSI on): a value
    # it would lose fails the copy by name instead
    converted = dict(copy.mapping)["txn_amt_paise"]
    assert x.never_raising(converted) == "TRY_CAST(`txn_amt_paise` AS INT)"
    assert (
        "RAISE_ERROR('payments.transactions: column txn_amt_paise: the conversion to int loses" in converted
    )
    rename = next(op for op in migration.ops if isinstance(op, RenameTable))
    assert rename.new_name == ("payments", "transactions__v2")
    drop = next(op for op in migration.ops if isinstance(op, DropTable))
    assert drop.table == ("payments", "transactions__v2") and drop.phase is Phase.CONTRACT
    compat = [op for op in migration.ops if isinstance(op, CreateView) and op.phase is Phase.CONTRACT]
    assert compat and ("txn_amt_paise", "CAST(`txn_amt_paise` AS BIGINT)") in compat[0].columns


def test_versioned_contract_alters_view_on_databricks() -> None:
    old, new = pair("narrow_type", "versioned")
    dbx, _ = plan(old, new, Target.DATABRICKS)
    oss, _ = plan(old, new, Target.DELTA_4)
    swap_dbx = next(op for op in dbx.ops if isinstance(op, CreateView) and op.phase is Phase.CUTOVER)
    swap_oss = next(op for op in oss.ops if isinstance(op, CreateView) and op.phase is Phase.CUTOVER)
    assert render(swap_dbx).startswith("ALTER VIEW `payments`.`transactions` AS SELECT")
    assert render(swap_oss).startswith("CREATE OR REPLACE VIEW `payments`.`transactions` AS SELECT")
    assert not any(isinstance(op, RenameTable) for op in dbx.ops)  # it already was versioned


def test_versioned_change_needs_major_bump() -> None:
    old, new = pair("change_partitioning")
    bad = new.model_copy(update={"version": "2.5.0"})
    with pytest.raises(PlanError, match="is a minor bump; the changes require major; DC-TB401"):
        plan(old, bad, Target.DELTA_4)


def test_removed_column_leaves_no_compat_view() -> None:
    old, new = pair("drop_column", "versioned")
    migration, _ = plan(old, new, Target.DELTA_4)  # versioned + major bump: a new table
    assert migration.strategy == "versioned"
    assert not [op for op in migration.ops if isinstance(op, CreateView) and op.phase is Phase.CONTRACT]


@pytest.mark.parametrize(
    ("target", "kinds_expected"),
    [
        # The enum rule loses its `IS NULL OR` guard once the column is NOT NULL, so it is swapped too:
        # the new form under a bridge name first, never absent (`plan.in_place_rules.swap`).
        (Target.DELTA_4, ["add_check", *SWAP, "stamp_contract"]),
        (Target.DATABRICKS, ["set_not_null", *SWAP, "stamp_contract"]),
    ],
)
def test_make_not_null(target: Target, kinds_expected: list[str]) -> None:
    ops = ops_of("make_not_null", target)
    assert kinds(ops, Phase.CUTOVER) == kinds_expected
    tighten = next(op for op in ops if op.phase is Phase.CUTOVER and op.kind == kinds_expected[0])
    assert "`status` IS NULL" in tighten.precondition().predicate  # type: ignore[union-attr]
    enum = [op for op in ops if isinstance(op, AddCheck) and "status_enum" in op.name]
    assert [(op.name, op.expression) for op in enum] == [
        ("dc_status_enum_next", "`status` IN ('OK', 'FAILED')"),
        ("status_enum", "`status` IN ('OK', 'FAILED')"),
    ]


def test_make_nullable_drops_both_forms_of_not_null() -> None:
    ops = ops_of("make_nullable")
    expand = [op for op in ops if op.phase is Phase.EXPAND]
    assert any(isinstance(op, DropCheck) and op.name == "txn_id_not_null" for op in expand)
    assert any(isinstance(op, DropNotNull) and op.column == "txn_id" for op in expand)


def test_tighten_check_swaps_rule_in_cutover() -> None:
    ops = ops_of("tighten_check")
    cutover = [op for op in ops if op.phase is Phase.CUTOVER]
    assert [op.kind for op in cutover] == [*SWAP, "stamp_contract"]
    names = [getattr(op, "name", "") for op in cutover[:4]]
    assert names == ["dc_attempts_min_next", "attempts_min", "attempts_min", "dc_attempts_min_next"]
    assert cutover[0].expression == "`attempts` IS NULL OR `attempts` >= 1"  # type: ignore[attr-defined]
    assert cutover[2].expression == "`attempts` IS NULL OR `attempts` >= 1"  # type: ignore[attr-defined]


def test_loosen_check_drops_rule_in_expand() -> None:
    ops = ops_of("loosen_check")
    assert [(op.kind, op.name) for op in ops if isinstance(op, DropCheck)] == [("drop_check", "attempts_max")]
    assert ops[0].phase is Phase.EXPAND


def test_enum_value_added_rewrites_the_rule() -> None:
    ops = ops_of("add_enum_value")
    added = next(op for op in ops if isinstance(op, AddCheck))
    assert added.expression == "`status` IS NULL OR `status` IN ('OK', 'FAILED', 'PENDING')"


def test_comment_change_is_metadata_only() -> None:
    ops = ops_of("change_comment")
    assert [op.kind for op in ops] == ["set_column_comment", "stamp_contract"]
    assert isinstance(ops[0], SetColumnComment)


def test_default_change_enables_feature_then_sets_default() -> None:
    ops = ops_of("change_default")
    assert [op.kind for op in ops] == ["set_properties", "set_column_default", "stamp_contract"]
    assert isinstance(ops[1], SetColumnDefault) and ops[1].default == "'OK'"


def test_every_migration_ends_with_a_stamp_before_contract() -> None:
    from tests.recipes import RECIPES

    for recipe in RECIPES:
        old, new = pair(recipe)
        try:
            migration, _ = plan(old, new, Target.DELTA_4)
        except PlanError:
            continue
        cutover = migration.phase(Phase.CUTOVER)
        stamps = [i for i, op in enumerate(cutover) if isinstance(op, StampContract)]
        assert len(stamps) == 1, recipe
        stamp = cutover[stamps[0]]
        assert isinstance(stamp, StampContract)
        assert dict(stamp.properties)["delta_contracts.version"] == new.version
        # In place the stamp comes last. A versioned cutover stamps the new table once it caught up and the
        # alias view reads it, so that producers switch only when no cell before can run again and delete
        # their rows; then it closes the old table to them and fences (docs/migrations.md).
        after = [op.kind for op in cutover[stamps[0] + 1 :]]
        if migration.strategy == "in_place":
            assert after == [], recipe
        else:
            # After the fence only what the fence's rows need: identities synced above them, the clustering
            # keys an INSERT OVERWRITE reset declared again.
            tail = [k for k in after if k not in ("sync_identity", "set_clustering")]
            assert tail == ["mark_deprecated", "catch_up_rows"], recipe
            assert after[: len(tail)] == tail, recipe
            before = [op.kind for op in cutover[: stamps[0]]]
            assert before[-1] == "create_view", recipe  # the alias view reads the new table first
            assert "rename_table" not in after, recipe


def test_planning_is_deterministic() -> None:
    from tests.recipes import RECIPES

    for recipe in RECIPES:
        old, new = pair(recipe)
        try:
            first = plan(old, new, Target.DELTA_4)
        except PlanError:
            continue
        assert plan(old, new, Target.DELTA_4) == first


def test_set_not_null_only_where_supported() -> None:
    for target in (Target.DELTA_3, Target.DELTA_4):
        for recipe in ("make_not_null", "add_not_null_with_default", "rename_column"):
            assert not any(isinstance(op, SetNotNull) for op in ops_of(recipe, target))


def test_delta3_states_its_minimum_and_the_feature_widening_adds() -> None:
    """Delta 3.2 brought ALTER TABLE … CLUSTER BY (DeltaSqlBase.g4) and type widening; on Delta 3.2/3.3
    `delta.enableTypeWidening` adds the `typeWidening-preview` feature (TableFeature.scala of v3.3.2), on
    Delta 4 the stable `typeWidening` one (v4.0.0). Executed: tests/engine/delta3_run.py reads the feature
    off a table widened on Delta 3.3."""
    assert "Delta 3.2 or later" in (Target.__doc__ or "")
    old, new = pair("widen_small_type")
    on_delta3, _ = plan(old, new, Target.DELTA_3)
    widening = [w for w in on_delta3.warnings if "type widening" in w]
    assert widening == [
        "payments.transactions: type widening needs Delta 3.2+ on the delta-3 target and adds the "
        "typeWidening-preview table feature: readers need Delta 3.2+ (Delta 4 reads it too)"
    ]
    on_delta4, _ = plan(old, new, Target.DELTA_4)
    assert [w for w in on_delta4.warnings if "type widening" in w] == [
        "payments.transactions: type widening adds the typeWidening table feature: readers need Delta 3.3+ "
        "(or DBR 15.4+)"
    ]
    old, new = pair("change_clustering")
    clustering = [w for w in plan(old, new, Target.DELTA_3)[0].warnings if "CLUSTER BY" in w]
    assert clustering == [
        "payments.transactions: ALTER TABLE … CLUSTER BY needs Delta 3.2+ and OPTIMIZE … FULL 3.3+ on the "
        "delta-3 target"
    ]
    assert not [w for w in plan(old, new, Target.DELTA_4)[0].warnings if "CLUSTER BY" in w]
