"""Messages that fit the page (issue 28, item 7): site-wide pages say which site-wide role
they need, dataset pages which role on the dataset; actions are offered only to those who
may use them; criterion health tells rows of the same text apart; Test connection says one
human sentence; an empty dataset says what to do next; the panel form adds rows."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from annotation import roles
from annotation.services import dataset_set_role
from evaluation.judges.models import Judge, Panel
from tests.factories import UserFactory
from tests.support.builders import checklisted_query

pytestmark = pytest.mark.django_db

SITE_WIDE = "needs the Admin role site-wide"
DATASET_ROLE = "Your role on this dataset does not allow this"


def _text(response) -> str:
    return html.unescape(response.content.decode())


@pytest.mark.parametrize(
    ("name", "args", "action"),
    [
        ("judge-list", [], "Managing judges"),
        ("judge-create", [], "Adding a judge"),
        ("panel-list", [], "Managing panels"),
        ("panel-create", [], "Adding a panel"),
        ("guideline-list", [], "Managing guidelines"),
        ("guideline-create", [], "Adding a guideline"),
        ("dataset-create", [], "Creating a dataset"),
    ],
)
def test_site_wide_pages_name_the_site_wide_role(client, collaborator, name, args, action):
    client.force_login(collaborator)  # an expert, of the Expert group
    response = client.get(reverse(name, args=args))
    assert response.status_code == 403
    text = _text(response)
    assert f"{action} {SITE_WIDE}" in text and "ask a site administrator" in text
    assert DATASET_ROLE not in text


def test_a_judge_page_refusal_names_the_site_wide_role(client, collaborator):
    judge = Judge.objects.create(name="J", base_url="http://x/v1", model="m")
    client.force_login(collaborator)
    for response in (
        client.get(reverse("judge-edit", args=[judge.pk])),
        client.post(reverse("judge-test", args=[judge.pk])),
    ):
        assert response.status_code == 403 and SITE_WIDE in _text(response)


def test_the_import_page_says_its_own_reason_not_the_datasets(client, collaborator):
    client.force_login(collaborator)
    response = client.get(reverse("dataset-import"))
    assert response.status_code == 403
    text = _text(response)
    assert "Importing needs the Admin role site-wide" in text and DATASET_ROLE not in text
    assert "or the admin role on a dataset, to import into it" in text


def test_a_dataset_page_names_the_role_it_needs_on_the_dataset(client, dataset, collaborator):
    client.force_login(collaborator)
    text = _text(client.get(reverse("review-queue", args=[dataset.pk])))
    assert f"{DATASET_ROLE}: it needs the reviewer or admin role on it." in text
    assert "Ask one of the dataset's admins." in text
    text = _text(client.get(reverse("dataset-edit", args=[dataset.pk])))
    assert "it needs the admin role on it" in text


def test_reviewers_are_not_offered_to_start_runs(client, reviewed_dataset, reviewer, owner):
    client.force_login(reviewer)
    runs = _text(client.get(reverse("dataset-runs", args=[reviewed_dataset.pk])))
    assert "Start a run" not in runs and 'method="post"' not in runs.split("<main")[1]
    assert "The dataset's admins start runs" in runs
    cross = _text(client.get(reverse("dataset-cross-evaluation", args=[reviewed_dataset.pk])))
    assert "Start cross-evaluation" not in cross
    client.force_login(owner)
    runs = _text(client.get(reverse("dataset-runs", args=[reviewed_dataset.pk])))
    assert "Start a run" in runs and "The dataset's admins start runs" not in runs


# --- Criterion health -------------------------------------------------------------------------


def test_criterion_health_names_each_rows_query_and_author(client, reviewed_dataset, owner):
    from evaluation.analytics import figures
    from tests.factories import PanelFactory, external_judges
    from tests.support.builders import finished_run

    same = "States revenue of $4.12 billion."
    made = [
        checklisted_query(
            reviewed_dataset, criteria=[same, "Reports a margin of 61.5%."], answers=1,
            author=UserFactory(username=author), text=text,
        )
        for author, text in (("ann", "First query about Northwind"), ("bob", "Second query"))
    ]  # fmt: skip
    run = finished_run(
        reviewed_dataset, PanelFactory(judges=external_judges(1)),
        {(m.answers[0], c): ("fail",) for m in made for c in m.criteria},
    )  # fmt: skip
    figures.warm(run)
    client.force_login(owner)
    page = client.get(reverse("analytics-criteria", args=[reviewed_dataset.pk]), {"run": run.pk})
    text = _text(page)
    assert "<th>Query</th><th>Author</th>" in text
    rows = [r for r in text.split("<tr>") if same in r]
    assert len(rows) == 2
    for m, author in zip(made, ("ann", "bob"), strict=True):
        (row,) = [r for r in rows if f"<td>{author}</td>" in r]
        assert reverse("query-detail", args=[m.query.pk]) in row


# --- Test connection --------------------------------------------------------------------------


def test_test_connection_says_one_human_sentence(client, owner, monkeypatch):
    monkeypatch.delenv("JUDGE_KEY_ISSUE28", raising=False)
    monkeypatch.setenv("JUDGE_KEY_VARIABLES", "JUDGE_KEY_ISSUE28")
    judge = Judge.objects.create(
        name="Keyless", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="JUDGE_KEY_ISSUE28"
    )
    client.force_login(owner)
    response = client.post(reverse("judge-test", args=[judge.pk]), HTTP_HX_REQUEST="true")
    text = _text(response)
    shown = text.split('data-connection="missing_key">', 1)[1].split("</p>", 1)[0]
    assert "not connected" in shown and "missing_key" not in shown
    assert shown.count("is not set") == 1 and shown.count("no call was made") == 1
    assert "JUDGE_KEY_ISSUE28 is not set in the web process's environment" in shown


@pytest.mark.parametrize(
    ("kind", "message", "sentence"),
    [
        ("unauthorized", "HTTP 401", "The endpoint refused the API key (HTTP 401)."),
        ("server_error", "HTTP 503", "The endpoint failed (HTTP 503)."),
        ("bad_request", "", "The endpoint rejected the request (HTTP 400)."),
        ("error", "HTTP 418", "The call failed (HTTP 418)."),
        ("timeout", "", "No answer within the timeout."),
    ],
)
def test_a_failure_reads_as_one_sentence(kind, message, sentence):
    from evaluation.judging.connection import ConnectionResult

    assert ConnectionResult(False, kind, message).sentence == sentence


def test_the_test_connection_button_clears_the_pages_old_messages(client, owner):
    client.force_login(owner)
    from tests.evaluation.judges.test_pages import form_data

    response = client.post(reverse("judge-create"), form_data(name="Fresh"), follow=True)
    page = response.content.decode()
    assert "Judge “Fresh” created." in page
    # The button's form asks app.js to remove the messages when it is pressed (htmx swaps
    # only the result: the "created" message would stay above it otherwise).
    form = page.split('hx-target="#connection-result"', 1)[1].split(">", 1)[0]
    assert "data-clears-messages" in form


# --- Empty dataset ----------------------------------------------------------------------------


def test_an_empty_dataset_says_what_to_do_next(client, dataset, owner, collaborator, reviewer):
    dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    url = reverse("dataset-detail", args=[dataset.pk])
    client.force_login(owner)
    text = _text(client.get(url))
    assert "No query matches" not in text and "No queries yet." in text
    assert reverse("query-create", args=[dataset.pk]) in text.split("No queries yet.")[1]
    assert reverse("dataset-import") in text.split("No queries yet.")[1]
    client.force_login(reviewer)
    text = _text(client.get(url))
    assert "The dataset's admins add its queries" in text
    client.force_login(collaborator)  # experts may add queries by default
    text = _text(client.get(url))
    assert "Add the first query" in text and reverse("dataset-import") not in text
    text = _text(client.get(url, {"q": "nothing like this"}))
    assert "No query matches these filters." in text and "No queries yet." not in text


def _empty_note(response) -> str:
    """The text of the page's empty state (`data-empty`)."""
    return _text(response).split("data-empty", 1)[1].split("</", 1)[0]


