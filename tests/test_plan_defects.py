"""The planner defects of issues 8 and 13, each pinned by what the plan must (not) contain.

Their execution on real Delta is in tests/engine/test_recipes_executed.py; these pure checks say which op
carries each fix.
"""

from __future__ import annotations

import json

import pytest

from delta_contracts.contract.model import Contract
from delta_contracts.diff.compare import diff
from delta_contracts.diff.policy import refusals, verdict
from delta_contracts.live import LiveColumn, LiveTable
from delta_contracts.plan.building import FeatureLossError
from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy, change_feed_start, duplicated_key
from delta_contracts.plan.conditions import AllOf, NoRowsWhere, holds
from delta_contracts.plan.ops import CopyRows, CreateView, DropCheck, Phase, StampContract
from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.plan.render import render
from delta_contracts.plan.serialize import op_from_data, op_to_data
from delta_contracts.plan.sqlfile import comment_text, render_sql_file
from delta_contracts.sql import expressions as x
from delta_contracts.target import Target
from tests.recipes import base_contract, pair

T = ("payments", "transactions")


def live(properties: dict[str, str], **extra: object) -> LiveTable:
    return LiveTable(
        name="payments.transactions",
        location="/tmp/t",
        columns=(LiveColumn("txn_id", "string", False),),
        properties=properties,
        **extra,  # type: ignore[arg-type]
    )


def test_alias_view_lists_the_contract_columns() -> None:
    migration, _ = plan(None, base_contract("versioned"), Target.DELTA_4)
    (view,) = [op for op in migration.ops if isinstance(op, CreateView)]
    assert [name for name, _ in view.columns] == [c.name for c in base_contract().columns]


def test_in_place_change_of_a_versioned_table_re_creates_the_alias_view_in_expand() -> None:
    old, new = pair("add_nullable_column", "versioned")
    migration, _ = plan(old, new, Target.DELTA_4)
    views = [op for op in migration.ops if isinstance(op, CreateView)]
    assert [(v.phase, v.source) for v in views] == [(Phase.EXPAND, (*T[:-1], "transactions__v2"))]
    assert "note" in dict(views[0].columns)


def test_versioned_copy_checks_the_rows_it_copies() -> None:
    old, new = pair("narrow_type", "versioned")
    migration, _ = plan(old, new, Target.DELTA_4)
    assert migration.strategy == "versioned"
    copy = next(op for op in migration.ops if isinstance(op, CopyRows))
    pre = copy.precondition()
    assert isinstance(pre, AllOf)
    (rows,) = [c for c in pre.conditions if isinstance(c, NoRowsWhere)]
    assert rows.table == copy.source == ("payments", "transactions__v2")  # not the still empty __v3
    assert "(`attempts`) <= 10" in rows.predicate  # every rule of the new table, over the old rows


def test_narrowing_needs_an_explicit_conversion() -> None:
    old, new = pair("narrow_type", "versioned")
    columns = tuple(c.model_copy(update={"convert": None}) for c in new.columns)
    lost = r"txn_amt_paise type changed: bigint -> int: a CAST to int can lose values.*convert"
    with pytest.raises(PlanError, match=lost):
        plan(old, new.model_copy(update={"columns": columns}), Target.DELTA_4)


def test_conversion_is_checked_whatever_the_ansi_mode_and_round_tripped() -> None:
    old, new = pair("narrow_type")
    migration, _ = plan(old, new, Target.DELTA_4)
    copy = next(op for op in migration.ops if isinstance(op, CopyRows))
    converted = dict(copy.mapping)["txn_amt_paise"]
    assert converted.startswith("CASE WHEN (NOT `txn_amt_paise` IS NULL) AND TRY_CAST(`txn_amt_paise` AS")
    assert "RAISE_ERROR(" in converted and " CAST(`txn" not in converted  # never wraps: fails by name
    assert copy.rejects is not None and "RAISE_ERROR" not in copy.rejects  # the pre-check counts, not fails
    assert "TRY_CAST(`txn_amt_paise` AS INT)" in copy.rejects and " CAST(`txn" not in copy.rejects
    assert "IS NOT DISTINCT FROM `txn_amt_paise`" in copy.rejects  # the inverse gives the value back
    compat = next(op for op in migration.ops if isinstance(op, CreateView) and op.phase is Phase.CONTRACT)
    assert dict(compat.columns)["txn_amt_paise"] == "CAST(`txn_amt_paise` AS BIGINT)"


