"""What a catch-up's report says it matched rows by (issue 47 item 7: a fence without a unique key printed
`(succeeded — sql; merged on )`)."""

from __future__ import annotations

from typing import Any

from delta_contracts.engine.local.ops import catch_up_detail
from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy
from delta_contracts.plan.fence import fence_catch_up
from delta_contracts.plan.ops import Phase
from delta_contracts.tableid import TableId

OLD = TableId(("crew", "fatigue__v1"))
BULK: dict[str, Any] = dict(
    table=TableId(("crew", "fatigue__v2")),
    phase=Phase.CUTOVER,
    source=TableId(("crew", "fatigue")),
    mapping=(("report_id", "`report_id`"), ("day", "`day`")),
)


def test_a_fence_without_a_unique_key_says_it_compared_whole_rows() -> None:
    bulk = CatchUpRows(**BULK, key=(), partition_by=("day",), strategy=CatchUpStrategy.PARTITIONS)
    fence = fence_catch_up(bulk, OLD, key=())
    assert fence.key == ()
    assert (
        catch_up_detail(fence)
        == "inserted the old rows the new table lacks, compared as whole rows (no unique key)"
    )


def test_each_strategy_names_what_it_matched_on() -> None:
    keyed = CatchUpRows(**BULK, key=("report_id",))
    assert catch_up_detail(keyed) == "merged on report_id"
    assert catch_up_detail(fence_catch_up(keyed, OLD, keyed.key)) == (
        "carried the old table's inserts, updates and deletes by key (report_id)"
    )
    by_partition = CatchUpRows(**BULK, key=(), partition_by=("day",), strategy=CatchUpStrategy.PARTITIONS)
    assert catch_up_detail(by_partition) == "replaced the partitions (day) that differ"


def test_the_fence_compares_a_map_column_by_its_json() -> None:
    """Spark has no equality on maps (`m <=> m`: DATATYPE_MISMATCH.INVALID_ORDERING_TYPE, delta-spark 4.4, the
    exhaustive recipe matrix's versioned map cases): the fence's changed-row test and its update guard read a
    map column through TO_JSON, and every other column by `<=>` as before."""
    from delta_contracts.plan.fence import changes_merge
    from delta_contracts.sql import expressions as x

    mapping = (("report_id", "`report_id`"), ("day", "`day`"), ("tags", "`tags`"))
    bulk = CatchUpRows(**{**BULK, "mapping": mapping}, key=("report_id",), maps=("tags",))
    fence = fence_catch_up(bulk, OLD, key=("report_id",), maps=("tags",))
    assert fence.maps == ("tags",)
    sql = x.sql(changes_merge(fence, 3, 5))
    assert "TO_JSON(`a`.`tags`) IS NOT DISTINCT FROM TO_JSON(`o`.`tags`)" in sql, sql  # the changed rows
    assert "TO_JSON(`t`.`tags`) IS NOT DISTINCT FROM TO_JSON(`s`.`__delta_contracts_stamped_2`)" in sql, sql
    assert "`a`.`day` IS NOT DISTINCT FROM `o`.`day`" in sql, sql
    assert sql.count("TO_JSON(") == 6, sql  # both sides of the changed-row test and of each update guard
