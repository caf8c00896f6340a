"""When the files of a table are laid out by its current clustering keys, as its Delta history tells: a
full OPTIMIZE after the last CLUSTER BY, and nothing else (the op itself runs in
tests/engine/test_recluster_rows.py)."""

from __future__ import annotations

import pytest

from delta_contracts.live import Commit
from delta_contracts.plan.recluster import ReclusteredSinceKeysChanged
from delta_contracts.tableid import TableId


def _commit(version: int, operation: str, **parameters: str) -> Commit:
    return Commit(version, operation, 0, None, None, parameters)


@pytest.mark.parametrize(
    ("commits", "done"),
    [
        ([_commit(0, "CREATE TABLE")], True),  # made with its keys: nothing laid out by older ones
        ([_commit(0, "CREATE TABLE"), _commit(1, "CLUSTER BY")], False),
        ([_commit(1, "CLUSTER BY"), _commit(2, "OPTIMIZE", isFull="false")], False),  # incremental only
        ([_commit(1, "CLUSTER BY"), _commit(2, "OPTIMIZE", isFull="true")], True),
        ([_commit(1, "OPTIMIZE", isFull="true"), _commit(2, "CLUSTER BY")], False),  # keys changed again
        ([_commit(1, "CLUSTER BY"), _commit(2, "OPTIMIZE", isFull="true"), _commit(3, "WRITE")], True),
    ],
)
def test_a_full_optimize_after_the_last_key_change_is_what_counts(commits: list[Commit], done: bool) -> None:
    assert ReclusteredSinceKeysChanged(TableId(("s", "t"))).holds_in(commits) is done