def test_no_compatibility_view_without_an_inverse() -> None:
    old, new = pair("narrow_type")
    columns = tuple(
        c.model_copy(update={"convert": c.convert.model_copy(update={"inverse": None})}) if c.convert else c
        for c in new.columns
    )
    migration, _ = plan(old, new.model_copy(update={"columns": columns}), Target.DELTA_4)
    assert not [op for op in migration.ops if isinstance(op, CreateView) and op.phase is Phase.CONTRACT]
    assert any("gets no compatibility view" in n for n in migration.notes)


def test_swapped_check_stays_done_once_the_new_rule_is_in() -> None:
    old, new = pair("tighten_check")
    migration, _ = plan(old, new, Target.DELTA_4)
    swap = next(op for op in migration.ops if isinstance(op, DropCheck) and op.replaced_by)
    table = live({}, checks={swap.name: swap.replaced_by})
    assert holds(swap.postcondition(), {T: table}, {})


def test_a_stamp_never_moves_backwards() -> None:
    migration, _ = plan(None, base_contract(), Target.DELTA_4)
    stamp = next(op for op in migration.ops if isinstance(op, StampContract))
    later = live({"delta_contracts.version": "10.0.0", "delta_contracts.id": "payments.transactions"})
    assert holds(stamp.postcondition(), {T: later}, {})  # skipped: the table is further already
    earlier = live({"delta_contracts.version": "2.3.9"})
    assert not holds(stamp.postcondition(), {T: earlier}, {})


def test_feature_properties_are_read_from_the_protocol() -> None:
    old, new = pair("change_default")
    migration, _ = plan(old, new, Target.DELTA_4)
    enable = next(op for op in migration.ops if op.kind == "set_properties")
    on = live({}, writer_features=("appendOnly", "allowColumnDefaults"))
    assert holds(enable.postcondition(), {T: on}, {})


def test_plan_refuses_what_diff_refuses_in_the_same_words() -> None:
    old, new = pair("tighten_check")
    minor = new.model_copy(update={"version": "2.5.0"})
    words = refusals(verdict(old, minor, diff(old, minor, Target.DELTA_4)), old.version, minor.version)
    assert words
    with pytest.raises(PlanError) as err:
        plan(old, minor, Target.DELTA_4)
    assert str(err.value) == "payments.transactions: " + "; ".join(words)


def test_switching_to_versioned_is_major_for_diff_and_plan() -> None:
    old = base_contract()
    new = base_contract("versioned").model_copy(update={"version": "2.5.0"})
    assert [c.code for c in diff(old, new)] == ["DC-TB405"]
    with pytest.raises(PlanError, match="DC-TB405"):
        plan(old, new, Target.DELTA_4)


def test_cutover_tells_producers_where_to_write() -> None:
    old, new = pair("change_partitioning")
    migration, _ = plan(old, new, Target.DELTA_4)
    assert any("producers must write to payments.transactions__v3" in w for w in migration.warnings)


def test_no_column_mapping_warning_when_mapping_is_on_already() -> None:
    old, new = pair("drop_column")
    _, state = plan(None, old, Target.DELTA_4)
    mapped = state.__class__(state.physical, (("delta.columnMapping.mode", "name"),))
    migration, _ = plan(old, new, Target.DELTA_4, state=mapped)
    assert not any("column mapping upgrades" in w for w in migration.warnings)
    assert not any(
        op.kind == "set_properties" and "delta.columnMapping.mode" in dict(op.properties)  # type: ignore[attr-defined]
        for op in migration.ops
    )


