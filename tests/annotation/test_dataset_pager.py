"""Long query lists are paged (50 a page), keeping the filters in the page links."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import QueryFactory

pytestmark = pytest.mark.django_db


def test_the_query_list_pages_and_keeps_filters(client, owner, dataset):
    for n in range(51):
        QueryFactory(dataset=dataset, text=f"Revenue question {n}")
    client.force_login(owner)
    url = reverse("dataset-detail", args=[dataset.pk])
    first = client.get(url, {"q": "Revenue"}).content.decode()
    assert "Page 1 of 2" in first and "Previous</a>" not in first
    assert 'href="?q=Revenue&amp;page=2"' in first
    second = client.get(url, {"q": "Revenue", "page": 2}).content.decode()
    assert "Page 2 of 2" in second and "Next \u203a" not in second
    assert second.count("Revenue question") == 1
