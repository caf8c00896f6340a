"""Random documents and random mutations of the examples: always a model or a located error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delta_contracts.contract.errors import ContractError
from delta_contracts.contract.lint import lint
from delta_contracts.contract.load import LoadedContract, contract_files, parse_contract

EXAMPLE_FILES = contract_files([Path(__file__).resolve().parents[1] / "contracts"])
EXAMPLE_TEXTS = [p.read_text(encoding="utf-8") for p in EXAMPLE_FILES]
EXAMPLE_DATA = [yaml.safe_load(t) for t in EXAMPLE_TEXTS]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.sampled_from(["bigint", "decimal(40,2)", "struct<a:int>", "1.0.0", "P30D", "in_place", "ID", "`x`"]),
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=25,
)


def check(text: str) -> LoadedContract | None:
    try:
        loaded = parse_contract(text, Path("fuzz.yaml"), None)
    except ContractError as err:
        assert err.problems, "an error must carry at least one problem"
        for problem in err.problems:
            assert problem.location.path == "fuzz.yaml"
            assert problem.location.line >= 1 and problem.location.column >= 1
            assert problem.message
        return None
    for finding in lint(loaded):  # lint must not raise on any valid model either
        assert finding.location.line >= 1
    return loaded


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_random_yaml_documents(doc: Any) -> None:
    check(yaml.safe_dump(doc, allow_unicode=True))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_text(text: str) -> None:
    check(text)


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.extend(_paths(v, (*prefix, i)))
    return out


@st.composite
def mutated_examples(draw: st.DrawFn) -> str:
    import copy

    data = copy.deepcopy(draw(st.sampled_from(EXAMPLE_DATA)))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(data) if p]
        path = draw(st.sampled_from(paths))
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["delete", "replace", "rename", "duplicate"]))
        key = path[-1]
        if action == "delete":
            del parent[key]
        elif action == "replace":
            parent[key] = draw(documents)
        elif action == "rename" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=12))] = parent.pop(key)
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


@settings(max_examples=300, deadline=None)
@given(mutated_examples())
def test_mutated_examples(text: str) -> None:
    check(text)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(EXAMPLE_TEXTS), st.integers(0, 10_000), st.text(max_size=5))
def test_text_splices_into_examples(text: str, at: int, inserted: str) -> None:
    at %= len(text) + 1
    check(text[:at] + inserted + text[at:])


def test_examples_are_valid() -> None:
    assert all(check(t) is not None for t in EXAMPLE_TEXTS)
