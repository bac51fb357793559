"""Fixtures of the analytics tests: `known`, the dataset of analytics/known.py with its
default sizes (six checklists, two systems, a panel of three), whose figures the tests hold to
oracles computed from its raw data."""

from __future__ import annotations

import pytest

from tests.evaluation.analytics.known import build_known


@pytest.fixture
def known(reviewed_dataset):
    return build_known(reviewed_dataset)
