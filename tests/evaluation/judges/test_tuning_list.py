"""`GET /api/datasets/{id}/tuning/` lists every LLM judge with the dataset's tuning in a
fixed number of queries, however many judges there are (issue 38's follow-up)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.judges.models import Judge
from tests.factories import tune

pytestmark = pytest.mark.django_db


def _add_judges(dataset, owner, names: range) -> None:
    """LLM judges, every other one tuned on the dataset."""
    for n in names:
        judge = Judge.objects.create(
            name=f"Judge {n:02}", base_url="http://127.0.0.1:9/v1", model="m"
        )
        if n % 2 == 0:
            tune(judge, dataset, by=owner, instructions=f"Rule {n}.")


def test_the_tuning_list_reads_in_a_fixed_number_of_queries(
    reviewed_dataset, owner, reviewer_api, django_assert_max_num_queries
):
    url = reverse("api-evaluation:dataset-tunings-api", args=[reviewed_dataset.pk])
    _add_judges(reviewed_dataset, owner, range(2))
    with django_assert_max_num_queries(12) as two_judges:
        assert reviewer_api.get(url).status_code == 200

    _add_judges(reviewed_dataset, owner, range(2, 12))
    with django_assert_max_num_queries(len(two_judges.captured_queries)):
        listed = reviewer_api.get(url).json()
    assert [row["instructions"] for row in listed] == [
        f"Rule {n}." if n % 2 == 0 else "" for n in range(12)
    ]
