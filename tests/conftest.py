from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # lets tests import the helpers in tests/ (spark_parser, builders)

EXAMPLES = REPO / "contracts"
pytest_plugins = ["tests.xdist_lanes"]

from tests.engine.session_conf import SUBMIT_ARGS  # noqa: E402 (needs the repo on sys.path)

# Every JVM PySpark starts in the suite's processes and their children (tests/engine/session_conf.py).
os.environ.setdefault("PYSPARK_SUBMIT_ARGS", SUBMIT_ARGS)


@pytest.fixture
def examples() -> Path:
    return EXAMPLES


@pytest.hookimpl(trylast=True)  # after -k / -m deselection
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start the delta-3 run (a JVM of its own, minutes long) as soon as it is known to be wanted."""
    from tests.engine.conftest import SKIP_SPARK

    if hasattr(config, "workerinput"):
        return  # a pytest-xdist worker: the controller starts the run (below)
    if SKIP_SPARK or not any(item.nodeid.startswith("tests/engine/test_delta3.py") for item in items):
        return
    from tests.engine.test_delta3 import DELTA3_RUN, launch

    config.stash[DELTA3_RUN] = launch()


_DELTA3_FOLDER = pytest.StashKey[str]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist controller: tell each worker the folder where the delta-3 run publishes its outcome."""
    import tempfile

    from tests.engine.test_delta3 import SHARED_FOLDER

    config = node.config
    if _DELTA3_FOLDER not in config.stash:
        config.stash[_DELTA3_FOLDER] = tempfile.mkdtemp(prefix="dc-delta3-")
    node.workerinput[SHARED_FOLDER] = config.stash[_DELTA3_FOLDER]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """pytest-xdist controller: start the delta-3 run once, as soon as a worker has collected its tests."""
    from tests.engine.conftest import SKIP_SPARK
    from tests.engine.test_delta3 import DELTA3_RUN, launch

    config = node.config
    wanted = any(i.startswith("tests/engine/test_delta3.py") for i in ids)
    if SKIP_SPARK or DELTA3_RUN in config.stash or not wanted:
        return
    run = launch(Path(config.stash[_DELTA3_FOLDER]))
    run.publish()
    config.stash[DELTA3_RUN] = run


def pytest_unconfigure(config: pytest.Config) -> None:
    from tests.engine.test_delta3 import DELTA3_RUN

    run = config.stash.get(DELTA3_RUN, None)
    if run is not None and run.process is not None and run.process.poll() is None:
        run.process.kill()  # the run ended (or was stopped) before the delta-3 tests awaited it