def test_an_empty_datasets_other_pages_say_what_to_do_next(client, dataset, owner, reviewer):
    dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    runs = reverse("dataset-runs", args=[dataset.pk])

    def page(name, **params):
        return client.get(reverse(name, args=[dataset.pk]), params)

    client.force_login(owner)
    queue = _empty_note(page("review-queue"))
    assert runs in queue and "Start a run" in queue
    assert runs in _text(page("analytics-criteria")).split("data-empty")[1]
    assert "Upload the systems' answers below" in _empty_note(page("dataset-answers"))
    progress = _text(page("dataset-progress")).split("data-empty")[1]
    assert reverse("query-create", args=[dataset.pk]) in progress
    assert "start one below" in _empty_note(page("dataset-cross-evaluation"))
    filtered = _empty_note(page("review-queue", q="nothing like this"))
    assert "Nothing matches these filters." in filtered
    client.force_login(reviewer)
    assert "The dataset's admins start runs." in _empty_note(page("review-queue"))
    assert "The dataset's admins upload" in _empty_note(page("dataset-answers"))
    assert "start one below" not in _empty_note(page("dataset-cross-evaluation"))


def test_a_site_admin_without_datasets_is_told_to_make_one(client, owner):
    client.force_login(owner)  # of the Admin group, on no dataset
    text = _text(client.get(reverse("home"))).split("data-empty", 1)[1]
    assert reverse("dataset-create") in text and reverse("dataset-import") in text


