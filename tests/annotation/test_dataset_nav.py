"""Issue 40: the dataset's navigation, grouped by job, on the pages it links to, with the
page open marked aria-current="page"; each role sees the groups of its work; it costs the
page no query (the permissions the page's access check found are reused)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation import dataset_nav, roles

pytestmark = pytest.mark.django_db


def nav_of(page: str) -> str:
    found = re.search(r'<nav class="dataset-nav" aria-label="Dataset">.*?</nav>', page, re.S)
    return found.group(0) if found else ""


def group_names(page: str) -> list[str]:
    return re.findall(r'class="nav-group-name"[^>]*>([^<]+)<', nav_of(page))


def test_groups_by_role():
    admin = dataset_nav.groups(3, set(roles.ROLE_PERMISSIONS[roles.DatasetRole.ADMIN]), "")
    assert [g.name for g in admin] == ["Author", "Judge", "Review", "Analyse", "Administer"]
    assert sum(len(g.links) for g in admin) == 17
    reviewer = dataset_nav.groups(3, set(roles.ROLE_PERMISSIONS[roles.DatasetRole.REVIEWER]), "")
    assert [g.name for g in reviewer] == ["Author", "Judge", "Review", "Analyse"]
    expert = dataset_nav.groups(3, set(roles.ROLE_PERMISSIONS[roles.DatasetRole.EXPERT]), "")
    assert [(g.name, [link.label for link in g.links]) for g in expert] == [("Author", ["Queries"])]
    links = {link.label: link.url for g in admin for link in g.links}
    assert links["Import"] == "/datasets/import/?dataset=3"
    assert links["Runs"] == "/datasets/3/runs/"


@pytest.mark.parametrize(
    ("name", "label"),
    [("dataset-detail", "Queries"), ("dataset-runs", "Runs"), ("dataset-members", "Members"),
     ("dataset-schedules", "Schedules"), ("review-queue", "Review")],
)  # fmt: skip
def test_the_page_open_is_marked(owner_client, dataset, name, label):
    page = owner_client.get(reverse(name, args=[dataset.pk])).content.decode()
    nav = nav_of(page)
    assert re.findall(r'aria-current="page">([^<]+)<', nav) == [label]


def test_an_expert_sees_the_author_group_only(client, dataset, collaborator):
    client.force_login(collaborator)
    page = client.get(reverse("dataset-detail", args=[dataset.pk])).content.decode()
    assert group_names(page) == ["Author"]


def test_pages_beyond_it_show_no_navigation(owner_client, dataset, query):
    page = owner_client.get(reverse("query-detail", args=[query.pk])).content.decode()
    assert nav_of(page) == ""


def test_the_navigation_costs_the_page_no_query(owner_client, dataset):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    url = reverse("dataset-schedules", args=[dataset.pk])
    owner_client.get(url)  # warm the session and caches
    with CaptureQueriesContext(connection) as captured:
        page = owner_client.get(url).content.decode()
    assert group_names(page) == ["Author", "Judge", "Review", "Analyse", "Administer"]
    guardian = [q["sql"] for q in captured.captured_queries if "guardian_" in q["sql"]]
    # The page's own access check asks once (the user's and the groups' rows); the
    # navigation reuses what it found instead of asking again.
    assert len(guardian) <= 2, guardian
