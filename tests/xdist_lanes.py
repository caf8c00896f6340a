"""How `make test` shares the suite between its two pytest-xdist workers (`-n 2 --dist loadgroup`).

The tests on the suite's delta-spark session run in one group and those on its Spark Connect server in
another, so that each JVM is started once per run, by the one worker that needs it; every other test goes to
whichever worker is free, and the delta-3 tests, which await the delta-3 run (a JVM of its own, started at
collection, tests/engine/delta3_launch.py), come last. Without `--dist loadgroup` (a plain `pytest`) nothing
changes.

Tests say what they need, by the fixtures they request or by markers (registered in pyproject.toml), never by
their node id here:
- a fixture of `FIXTURE_LANES` puts a test in that lane;
- `@pytest.mark.lane("spark")` puts a test (or a module, by `pytestmark`) in a lane without such a fixture;
- a fixture made once per module (or class, or package) keeps the module's tests that request it together;
- `@pytest.mark.lane_first`: first in its lane, because tests of another lane await what it publishes;
- `@pytest.mark.awaits_lane_first`: after every lane's own tests, because it awaits what a `lane_first` test
  publishes.

The Spark lane is the longest, so it starts with the recipes executed on delta-spark, whose runs the
differential tests (`local` against them, not in the Spark lane) await on the other worker near its end
(tests/engine/test_recipes_executed.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

FIXTURE_LANES = {
    "spark_engine": "spark",
    "connect_url": "connect",
    "connect_engine": "connect",
    "delta3_results": "delta3",
}
# Where each lane's tests come in the order; a test that needs two lanes' JVMs goes to the earlier lane.
LANE_ORDER = {"spark": 1, "connect": 2, None: 3, "delta3": 5}
FIRST, AWAITING = 0, 4  # before every lane; after every lane but the delta-3 one, whose run is the longest


def _group(item: pytest.Item) -> str | None:
    if (marker := item.get_closest_marker("lane")) is not None:
        lane = marker.args[0] if marker.args else None
        if lane is None or lane not in LANE_ORDER:
            lanes = sorted(str(name) for name in LANE_ORDER if name is not None)
            raise pytest.UsageError(f"{item.nodeid}: lane {lane!r} is none of {lanes}")
        return str(lane)
    fixtures = set(getattr(item, "fixturenames", ()))
    params = getattr(getattr(item, "callspec", None), "params", {})
    named = {FIXTURE_LANES[f] for f in fixtures if f in FIXTURE_LANES}
    named |= {str(v) for v in params.values() if str(v) in ("spark", "connect")}
    return min(named, key=LANE_ORDER.__getitem__, default=None) or _module_group(item)


def _module_group(item: pytest.Item) -> str | None:
    """The test's module, when the test requests a fixture made once per module, class or package: its
    tests then run on one worker, which makes the fixture once (on two, each made it: the event-log
    applications' JVM twice, a minute)."""
    info = getattr(item, "_fixtureinfo", None)
    for definitions in info.name2fixturedefs.values() if info is not None else ():
        if definitions and definitions[-1].scope in ("module", "class", "package"):
            return item.nodeid.split("::")[0]
    return None


def _distributed(config: pytest.Config) -> bool:
    # a worker sees `loadgroup` set and `dist` reset to "no" (xdist/remote.py)
    return bool(getattr(config.option, "loadgroup", False) or config.getoption("dist", "no") == "loadgroup")


def pytest_itemcollected(item: pytest.Item) -> None:
    """The group as a marker as soon as the test is collected: xdist's worker reads the markers in its own
    pytest_collection_modifyitems, which may run before any other plugin's."""
    if _distributed(item.config) and (group := _group(item)) is not None:
        item.add_marker(pytest.mark.xdist_group(group))


def place(item: pytest.Item) -> int:
    """Where the test comes in a worker's order (the sort is stable: each group keeps its tests' order)."""
    if item.get_closest_marker("lane_first") is not None:
        return FIRST
    if item.get_closest_marker("awaits_lane_first") is not None:
        return AWAITING
    return LANE_ORDER.get(_group(item), LANE_ORDER[None])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _distributed(config):
        items.sort(key=place)


# The folder the controller makes for its workers to share: the delta-spark runs the differential tests await
# (tests/engine/test_recipes_executed.py) and the delta-3 run's outcome (tests/engine/delta3_launch.py).
SHARED_FOLDER = "shared_folder"
_SHARED = pytest.StashKey[Path]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist controller: tell each worker the folder they share."""
    config = node.config
    if _SHARED not in config.stash:
        config.stash[_SHARED] = Path(tempfile.mkdtemp(prefix="dc-xdist-shared-"))
    node.workerinput[SHARED_FOLDER] = str(config.stash[_SHARED])


def shared_folder(config: pytest.Config) -> Path | None:
    """The folder pytest-xdist's controller and workers share; None in a plain pytest."""
    if _SHARED in config.stash:
        return config.stash[_SHARED]
    folder = getattr(config, "workerinput", {}).get(SHARED_FOLDER)
    return Path(folder) if folder else None
