from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # lets tests import the helpers in tests/ (spark_parser, builders)

EXAMPLES = REPO / "contracts"


@pytest.fixture
def examples() -> Path:
    return EXAMPLES


@pytest.hookimpl(trylast=True)  # after -k / -m deselection
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start the delta-3 run (a JVM of its own, minutes long) as soon as it is known to be wanted."""
    from tests.engine.conftest import SKIP_SPARK

    if SKIP_SPARK or not any(item.nodeid.startswith("tests/engine/test_delta3.py") for item in items):
        return
    from tests.engine.test_delta3 import DELTA3_RUN, launch

    config.stash[DELTA3_RUN] = launch()


def pytest_unconfigure(config: pytest.Config) -> None:
    from tests.engine.test_delta3 import DELTA3_RUN

    run = config.stash.get(DELTA3_RUN, None)
    if run is not None and run.process is not None and run.process.poll() is None:
        run.process.kill()  # the run ended (or was stopped) before the delta-3 tests awaited it