def test_pre_check_comment_keeps_backslashes() -> None:
    assert comment_text("REGEXP_LIKE(`e`, '^\\\\s$')") == "REGEXP_LIKE(`e`, '^\\\\s$')"
    _, new = pair("add_enum_value")
    regex = new.model_copy(
        update={
            "columns": tuple(
                c.model_copy(update={"checks": c.checks.model_copy(update={"regex": r"^\S+$"})})
                if c.name == "txn_id"
                else c
                for c in new.columns
            )
        }
    )
    migration, _ = plan(None, regex, Target.DELTA_4)
    text = render_sql_file(migration, migration_id="0001", target=Target.DELTA_4)
    (line,) = [ln for ln in text.splitlines() if ln.startswith("-- pre-check") and "txn_id" in ln]
    assert "'^\\\\S+$'" in line  # Spark SQL's escaped backslash, exactly as the statement has it


def test_switching_to_versioned_without_a_shape_change_copies_nothing() -> None:
    old = base_contract()
    new = base_contract("versioned").model_copy(update={"version": "3.0.0"})
    migration, state = plan(old, new, Target.DELTA_4)
    assert migration.strategy == "versioned"
    assert not [op for op in migration.ops if isinstance(op, CopyRows)]
    kinds = [op.kind for op in migration.ops if op.phase is Phase.CUTOVER]
    assert kinds[-2:] == ["rename_table", "create_view"]
    assert state.physical == ("payments", "transactions__v3")
    again = new.model_copy(update={"version": "4.0.0", "description": "Re-released."})
    migration, after = plan(new, again, Target.DELTA_4, state=state)
    assert not [op for op in migration.ops if isinstance(op, CopyRows)]
    assert after.physical == ("payments", "transactions__v3")  # keeps serving: no new __v4 to fill


def test_deprecation_marks_accumulate_each_with_its_own_clock() -> None:
    from delta_contracts.plan.ops import DropColumns, MarkDeprecated

    old, dropped = pair("drop_column")  # legacy_channel leaves the contract and is dropped
    _, state = plan(None, old, Target.DELTA_4)
    _, state = plan(old, dropped, Target.DELTA_4, state=state)
    columns = tuple(c for c in dropped.columns if c.name != "status")
    checks = tuple(c for c in dropped.constraints if "status" not in c.expression)
    later = dropped.model_copy(update={"version": "4.0.0", "columns": columns, "constraints": checks})
    migration, _ = plan(dropped, later, Target.DELTA_4, state=state)
    mark = next(op for op in migration.ops if isinstance(op, MarkDeprecated))
    props = dict(mark.properties)
    # The mark lists every column the planned table still marks: legacy_channel's drop may be held at its
    # gate when this cutover runs (drift then shows both awaiting their drop); a drop that ran unlists its
    # column right after (`unlist_deprecated`).
    assert json.loads(props["delta_contracts.deprecated.columns"])[-1] == "status"
    assert props["delta_contracts.deprecated.column.status"] == '{"since": "4.0.0", "window": "P30D"}'
    assert "delta_contracts.deprecated.column.legacy_channel" not in props  # its clock keeps running
    (drop,) = [op for op in migration.ops if isinstance(op, DropColumns)]
    assert drop.gate.deprecated_by == "delta_contracts.deprecated.column.status"


def _keyed_pair(
    unique: list[list[str]], properties: dict[str, str], partitioned_by: tuple[str, ...] = ("txn_date",)
) -> tuple[Contract, Contract]:
    """A versioned table narrowed to a new major (a copy into `__v3`), with a key, properties and
    partitioning."""
    old, new = pair("narrow_type", "versioned")
    table = old.table.model_copy(update={"properties": properties, "partitioned_by": partitioned_by})
    quality = old.quality.model_copy(update={"unique": tuple(tuple(k) for k in unique)})
    old = old.model_copy(update={"table": table, "quality": quality})
    new = new.model_copy(update={"table": table, "quality": quality})
    return old, new


FEED = {"delta.enableChangeDataFeed": "true"}
NO_KEY_NOR_PARTITIONS = (
    "no unique key (`quality.unique`) to merge on and no partitioning (`table.partitioned_by`) to compare "
    "partitions by"
)


