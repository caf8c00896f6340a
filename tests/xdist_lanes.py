"""How `make test` shares the suite between its two pytest-xdist workers (`-n 2 --dist loadgroup`).

The tests on the suite's delta-spark session run in one group and those on its Spark Connect server in
another, so that each JVM is started once per run, by the one worker that needs it; every other test goes to
whichever worker is free, and the delta-3 tests, which await the delta-3 run (a JVM of its own, started at
collection), come last. Without `--dist loadgroup` (a plain `pytest`) nothing changes.

The Spark lane is the longest, so it starts with the recipes executed on delta-spark, whose runs the
differential tests (`local` against them, not in the Spark lane) await on the other worker near its end
(tests/engine/test_recipes_executed.py).
"""

from __future__ import annotations

import pytest

JVM_GROUPS = {"spark_engine": "spark", "connect_url": "connect", "connect_engine": "connect"}
DELTA3_TESTS = "tests/engine/test_delta3.py"
EXECUTED = ("tests/engine/test_recipes_executed.py::test_recipe_executes_on_delta",
            "tests/engine/test_recipes_executed.py::test_committed_history_executes_on_delta")  # fmt: skip
DIFFERENTIAL = "tests/engine/test_recipes_executed.py::test_local_ends_where_spark_ends"
# Parse with a classic Delta session (tests/spark_parser.py): in the Spark lane it is the suite's own, so the
# worker runs one JVM instead of two.
PARSER_TESTS = ("tests/test_render_spark.py", "tests/test_safe_names.py")


def _group(item: pytest.Item) -> str | None:
    if item.nodeid.startswith(DELTA3_TESTS):
        return "delta3"
    if item.nodeid.startswith(PARSER_TESTS):
        return "spark"
    fixtures = set(getattr(item, "fixturenames", ()))
    params = getattr(getattr(item, "callspec", None), "params", {})
    named = {JVM_GROUPS[f] for f in fixtures if f in JVM_GROUPS}
    named |= {str(v) for v in params.values() if str(v) in ("spark", "connect")}
    return "spark" if "spark" in named else next(iter(named), None)


def _distributed(config: pytest.Config) -> bool:
    # a worker sees `loadgroup` set and `dist` reset to "no" (xdist/remote.py)
    return bool(getattr(config.option, "loadgroup", False) or config.getoption("dist", "no") == "loadgroup")


def pytest_itemcollected(item: pytest.Item) -> None:
    """The group as a marker as soon as the test is collected: xdist's worker reads the markers in its own
    pytest_collection_modifyitems, which may run before any other plugin's."""
    if _distributed(item.config) and (group := _group(item)) is not None:
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _distributed(config):
        return
    order = {"spark": 1, "connect": 2, None: 3, "delta3": 5}

    def place(item: pytest.Item) -> int:
        if item.nodeid.startswith(EXECUTED):
            return 0  # first in the Spark lane
        if item.nodeid.startswith(DIFFERENTIAL):
            return 4  # they await the executed tests' runs
        return order[_group(item)]

    items.sort(key=place)  # stable: each group keeps its tests' order
