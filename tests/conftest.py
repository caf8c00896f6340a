from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # lets tests import the helpers in tests/ (spark_parser, builders)

EXAMPLES = REPO / "contracts"
pytest_plugins = ["tests.xdist_lanes", "tests.engine.delta3_launch"]

from tests.engine.session_conf import SUBMIT_ARGS  # noqa: E402 (needs the repo on sys.path)

# Every JVM PySpark starts in the suite's processes and their children (tests/engine/session_conf.py).
os.environ.setdefault("PYSPARK_SUBMIT_ARGS", SUBMIT_ARGS)


@pytest.fixture
def examples() -> Path:
    return EXAMPLES