@pytest.mark.parametrize(
    ("unique", "properties", "partitioned_by", "strategy", "why"),
    [
        ([["txn_id"]], FEED, ("txn_date",), CatchUpStrategy.CHANGE_FEED, None),
        ([["txn_id"]], {}, ("txn_date",), CatchUpStrategy.MERGE_ON_KEY, None),
        ([["txn_id"]], {}, (), CatchUpStrategy.MERGE_ON_KEY, None),
        ([["attempts"]], FEED, ("txn_date",), CatchUpStrategy.MERGE_ON_KEY, None),  # a nullable key: no feed
        ([], FEED, ("txn_date",), CatchUpStrategy.PARTITIONS, None),
        ([], {}, ("txn_date",), CatchUpStrategy.PARTITIONS, None),
        ([], FEED, (), None, f"{NO_KEY_NOR_PARTITIONS} (the change data feed"),
        ([], {}, (), None, f"{NO_KEY_NOR_PARTITIONS}, and payments.transactions__v2"),
    ],
)
def test_cutover_catch_up_copies_only_what_changed_where_it_can(
    unique: list[list[str]],
    properties: dict[str, str],
    partitioned_by: tuple[str, ...],
    strategy: CatchUpStrategy | None,
    why: str | None,
) -> None:
    old, new = _keyed_pair(unique, properties, partitioned_by)
    migration, _ = plan(old, new, Target.DELTA_4)
    (populate,) = migration.phase(Phase.POPULATE)
    assert isinstance(populate, CopyRows)  # the first copy reads everything, whatever the strategy
    catch_up = migration.phase(Phase.CUTOVER)[0]
    whole = [w for w in migration.warnings if "copies the whole table" in w or "O(table)" in w]
    if strategy is None:
        assert isinstance(catch_up, CopyRows)
        assert catch_up.source == populate.source and catch_up.mapping == populate.mapping
        (warning,) = whole
        assert why is not None and why in warning
        return
    assert isinstance(catch_up, CatchUpRows)
    assert catch_up.strategy is strategy
    assert catch_up.key == (tuple(unique[0]) if unique else ())
    assert catch_up.partition_by == (partitioned_by if strategy is CatchUpStrategy.PARTITIONS else ())
    assert (catch_up.source, catch_up.mapping, catch_up.rejects) == (
        populate.source,
        populate.mapping,
        populate.rejects,
    )
    copied = populate.precondition()
    assert isinstance(copied, AllOf)
    if catch_up.key:
        # The copy and the catch-up refuse an old table sharing a key; the catch-up, a new table too.
        old_key = [dict(populate.mapping)[k] for k in catch_up.key]
        assert populate.rejects is not None and duplicated_key(populate.source, old_key) in populate.rejects
        new_key = [x.sql(x.column(k)) for k in catch_up.key]  # column names, quoted (issue 29, item 6)
        target_twins = NoRowsWhere(catch_up.table, duplicated_key(catch_up.table, new_key))
        assert catch_up.precondition() == AllOf((*copied.conditions, target_twins))
    else:
        assert catch_up.precondition() == copied  # the same pre-check of the source rows
    assert catch_up.postcondition() == populate.postcondition()  # rerunnable until the source retires
    assert whole == []
    assert op_from_data(op_to_data(catch_up)) == catch_up  # round-trips through a migration file
    statement = render(catch_up)
    assert statement.startswith("MERGE INTO `payments`.`transactions__v3` AS `t`")
    text = render_sql_file(migration, migration_id="0002", target=Target.DELTA_4)
    assert statement + ";" in text
    if strategy is CatchUpStrategy.CHANGE_FEED:
        assert "TABLE_CHANGES('`payments`.`transactions__v2`', :start_version)" in statement
        assert "NOT MATCHED BY SOURCE" not in statement  # deletes come from the feed
    elif strategy is CatchUpStrategy.PARTITIONS:
        (note,) = [n for n in migration.notes if "cutover catch-up" in n]
        assert "deletes and re-inserts only the partitions that differ" in note
        # Both sides fingerprinted per partition, NULL-safely; whole partitions deleted and re-inserted.
        assert statement.count("GROUP BY `txn_date`") == 2 and "XXHASH64(" in statement
        on = "ON `s`.`__delta_contracts_change` = 'delete' AND `t`.`txn_date` IS NOT DISTINCT FROM `s`.`txn_"
        assert on in statement
        assert statement.endswith(
            "WHEN MATCHED THEN DELETE WHEN NOT MATCHED AND `s`.`__delta_contracts_change` = 'insert' "
            "THEN INSERT (`txn_id`, `txn_amt_paise`, `attempts`, `status`, `legacy_channel`, `txn_date`) "
            "VALUES (`s`.`txn_id`, `s`.`txn_amt_paise`, `s`.`attempts`, `s`.`status`, `s`.`legacy_channel`, "
            "`s`.`txn_date`)"
        )
    else:
        assert "FROM `payments`.`transactions__v2`) AS `s`" in statement
        assert statement.endswith("WHEN NOT MATCHED BY SOURCE THEN DELETE")


