"""Issue 40: an empty list is a sentence, not a numbered item ("1. None yet."): the lists of
the cross-evaluation page and the Schedules page's runs say what would fill them."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def no_empty_list_items(page: str) -> None:
    for listed in re.findall(r"<ol[^>]*>(.*?)</ol>", page, flags=re.S):
        assert "yet" not in listed, listed


def test_the_cross_evaluation_page_with_nothing_yet(owner_client, dataset):
    page = owner_client.get(reverse("dataset-cross-evaluation", args=[dataset.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    no_empty_list_items(html)
    assert "No criterion is covered by half of the other experts" in html
    assert "No criterion in the long tail yet" in html
    assert '<ol class="coverage-list">' not in html


def test_the_schedules_page_with_no_scheduled_run(owner_client, dataset):
    html = owner_client.get(reverse("dataset-schedules", args=[dataset.pk])).content.decode()
    no_empty_list_items(html)
    assert "No run started by a schedule yet." in html and "None yet" not in html
