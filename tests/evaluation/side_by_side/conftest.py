"""The side-by-side tests' fixture: tests/support/side_by_side.py's two runs on the
reviewed dataset."""

from __future__ import annotations

import pytest

from tests.support.side_by_side import TwoRuns, build_two_runs


@pytest.fixture
def two_runs(reviewed_dataset) -> TwoRuns:
    return build_two_runs(reviewed_dataset)
