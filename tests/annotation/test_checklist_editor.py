"""The checklist editor pages: autosave with live rule results, add, move, delete, cite,
submit; with and without htmx; flat query counts."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Checklist, Citation
from tests.factories import CriterionFactory, valid_criteria

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def checklist(query, collaborator):
    return services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )


@pytest.fixture
def author(client, collaborator):
    client.force_login(collaborator)
    return client


def test_start_creates_the_checklist_once(author, query):
    url = reverse("checklist-start", args=[query.pk])
    first = author.post(url)
    second = author.post(url)
    assert first.status_code == second.status_code == 302
    assert first["Location"] == second["Location"]
    assert Checklist.objects.filter(query=query).count() == 1


def test_editor_shows_criteria_and_their_rule_results(author, checklist):
    criterion = checklist.criteria.get(position=2)
    criterion.text = "Revenue was $4.12 billion"
    criterion.save()
    page = author.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    assert 'data-rule="action-verb"' in page
    assert "Revenue was $4.12 billion" in page
    assert "Submit checklist" in page


def test_autosave_returns_findings_and_summary_without_replacing_the_form(author, checklist):
    criterion = checklist.criteria.get(position=2)
    url = reverse("criterion-update", args=[criterion.pk])
    data = {"text": "Revenue was high", "kind": "fact", "weight": "1", "is_core": "on"}
    response = author.post(url, data, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert f'id="findings-{criterion.pk}"' in html and 'data-rule="action-verb"' in html
    assert 'id="checklist-summary"' in html and 'hx-swap-oob="true"' in html
    assert "<textarea" not in html  # the text box being typed in is left alone
    criterion.refresh_from_db()
    assert criterion.text == "Revenue was high"
    assert criterion.source_types.count() == 0  # unticked boxes mean no source types
    fixed = author.post(url, {**data, "text": "States revenue of $4.12 billion."}, **HTMX)
    assert (
        "Meets the guideline" in fixed.content.decode()
        or "fact-source-type" in fixed.content.decode()
    )


def test_invalid_field_value_is_named_and_not_saved(author, checklist):
    criterion = checklist.criteria.get(position=2)
    url = reverse("criterion-update", args=[criterion.pk])
    response = author.post(url, {"text": "States x.", "kind": "opinion", "weight": "1"}, **HTMX)
    assert "<code>kind</code>" in response.content.decode()
    criterion.refresh_from_db()
    assert criterion.kind == "fact" and criterion.text != "States x."


def test_add_move_delete_without_javascript(author, checklist):
    add = author.post(
        reverse("criterion-create", args=[checklist.pk]),
        {"text": "Lists the risks.", "kind": "fact"},
    )
    assert add.status_code == 302
    new = checklist.criteria.get(text="Lists the risks.")
    assert new.position == 7
    author.post(reverse("criterion-move", args=[new.pk]), {"direction": "up"})
    new.refresh_from_db()
    assert new.position == 6
    author.post(reverse("criterion-delete", args=[new.pk]))
    assert checklist.criteria.count() == 6


def test_add_with_htmx_returns_the_new_row(author, checklist):
    response = author.post(
        reverse("criterion-create", args=[checklist.pk]),
        {"text": "Lists the main risks.", "kind": "fact"},
        **HTMX,
    )
    html = response.content.decode()
    assert 'class="criterion"' in html and "Lists the main risks." in html
    assert 'data-rule="fact-source-type"' in html


def test_citation_add_and_remove(author, checklist, query):
    criterion = checklist.criteria.get(position=2)
    url = reverse("citation-create", args=[criterion.pk])
    late = query.query_date.replace(year=query.query_date.year + 1).isoformat()
    response = author.post(url, {"title": "Later report", "published_on": late}, **HTMX)
    assert 'data-rule="citation-after-query-date"' in response.content.decode()
    citation = Citation.objects.get(criterion=criterion)
    author.post(reverse("citation-delete", args=[citation.pk]), **HTMX)
    assert not Citation.objects.filter(pk=citation.pk).exists()


def test_javascript_urls_are_not_rendered_as_links(author, checklist):
    criterion = checklist.criteria.get(position=2)
    services.citation_add(
        criterion=criterion,
        by=checklist.author,
        data=services.checklists.CitationData(title="Sneaky", url="javascript:alert(1)"),
    )
    page = author.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    assert 'href="javascript:' not in page
    assert "<code>javascript:alert(1)</code>" in page


def test_user_text_is_escaped(author, checklist):
    criterion = checklist.criteria.get(position=2)
    criterion.text = "States <script>alert(1)</script> revenue."
    criterion.save()
    page = author.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;" in page


def test_submit_with_errors_lists_them_then_succeeds_once_fixed(author, checklist):
    bad = checklist.criteria.get(position=3)
    bad.text = "Gross margin 61.5%"
    bad.save()
    url = reverse("checklist-submit", args=[checklist.pk])
    refused = author.post(url)
    assert refused.status_code == 422
    assert "Not submitted: 1 rule error" in refused.content.decode()
    bad.text = "Reports a gross margin of 61.5%."
    bad.save()
    assert author.post(url).status_code == 302
    checklist.refresh_from_db()
    assert checklist.status == Checklist.Status.SUBMITTED
    page = author.get(reverse("checklist-detail", args=[checklist.pk])).content.decode()
    assert "Reopen to edit" in page and "<textarea" not in page


def test_only_the_author_can_write(client, owner, outsider, checklist):
    criterion = checklist.criteria.first()
    url = reverse("criterion-update", args=[criterion.pk])
    client.force_login(owner)
    assert client.post(url, {"text": "x", "kind": "fact", "weight": "1"}).status_code == 403
    client.force_login(outsider)
    assert client.post(url, {"text": "x", "kind": "fact", "weight": "1"}).status_code == 404
    assert client.post(reverse("checklist-submit", args=[checklist.pk])).status_code == 404


def test_editor_query_count_is_flat(author, checklist, django_assert_max_num_queries):
    def count_for_page() -> int:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as ctx:
            author.get(reverse("checklist-detail", args=[checklist.pk]))
        return len(ctx.captured_queries)

    small = count_for_page()
    for _ in range(34):
        CriterionFactory(checklist=checklist)
    assert count_for_page() == small
    # 14: the checklist loaded once for its access check and the page, the work on its
    # criteria counted in one query.
    with django_assert_max_num_queries(14):
        author.get(reverse("checklist-detail", args=[checklist.pk]))


def page_queries(client, url, params=None) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url, params or {}).status_code == 200
    return len(ctx.captured_queries)


def test_query_list_query_count_is_flat(client, owner, dataset, django_assert_max_num_queries):
    from tests.factories import QueryFactory

    client.force_login(owner)
    url = reverse("dataset-detail", args=[dataset.pk])
    for _ in range(3):
        QueryFactory(dataset=dataset)
    page_queries(client, url, {"q": "company"})  # warm per-process caches (content types)
    few = page_queries(client, url, {"q": "company"})
    for _ in range(40):
        QueryFactory(dataset=dataset)
    assert page_queries(client, url, {"q": "company"}) == few
    with django_assert_max_num_queries(8):
        client.get(url, {"q": "company", "status": "open", "mine": "on"})


def test_progress_page_for_dataset_admins(client, owner, collaborator, checklist, dataset):
    client.force_login(owner)
    page = client.get(reverse("dataset-progress", args=[dataset.pk])).content.decode()
    assert collaborator.username in page
    client.force_login(collaborator)
    assert client.get(reverse("dataset-progress", args=[dataset.pk])).status_code == 403


def test_admin_assigns_experts_on_the_query_page(client, owner, collaborator, query):
    client.force_login(owner)
    response = client.post(reverse("query-assign", args=[query.pk]), {"experts": [collaborator.pk]})
    assert response.status_code == 302
    assert list(query.assigned_experts.all()) == [collaborator]


def test_a_stale_tab_posting_to_a_submitted_checklist_gets_a_clear_answer(author, checklist):
    services.checklist_submit(checklist=checklist, by=checklist.author)
    criterion = checklist.criteria.first()
    url = reverse("criterion-update", args=[criterion.pk])
    data = {"text": "States something else.", "kind": "fact", "weight": "1"}
    response = author.post(url, data, **HTMX)
    assert response.status_code == 409
    assert "Reopen it" in response.content.decode()
    followed = author.post(url, data, follow=True)
    assert "Reopen it" in followed.content.decode()
    criterion.refresh_from_db()
    assert criterion.text != "States something else."
