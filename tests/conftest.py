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
