"""The review page and queue pages: who may use them, labelling and undo through htmx,
adjudication conflicts as a reviewer sees them, and flat query counts with 45 criteria."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation import roles, services
from evaluation.labels.models import Adjudication, HumanLabel, ReviewAssignment
from tests.factories import PanelFactory, UserFactory, external_judges
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def build(dataset, criteria: int, answers: int = 1):
    query = checklisted_query(dataset, criteria=criteria, answers=answers)
    crits, made = query.criteria, query.answers
    panel = PanelFactory(judges=external_judges(3))
    pattern = [("pass", "pass", "fail"), ("fail", "fail", "fail"), ("pass", "unparseable", "pass")]
    votes = {(a, c): pattern[i % 3] for a in made for i, c in enumerate(crits)}
    run = finished_run(dataset, panel, votes)
    return run, crits, made


@pytest.fixture
def small(reviewed_dataset):
    return build(reviewed_dataset, criteria=3)


def test_pages_by_role(client, small, reviewed_dataset, owner, reviewer, collaborator, outsider):
    _run, crits, (answer,) = small
    urls = [
        reverse("answer-review", args=[answer.pk]),
        reverse("review-queue", args=[reviewed_dataset.pk]),
        reverse("review-queue", args=[reviewed_dataset.pk]) + "?queue=disagreement",
    ]
    post = reverse("answer-review-label", args=[answer.pk])
    adjudicate = reverse("answer-review-adjudicate", args=[answer.pk])
    for user, code in ((owner, 200), (reviewer, 200), (collaborator, 403), (outsider, 404)):
        client.force_login(user)
        for url in urls:
            assert client.get(url).status_code == code, (user.username, url)
        data = {"criterion": crits[0].pk, "label": "pass"}
        assert client.post(post, data, **HTMX).status_code == code, user.username
        response = client.post(adjudicate, {**data, "version": ""}, **HTMX)
        assert response.status_code == code, user.username
    assert sorted(HumanLabel.objects.values_list("rater", flat=True)) == ["owner", "reviewer"]
    assert Adjudication.objects.get().decided_by == owner  # the reviewer then got a conflict


def test_review_page_shows_votes_rationales_verdicts_and_labels(client, small, reviewer, owner):
    _run, crits, (answer,) = small
    HumanLabel.objects.create(answer=answer, criterion=crits[1], rater="owner", label="pass",
                              note="The table has it.")  # fmt: skip
    client.force_login(reviewer)
    page = client.get(reverse("answer-review", args=[answer.pk])).content.decode()
    assert "Reviewed judge 2 says fail." in page and "split 2–1" in page
    assert "1 invalid" in page  # the unparseable vote is shown, apart
    assert "owner: <span" in page and "The table has it." in page
    assert "revenue was <strong>$4.0 billion</strong>" in page  # rendered, sanitised markdown
    assert f'data-criterion="{crits[2].pk}"' in page and "<kbd>u</kbd>" in page


def test_an_answer_whose_text_changed_shows_its_new_text_and_hostile_markdown_stays_inert(
    client, small, reviewer
):
    """Rendered answers are kept per process by their text (evaluation.answers.rendering):
    a changed text is rendered afresh, never the HTML kept for the text it had, and what is
    kept is the sanitised HTML, the second view as inert as the first."""
    _run, _crits, (answer,) = small
    client.force_login(reviewer)
    url = reverse("answer-review", args=[answer.pk])
    assert "revenue was <strong>$4.0 billion</strong>" in client.get(url).content.decode()
    answer.text = "Revenue was **$5.1 billion** [see](javascript:alert(1)) <script>x()</script>"
    answer.save(update_fields=["text"])
    for _ in range(2):
        page = client.get(url).content.decode()
        assert "Revenue was <strong>$5.1 billion</strong>" in page
        assert "$4.0 billion" not in page
        assert 'href="javascript' not in page and "<script>x()" not in page
        assert "&lt;script&gt;x()" in page  # shown as the text it is


def test_label_undo_and_no_javascript_fallback(client, small, reviewer):
    run, crits, (answer,) = small
    client.force_login(reviewer)
    label_url = reverse("answer-review-label", args=[answer.pk])
    undo_url = reverse("answer-review-undo", args=[answer.pk])
    row = client.post(label_url, {"criterion": crits[0].pk, "label": "fail", "run": run.pk}, **HTMX)
    assert row.status_code == 200 and 'data-own="fail"' in row.content.decode()
    assert row.content.decode().lstrip().startswith(f'<li id="row-{crits[0].pk}"')
    client.post(label_url, {"criterion": crits[0].pk, "label": "pass"}, **HTMX)
    client.post(label_url, {"criterion": crits[1].pk, "label": "pass"}, **HTMX)
    undone = client.post(undo_url, {"run": run.pk}, **HTMX)
    assert undone["HX-Retarget"] == f"#row-{crits[1].pk}"
    assert not HumanLabel.objects.filter(criterion=crits[1]).exists()  # it was new: deleted
    client.post(undo_url, **HTMX)
    assert HumanLabel.objects.get(criterion=crits[0]).label == "fail"  # restored
    client.post(undo_url, **HTMX)
    assert not HumanLabel.objects.exists()
    nothing = client.post(undo_url, **HTMX)
    assert nothing["HX-Retarget"] == "#review-status" and b"Nothing to undo" in nothing.content
    # Without JavaScript the form posts and comes back to the page.
    plain = client.post(label_url, {"criterion": crits[2].pk, "label": "pass"})
    assert plain.status_code == 302 and plain["Location"].endswith(f"#row-{crits[2].pk}")
    assert client.post(label_url, {"criterion": crits[2].pk, "label": "maybe"}).status_code == 400


def test_rows_escape_what_people_wrote_and_show_a_decision_in_local_time(
    client, small, reviewer, owner, settings
):
    """The rows are rendered by Jinja2 (config/jinja.py): what people typed is escaped there
    as on every page, in the page and in the one row a label sends back."""
    run, crits, (answer,) = small
    hostile = '<script>alert("x")</script>'
    crits[0].text = f"Names the figure {hostile}"
    crits[0].save()
    HumanLabel.objects.create(answer=answer, criterion=crits[0], rater="owner", label="fail",
                              note=hostile)  # fmt: skip
    Adjudication.objects.create(
        answer=answer, criterion=crits[0], label="pass", reason=hostile, decided_by=None
    )
    Adjudication.objects.update(decided_at=dt.datetime(2026, 3, 1, 23, 30, tzinfo=dt.UTC))
    settings.TIME_ZONE = "Europe/Paris"
    client.force_login(reviewer)
    page = client.get(reverse("answer-review", args=[answer.pk])).content.decode()
    label = reverse("answer-review-label", args=[answer.pk])
    row = client.post(label, {"criterion": crits[0].pk, "label": "pass", "run": run.pk}, **HTMX)
    for html in (page, row.content.decode()):
        assert "<script>alert" not in html
        # The text (its label and its head), the note, the reason (shown and in its field).
        assert html.count("&lt;script&gt;alert(") == 5
        assert "by a former user, 2026-03-02 00:30" in html  # the deciding user was deleted
        assert 'name="csrfmiddlewaretoken" value="' in html
    assert page.count('name="csrfmiddlewaretoken"') >= 2 * len(crits)


def test_criteria_of_other_queries_or_drafts_are_not_found(
    client, small, reviewed_dataset, reviewer
):
    _run, crits, (answer,) = small
    other = checklisted_query(reviewed_dataset, criteria=1, answers=1).criteria
    client.force_login(reviewer)
    url = reverse("answer-review-label", args=[answer.pk])
    assert client.post(url, {"criterion": other[0].pk, "label": "pass"}).status_code == 404
    crits[0].checklist.status = "draft"
    crits[0].checklist.save()
    assert client.post(url, {"criterion": crits[0].pk, "label": "pass"}).status_code == 404
    assert not HumanLabel.objects.exists()


def test_second_adjudicator_sees_the_first_decision_and_decides_again(
    client, small, reviewed_dataset, reviewer, owner
):
    run, crits, (answer,) = small
    url = reverse("answer-review-adjudicate", args=[answer.pk])
    data = {"criterion": crits[0].pk, "version": "", "run": run.pk}
    client.force_login(reviewer)
    client.post(url, {**data, "label": "fail", "reason": "No Q3 figure."}, **HTMX)
    client.force_login(owner)  # loaded the page before the reviewer decided
    row = client.post(url, {**data, "label": "pass", "reason": "Close enough."}, **HTMX)
    html = row.content.decode()
    assert row.status_code == 200 and "Someone decided first." in html
    assert "by reviewer" in html and "No Q3 figure." in html and 'name="version" value="1"' in html
    assert Adjudication.objects.get().label == "fail"  # nothing overwritten
    again = client.post(url, {**data, "label": "pass", "version": "1"}, **HTMX)
    assert "Someone decided first." not in again.content.decode()
    assert Adjudication.objects.get().version == 2
    stale = client.post(url, {**data, "label": "fail", "version": "1"})  # without htmx
    assert stale.status_code == 409 and "Someone decided first." in stale.content.decode()


def test_queue_page_assignment_and_next(client, small, reviewed_dataset, reviewer, owner):
    _run, crits, (answer,) = small
    other = UserFactory(username="other-reviewer")
    services.dataset_set_role(dataset=reviewed_dataset, user=other, role=roles.DatasetRole.REVIEWER)
    queue = reverse("review-queue", args=[reviewed_dataset.pk])
    assign = reverse("review-assign", args=[reviewed_dataset.pk])
    client.force_login(reviewer)
    page = client.get(queue + "?queue=disagreement").content.decode()
    assert "split 2–1" in page and "Take" in page
    taken = client.post(assign, {"queue": "disagreement", "answer": answer.pk,
                                 "criterion": crits[0].pk, "assignee": "me"}, **HTMX)  # fmt: skip
    assert "Release" in taken.content.decode()
    mine = client.get(queue + "?queue=disagreement&mine=1").content.decode()
    assert "1 item." in mine
    client.force_login(other)
    refused = client.post(assign, {"queue": "disagreement", "answer": answer.pk,
                                   "criterion": crits[0].pk, "assignee": "me"}, **HTMX)  # fmt: skip
    assert "Already assigned to reviewer" in refused.content.decode()
    client.force_login(owner)
    client.post(assign, {"queue": "labelling", "answer": answer.pk, "assignee": other.pk}, **HTMX)
    assert ReviewAssignment.objects.get(queue="labelling").assignee == other
    reviewed_dataset.label_policy = "all"
    reviewed_dataset.save()
    nxt = client.get(reverse("review-next", args=[reviewed_dataset.pk]) + "?queue=labelling")
    assert nxt.status_code == 302 and reverse("answer-review", args=[answer.pk]) in nxt["Location"]


def test_queue_rows_escape_what_people_wrote_and_carry_the_csrf_field(
    client, small, reviewed_dataset, reviewer, owner
):
    """The queues' rows are rendered by Jinja2 (config/jinja.py): the query's and the
    criterion's text are escaped there as on every page, each row's assignment form and the
    cell an assignment sends back carry the CSRF field, and an admin's select marks who holds
    the item."""
    _run, crits, (answer,) = small
    hostile = '<script>alert("x")</script>'
    answer.query.text = f"Revenue {hostile}"
    answer.query.save()
    crits[0].text = f"Names the figure {hostile}"
    crits[0].save()
    queue = reverse("review-queue", args=[reviewed_dataset.pk])
    assign = reverse("review-assign", args=[reviewed_dataset.pk])
    client.force_login(reviewer)
    labelling = client.get(queue + "?queue=labelling").content.decode()
    disagreement = client.get(queue + "?queue=disagreement").content.decode()
    taken = client.post(assign, {"queue": "disagreement", "answer": answer.pk,
                                 "criterion": crits[0].pk, "assignee": "me"}, **HTMX)  # fmt: skip
    cell = taken.content.decode()
    for html in (labelling, disagreement, cell):
        assert "<script>alert" not in html and 'name="csrfmiddlewaretoken" value="' in html
    assert "Revenue &lt;script&gt;alert(" in labelling
    assert "Names the figure &lt;script&gt;alert(" in disagreement
    rows = disagreement.count('class="assign-form"')
    assert rows >= 1 and disagreement.count('name="csrfmiddlewaretoken"') >= rows
    assert cell.startswith(f'<div class="assignment" id="assign-{answer.pk}-{crits[0].pk}">')
    assert "Release" in cell and f'hx-post="{assign}"' in cell
    client.force_login(owner)
    page = client.get(queue + "?queue=disagreement").content.decode()
    assert f'<option value="{reviewer.pk}" selected>{reviewer.username}</option>' in page


def test_a_perfect_answer_without_a_run_can_be_reviewed(client, reviewed_dataset, reviewer):
    made = checklisted_query(reviewed_dataset, criteria=2, answers=1)
    crits, (answer,) = made.criteria, made.answers
    other_checklist = crits[0].checklist
    answer.checklist = other_checklist  # written for a checklist, graded against the others
    answer.save()
    client.force_login(reviewer)
    page = client.get(reverse("answer-review", args=[answer.pk]))
    assert page.status_code == 200 and "No run graded this answer" in page.content.decode()
    url = reverse("answer-review-label", args=[answer.pk])
    assert client.post(url, {"criterion": crits[1].pk, "label": "pass"}, **HTMX).status_code == 200


def _counts(client, dataset, criteria: int) -> dict[str, int]:
    run, crits, answers = build(dataset, criteria=criteria, answers=3)
    for c in crits:
        HumanLabel.objects.create(answer=answers[0], criterion=c, rater="owner", label="pass")
    Adjudication.objects.create(answer=answers[0], criterion=crits[0], label="fail")
    queue = reverse("review-queue", args=[dataset.pk])
    requests = {
        "page": lambda: client.get(reverse("answer-review", args=[answers[0].pk])),
        "page from the queue": lambda: client.get(
            reverse("answer-review", args=[answers[0].pk])
            + f"?queue=disagreement&criterion={crits[1].pk}&author={crits[1].checklist.author_id}"
        ),
        "label": lambda: client.post(
            reverse("answer-review-label", args=[answers[0].pk]),
            {"criterion": crits[1].pk, "label": "fail", "run": run.pk}, **HTMX,
        ),
        "undo": lambda: client.post(reverse("answer-review-undo", args=[answers[0].pk]), **HTMX),
        "labelling queue": lambda: client.get(queue),
        "disagreement queue": lambda: client.get(queue + "?queue=disagreement"),
        # Asked again: read from the kept order.
        "labelling queue, kept": lambda: client.get(queue),
        "disagreement queue, kept": lambda: client.get(queue + "?queue=disagreement"),
    }  # fmt: skip
    counts = {}
    for name, request in requests.items():
        with CaptureQueriesContext(connection) as captured:
            assert request().status_code == 200, name
        counts[name] = len(captured)
    return counts


def test_query_counts_stay_flat_as_criteria_grow(client, reviewed_dataset, reviewer, owner):
    client.force_login(reviewer)
    small = _counts(client, reviewed_dataset, criteria=3)
    big_dataset = services.dataset_create(name="Big", by=owner)
    services.dataset_set_role(dataset=big_dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    big = _counts(client, big_dataset, criteria=45)
    assert big == small, (small, big)
    # And absolute bounds, so that a new query per page shows up here.
    # A label write also bumps the dataset's review revision (two statements: the dataset,
    # the upsert), which keys the cached agreement figures and scores.
    # The audit history (django-simple-history) adds one row per label write, and the kept
    # queue orders of the dataset are looked up to move with it (review.moves). The item's
    # agreement counts before the write are read before the counters are locked, so the
    # counters and the kept counts are read once more than under the lock alone (three
    # statements that no other reviewer waits for: evaluation.agreement.delta).
    assert big["page"] <= 14 and big["label"] <= 28 and big["undo"] <= 28
    # The first queue page (no order kept yet: the label before moved none) looks for an
    # order kept at newer counters, then orders the queue and keeps it (the writes of
    # evaluation.review.kept, with its fill lock and the counters held on PostgreSQL); the
    # next ones read a page of the kept rows.
    assert big["labelling queue"] <= 37 and big["disagreement queue"] <= 32
    assert big["labelling queue, kept"] <= 17 and big["disagreement queue, kept"] <= 17
    assert big["page from the queue"] <= 22  # the page, plus the cached queue and filters
