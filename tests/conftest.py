from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # lets tests import the helpers in tests/ (spark_parser, builders)

# Before any test module imports gRPC (PySpark's Connect client) at collection: gRPC reads it on import.
from delta_contracts.engine import without_grpc_fork_handlers  # noqa: E402

without_grpc_fork_handlers()

EXAMPLES = REPO / "contracts"
pytest_plugins = ["tests.xdist_lanes", "tests.engine.delta3_launch"]

from tests.engine.session_conf import CHILD_SUBMIT_ARGS  # noqa: E402 (needs the repo on sys.path)

# Every JVM PySpark starts in the suite's processes and their children, but for the few that live through
# the run, which set their own (tests/engine/session_conf.py).
os.environ.setdefault("PYSPARK_SUBMIT_ARGS", CHILD_SUBMIT_ARGS)


@pytest.fixture
def examples() -> Path:
    return EXAMPLES


# The `engine` marker says a test file touches a live Delta table through an engine: it requests an engine
# fixture (tests/engine/conftest.py), opens an engine or a session itself (a call of the class, not a
# mention: a test of the capability tables reads LocalEngine's methods and opens nothing), runs the
# notebooks (each opens a LocalEngine), or lives in tests/engine. Checked at collection, both ways, so that
# the marker stays true.
ENGINE_TESTS = REPO / "tests" / "engine"
ENGINE_FIXTURES = frozenset(
    {"local_engine", "spark_engine", "connect_url", "connect_engine", "connect_event_logs", "engine"}
    | {"every_engine", "local_or_spark", "delta3_results", "unity_server", "unity_catalog"}
)
ENGINE_NAMES = re.compile(r"\b(LocalEngine|SparkEngine|local_delta_session|NotebookClient)\(")


WRONG_ENGINE_MARKERS = pytest.StashKey[list[str]]()


def _touches_engine(path: Path, items: list[pytest.Item]) -> bool:
    if path.is_relative_to(ENGINE_TESTS):
        return True
    if any(ENGINE_FIXTURES.intersection(getattr(item, "fixturenames", ())) for item in items):
        return True
    return ENGINE_NAMES.search(path.read_text(encoding="utf-8")) is not None


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselection: every test of a file is seen
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    by_file: dict[Path, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.path, []).append(item)
    wrong = []
    for path, tests in by_file.items():
        marked = [item.get_closest_marker("engine") is not None for item in tests]
        touches = _touches_engine(path, tests)
        if touches and not all(marked):
            wrong.append(f"{path.relative_to(REPO)} touches an engine: mark it `pytest.mark.engine`")
        elif not touches and any(marked):
            wrong.append(f"{path.relative_to(REPO)} touches no engine: remove its `engine` marker")
    config.stash[WRONG_ENGINE_MARKERS] = wrong
    # An xdist worker that refuses its collection only crashes (the controller never shows why): there, the
    # test of tests/test_engine_marker.py reports the same lines.
    if wrong and not hasattr(config, "workerinput"):
        raise pytest.UsageError("the `engine` marker is wrong:\n" + "\n".join(wrong))
