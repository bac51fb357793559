"""Fixtures of the agreement tests: `labelled`, the dataset of agreement/labelled.py (votes of
a three-judge panel, three raters' labels with gaps, some adjudications) with its default
sizes. A module that needs other sizes overrides it (test_delta.py, test_sql.py)."""

from __future__ import annotations

import pytest

from tests.evaluation.agreement.labelled import build_labelled


@pytest.fixture
def labelled(reviewed_dataset):
    return build_labelled(reviewed_dataset)
