"""The start-run form of a dataset with many queries lists at most QUERY_OPTIONS of them
and a search for the others; any query of the dataset can still be chosen, and only those."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation import services
from evaluation.runs import forms
from evaluation.runs import views as views
from tests.factories import AnswerFactory, QueryFactory, valid_criteria

pytestmark = pytest.mark.django_db


@pytest.fixture
def queries(dataset, collaborator, monkeypatch):
    """Six queries with a submitted checklist and an answer; the form lists four."""
    monkeypatch.setattr(forms, "QUERY_OPTIONS", 4)
    monkeypatch.setattr(views, "QUERY_OPTIONS", 4)
    made = []
    for n in range(6):
        query = QueryFactory(dataset=dataset, text=f"Question {'lighthouse' if n == 5 else n}")
        services.checklist_create_with_criteria(
            query=query, by=collaborator, criteria=valid_criteria(), submit=True
        )
        AnswerFactory(query=query)
        made.append(query)
    return made


def options(page: str) -> dict[int, bool]:
    """The query options of the form: id → selected."""
    select = page.split('name="queries"', 1)[1].split("</select>", 1)[0]
    return {
        int(pk): "selected" in attrs
        for pk, attrs in re.findall(r'<option value="(\d+)"([^>]*)>', select)
    }


def test_the_form_lists_a_bounded_number_of_queries_and_a_search(client, owner, dataset, queries):
    client.force_login(owner)
    url = reverse("dataset-runs", args=[dataset.pk])
    page = client.get(url).content.decode()
    assert options(page) == {q.pk: False for q in queries[:4]}
    assert "data-query-search" in page and "the first 4 queries" in page
    found = client.get(url, {"query_search": "LIGHTHOUSE"}).content.decode()
    assert options(found) == {queries[5].pk: False}
    by_id = client.get(url, {"query_search": f"#{queries[4].pk}"}).content.decode()
    assert queries[4].pk in options(by_id)
    # The htmx search sends the queries chosen so far: they stay listed and chosen; what
    # is not an id of this dataset is left out, not an error.
    other = QueryFactory(dataset=services.dataset_create(name="Elsewhere", by=owner))
    chosen = client.get(
        url,
        {"query_search": "lighthouse", "queries": [queries[4].pk, other.pk, "x", "9" * 30]},
        headers={"HX-Request": "true"},
    )
    assert chosen.status_code == 200
    assert options(chosen.content.decode()) == {queries[4].pk: True, queries[5].pk: False}


def test_a_small_dataset_lists_every_query_without_a_search(client, owner, dataset, query):
    client.force_login(owner)
    page = client.get(reverse("dataset-runs", args=[dataset.pk])).content.decode()
    assert options(page) == {query.pk: False} and "data-query-search" not in page


def test_any_query_of_the_dataset_can_be_chosen_listed_or_not(
    client, owner, dataset, queries, offline_panel
):
    client.force_login(owner)
    url = reverse("dataset-runs", args=[dataset.pk])
    unlisted = queries[5]
    # Refused for another reason: the unlisted query chosen stays chosen in the form.
    refused = client.post(
        url, {"panel": offline_panel.pk, "concurrency": 0, "queries": [unlisted.pk]}
    )
    assert refused.status_code == 200 and "concurrency" in refused.context["form"].errors
    assert options(refused.content.decode())[unlisted.pk] is True
    foreign = QueryFactory(dataset=services.dataset_create(name="Elsewhere", by=owner))
    refused = client.post(
        url, {"panel": offline_panel.pk, "concurrency": 4, "queries": [foreign.pk]}
    )
    assert "queries" in refused.context["form"].errors and not dataset.runs.exists()
    started = client.post(
        url, {"panel": offline_panel.pk, "concurrency": 4, "queries": [unlisted.pk]}
    )
    assert started.status_code == 302
    assert list(dataset.runs.get().queries.all()) == [unlisted]


def test_the_query_options_escape_what_experts_wrote(client, owner, dataset, queries):
    """The query select is drawn by Django's Jinja2 widget templates (config.jinja
    WIDGET_RENDERER), not the form's own engine: its labels are escaped there too."""
    queries[0].text = 'Revenue <script>alert("x")</script> & "margins"'
    queries[0].save(update_fields=["text"])
    client.force_login(owner)
    page = client.get(reverse("dataset-runs", args=[dataset.pk])).content.decode()
    assert "<script>alert" not in page
    label = f"#{queries[0].pk} Revenue &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; "
    assert label in page
    assert options(page) == {q.pk: False for q in queries[:4]}