def test_a_map_column_without_a_key_is_refused_at_plan() -> None:
    """Spark cannot hash a map (xxhash64), so partitions of a table with one cannot be compared, and the
    cutover's fence, without a key, compares whole rows by EXCEPT ALL, which Spark refuses over a map
    (UNSUPPORTED_FEATURE.SET_OPERATION_ON_MAP_TYPE, measured on delta-spark 4.4): refused before anything."""
    old, new = _keyed_pair([], {})
    tags = new.columns[0].model_copy(update={"name": "tags", "type": "map<string,string>", "nullable": True})
    new = new.model_copy(update={"columns": (*new.columns, tags)})
    with pytest.raises(FeatureLossError, match=r"no map column \(tags\); declare a unique key") as refused:
        plan(old, new, Target.DELTA_4)
    assert refused.value.exit_code == 2


def test_change_feed_catch_up_reads_from_after_the_version_the_copy_could_have_read() -> None:
    from delta_contracts.live import Commit

    def commits(*stamps: tuple[int, int]) -> list[Commit]:
        return [Commit(v, "WRITE", ms, None, None) for v, ms in stamps]

    old = commits((0, 1_000), (1, 2_000), (2, 10_000), (3, 20_000))
    assert change_feed_start(old, commits((0, 15_000), (1, 16_000))) == 3  # version 2 was there at creation
    assert change_feed_start(old, commits((0, 10_500))) == 2  # within the clock margin: read it again
    assert change_feed_start(old, commits((0, 500))) == 0
    assert change_feed_start(old, commits((0, 30_000))) is None  # nothing written since


def _rounded(lossy: bool) -> tuple[Contract, Contract]:
    old, new = pair("narrow_type", "versioned")
    doc = new.model_dump(mode="json", by_alias=True)
    column = next(c for c in doc["columns"] if c["name"] == "txn_amt_paise")
    column["convert"]["lossy"] = lossy
    return old, Contract.model_validate(doc)


def test_a_lossy_conversion_is_counted_not_refused() -> None:
    """Issue 38 item 1: `convert.lossy` takes the inverse's round trip out of the copy's pre-check and into
    the rows the copy counts; the overflow stays refused; the parts of the pre-check are named."""
    strict = next(op for op in plan(*_rounded(False), Target.DELTA_4)[0].ops if isinstance(op, CopyRows))
    lossy = next(op for op in plan(*_rounded(True), Target.DELTA_4)[0].ops if isinstance(op, CopyRows))
    assert strict.lossy == () and [c for c, _ in lossy.lossy] == ["txn_amt_paise"]
    inexact = "the inverse does not give back the original value"
    (changed,) = [p for why, p in strict.reasons if inexact in why]
    assert lossy.lossy[0][1] == changed
    assert strict.rejects is not None and lossy.rejects is not None
    round_trip = changed.removeprefix("NOT ")
    assert round_trip in strict.rejects and round_trip not in lossy.rejects
    overflow = [why for why, _ in lossy.reasons if "gives NULL where the source is not NULL" in why]
    assert overflow == [w for w, _ in strict.reasons if "gives NULL where the source is not NULL" in w] != []
    assert op_from_data(op_to_data(lossy)) == lossy
    pre = lossy.precondition()
    assert isinstance(pre, AllOf)
    (rows,) = [c for c in pre.conditions if isinstance(c, NoRowsWhere)]
    assert rows.parts == lossy.reasons
