from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # lets tests import the helpers in tests/ (spark_parser, builders)

EXAMPLES = REPO / "contracts"


@pytest.fixture
def examples() -> Path:
    return EXAMPLES


# `make test` runs the suite in two pytest-xdist workers (`--dist loadgroup`). A JVM session is one per
# process, so every test that reaches the `spark` engine's session runs in one worker (one session per run),
# and every test that reaches the Spark Connect server in one worker (one server per run); the rest (pure
# tests, the embedded engine, tests that start processes of their own) is shared out between both.
_SESSION_FIXTURES = {"spark_engine": "spark", "connect_engine": "connect", "connect_url": "connect"}


def session_group(item: pytest.Item) -> str | None:
    """The engine session a test reaches ("spark", "connect"), or None."""
    names = set(getattr(item, "fixturenames", ()))
    for fixture, group in _SESSION_FIXTURES.items():
        if fixture in names:
            return group
    callspec = getattr(item, "callspec", None)
    # engine-parametrized tests (`engine`, `every_engine`, a test's own "spark"/"connect" parameter) reach the
    # session through request.getfixturevalue, invisible in fixturenames
    values = {v for v in callspec.params.values() if isinstance(v, str)} if callspec is not None else set()
    for group in ("spark", "connect"):
        if group in values and not item.get_closest_marker("own_processes"):
            return group
    return None


def pytest_itemcollected(item: pytest.Item) -> None:
    # as each test is collected: xdist turns the groups into work units in pytest_collection_modifyitems
    if item.get_closest_marker("xdist_group") is None and (group := session_group(item)) is not None:
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(trylast=True)  # after -k / -m deselection
def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the delta-3 run (a JVM of its own, minutes long) as soon as it is known to be wanted; under
    xdist the controller starts it (`pytest_xdist_node_collection_finished`), never a worker."""
    if hasattr(session.config, "workerinput"):
        items = session.items
        lost = [i.nodeid for i in items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
        if lost and session.config.getvalue("loadgroup"):
            # xdist marks a group by suffixing the test's node id: without it the tests of one session would
            # be shared between the workers, each starting a session of its own
            why = f"pytest-xdist dropped the xdist_group of {lost[0]} and {len(lost) - 1} others"
            print(f"\n{why} (is pytest newer than pyproject.toml allows?)", file=sys.__stderr__, flush=True)
            raise pytest.UsageError(why)
        return
    if _wants_delta3(item.nodeid for item in session.items):
        from tests.engine.test_delta3 import DELTA3_RUN, launch

        session.config.stash[DELTA3_RUN] = launch()


def _wants_delta3(nodeids: Iterable[str]) -> bool:
    from tests.engine.conftest import SKIP_SPARK

    return not SKIP_SPARK and any(n.startswith("tests/engine/test_delta3.py") for n in nodeids)


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        from tests.engine.test_delta3 import SHARED_RUN_ENV, shared_run_folder

        # set before the workers start, so that they inherit it: where the controller's delta-3 run reports
        os.environ.setdefault(SHARED_RUN_ENV, str(shared_run_folder()))


@pytest.hookimpl(optionalhook=True)  # an xdist hook
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    from tests.engine.test_delta3 import DELTA3_RUN, launch

    config: pytest.Config = node.config  # type: ignore[attr-defined]
    if DELTA3_RUN not in config.stash and _wants_delta3(ids):
        config.stash[DELTA3_RUN] = launch()


def pytest_unconfigure(config: pytest.Config) -> None:
    from tests.engine.test_delta3 import DELTA3_RUN

    run = config.stash.get(DELTA3_RUN, None)
    if run is not None:
        run.stop()  # the run ended (or was stopped) before the delta-3 tests awaited it
