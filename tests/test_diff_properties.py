from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from delta_contracts.contract.model import ChangeClass, Contract
from delta_contracts.diff import diff, verdict
from delta_contracts.diff.changes import RANK
from tests.test_diff_classification import BASE

names = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True)
types = st.sampled_from(["int", "bigint", "smallint", "string", "double", "float", "decimal(10,2)", "date"])


@st.composite
def contracts(draw: st.DrawFn) -> Contract:
    doc: dict[str, Any] = copy.deepcopy(BASE)
    columns = []
    for name in draw(st.lists(names, min_size=1, max_size=6, unique=True)):
        kind = draw(types)
        column: dict[str, Any] = {"name": name, "type": kind, "nullable": draw(st.booleans())}
        if kind in ("int", "bigint") and draw(st.booleans()):
            column["checks"] = {"min": draw(st.integers(-5, 5)), "max": draw(st.integers(6, 50))}
        if kind == "string" and draw(st.booleans()):
            column["checks"] = {"enum": draw(st.lists(st.sampled_from("ABCDE"), min_size=1, unique=True))}
        if draw(st.booleans()):
            column["description"] = draw(st.text(max_size=10))
        columns.append(column)
    doc["columns"] = columns
    doc["table"] = {"partitioned_by": draw(st.sampled_from([[], [columns[0]["name"]]]))}
    doc["constraints"] = []
    doc["quality"] = {"volume": {"min_rows": draw(st.integers(0, 1000))}}
    doc["description"] = draw(st.text(max_size=10))
    return Contract.model_validate(doc)


@settings(max_examples=200, deadline=None)
@given(contracts())
def test_diff_with_itself_is_empty(c: Contract) -> None:
    assert diff(c, c) == []
    assert verdict(c, c, []).required is None


@settings(max_examples=200, deadline=None)
@given(contracts(), st.text(max_size=20))
def test_only_descriptions_changed_needs_a_patch(c: Contract, text: str) -> None:
    columns = tuple(col.model_copy(update={"description": text + col.name}) for col in c.columns)
    edited = c.model_copy(update={"description": (c.description or "") + "!", "columns": columns})
    changes = diff(c, edited)
    assert changes
    assert verdict(c, edited, changes).required is ChangeClass.PATCH


@settings(max_examples=300, deadline=None)
@given(contracts(), contracts())
def test_required_bump_is_the_maximum_and_diff_never_raises(a: Contract, b: Contract) -> None:
    changes = diff(a, b)
    required = verdict(a, b, changes).required
    if not changes:
        assert required is None
    else:
        assert required is not None
        assert RANK[required] == max(RANK[c.change_class] for c in changes)
