"""The `engine` marker is true of every test file (checked at collection by tests/conftest.py), reported as a
test failure where the collection itself cannot refuse: in an xdist worker."""

from __future__ import annotations

import pytest

from tests.conftest import WRONG_ENGINE_MARKERS


def test_every_file_carries_the_engine_marker_exactly_when_it_touches_an_engine(
    request: pytest.FixtureRequest,
) -> None:
    assert request.config.stash.get(WRONG_ENGINE_MARKERS, []) == []