def test_a_dataset_admin_outside_the_admin_group_is_not_sent_to_the_judges(
    client, dataset, collaborator, owner
):
    dataset_set_role(dataset=dataset, user=collaborator, role=roles.DatasetRole.ADMIN)
    client.force_login(collaborator)  # of the Expert group: judges and panels refuse them
    text = _text(client.get(reverse("dataset-runs", args=[dataset.pk])))
    assert "Start a run" in text and "set up by the site's Admin group" in text
    assert reverse("judge-list") not in text and reverse("panel-list") not in text
    client.force_login(owner)
    text = _text(client.get(reverse("dataset-runs", args=[dataset.pk])))
    assert reverse("judge-list") in text and reverse("panel-list") in text


# --- Panel form ---------------------------------------------------------------------------------


def test_the_panel_form_offers_an_add_row_button_and_takes_the_rows_it_adds(client, owner):
    from tests.evaluation.judges.test_pages import panel_data

    judges = [
        Judge.objects.create(name=f"J{i}", base_url="http://x/v1", model="m") for i in (1, 2, 3)
    ]
    client.force_login(owner)
    page = client.get(reverse("panel-create")).content.decode()
    assert "Save, and two empty rows come back" in page.split("<noscript>")[1]  # no JS only
    assert 'data-add-row="members" hidden>Add row</button>' in page
    template = page.split('<template data-empty-row-of="members">', 1)[1].split("</template>")[0]
    assert (
        'name="members-__prefix__-judge"' in template
        and "(row <span data-row-number>__row__" in template
    )
    # What the button does, as the server sees it: a third row, TOTAL_FORMS counted up.
    data = panel_data([(judges[0], 1, ""), (judges[1], 2, ""), (judges[2], 1, "0.3")])
    assert client.post(reverse("panel-create"), data).status_code == 302
    panel = Panel.objects.get(name="Three models")
    assert sorted(m.judge.name for m in panel.members.all()) == ["J1", "J2", "J3"]
