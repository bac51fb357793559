"""One analytics access rule (evaluation.analytics.access) for the pages and the API: the
API's 403 names the rule that refused, as the pages' does."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_the_api_refusals_name_the_rule(reviewed_dataset, collaborator_api, reviewer_api):
    pk = reviewed_dataset.pk
    expert = collaborator_api.get(reverse("api-evaluation:analytics", args=[pk]))
    assert expert.status_code == 403
    assert expert.json()["detail"] == "Analytics are for the dataset's reviewers and admins."
    reviewer = reviewer_api.get(reverse("api-evaluation:analytics-criteria", args=[pk]))
    assert reviewer.status_code == 403
    assert reviewer.json()["detail"] == "Criterion health is for the dataset's admins."
