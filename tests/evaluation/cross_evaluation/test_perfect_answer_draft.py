"""Draft with an LLM: a Celery task asks the judge for an answer satisfying every criterion
(from the query, its date and the criteria), the page polls, then the draft is editable and
says which LLM and prompt version wrote it."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.urls import reverse

from evaluation.answers.models import Answer
from evaluation.judges.models import Judge
from evaluation.judging import drafting
from loopback import LoopbackOpenAI
from tests.evaluation.cross_evaluation.two_queries import codes
from tests.support.builders import checklisted_query


def poll(client, checklist, timeout: float = 60.0):
    url = reverse("perfect-answer-draft-status", args=[checklist.pk])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = client.get(url, headers={"HX-Request": "true", "HX-Target": "draft-status"})
        assert response.status_code == 200
        if response.get("HX-Refresh") == "true":
            return response
        assert "drafting" in response.content.decode()
        time.sleep(0.3)
    raise AssertionError("the draft did not finish")


def test_an_llm_drafts_then_the_expert_edits(celery_worker, client, query, collaborator):
    query.query_date = dt.date(2025, 3, 31)
    query.text = "Summarise the quarter of company one."
    query.save()
    checklist = checklisted_query(query=query, author=collaborator, criteria=codes(1, 2)).checklist
    prompts = []

    def drafter(request):
        prompts.append(request.last_user_text)
        if len(prompts) == 1:
            return {"answer": "Revenue: **K1**; margin: K2."}
        return {"answer": "   "}  # an empty answer cannot be used

    with LoopbackOpenAI(responder=drafter) as server:
        judge = Judge.objects.create(name="Drafter", base_url=server.base_url, model="m")
        client.force_login(collaborator)
        page = reverse("perfect-answer", args=[checklist.pk])
        response = client.post(
            reverse("perfect-answer-draft", args=[checklist.pk]), {"judge": judge.pk}
        )
        assert response.status_code == 302
        assert 'id="draft-status"' in client.get(page).content.decode()
        poll(client, checklist)

        answer = Answer.objects.get(checklist=checklist)
        assert answer.text == "Revenue: **K1**; margin: K2."
        assert (answer.drafted_by, answer.author) == (judge, None)
        assert answer.draft_prompt_version == drafting.PROMPT_VERSION
        assert "2025-03-31" in prompts[0] and "company one" in prompts[0]
        assert (
            "1. [fact] States figure K1." in prompts[0]
            and "2. [fact] States figure K2." in prompts[0]
        )
        html = client.get(page).content.decode()
        assert (
            "Drafted by <strong>Drafter</strong>" in html
            and "The LLM&#x27;s draft is ready" in html
        )

        # The expert edits the draft: the drafting LLM is kept, the editor recorded.
        client.post(page, {"text": "Revenue: **K1**; margin: K2 (edited)."})
        answer.refresh_from_db()
        assert (answer.drafted_by, answer.author) == (judge, collaborator)
        assert "last edited by <strong>collaborator</strong>" in client.get(page).content.decode()

        # A reply that cannot be used is reported, and the text stays as it was.
        client.post(reverse("perfect-answer-draft", args=[checklist.pk]), {"judge": judge.pk})
        poll(client, checklist)
        html = client.get(page).content.decode()
        assert "could not be parsed" in html
        answer.refresh_from_db()
        assert answer.text == "Revenue: **K1**; margin: K2 (edited)."


def test_drafting_prompt_and_parser():
    messages = drafting.messages(
        query="Q?",
        query_date=dt.date(2024, 1, 2),
        criteria=[("fact", "States X."), ("format", "Uses a table.")],
    )
    assert "as of 2024-01-02" in messages[1]["content"]
    assert "1. [fact] States X.\n2. [format] Uses a table." in messages[1]["content"]
    assert drafting.parse({"answer": " A "}) == "A"
    assert drafting.parse({"answer": ""}) is None
    assert drafting.parse({"text": "A"}) is None
    assert drafting.parse(None) is None


@pytest.mark.django_db
def test_a_late_or_repeated_draft_never_overwrites_an_edit(query, collaborator):
    from evaluation.cross_evaluation import services

    checklist = checklisted_query(query=query, author=collaborator, criteria=codes(1, 2)).checklist
    services.perfect_answer_save(checklist=checklist, text="First version K1.", by=collaborator)
    with LoopbackOpenAI(responder=lambda r: {"answer": "Drafted: K1 and K2."}) as server:
        judge = Judge.objects.create(name="Drafter", base_url=server.base_url, model="m")
        based_on = services._version(checklist.pk)
        # The expert edits while the draft is on its way: the draft is refused, no call made.
        services.perfect_answer_save(checklist=checklist, text="Edited: K1, K2.", by=collaborator)
        late = services.perfect_answer_draft_run(
            checklist_id=checklist.pk, judge_id=judge.pk, based_on=based_on
        )
        assert late["ok"] is False and "changed after the draft was asked for" in late["error"]
        assert server.call_count == 0
        assert Answer.objects.get(checklist=checklist).text == "Edited: K1, K2."

        # A draft asked for now replaces the text once; its redelivery changes nothing more.
        based_on = services._version(checklist.pk)
        first = services.perfect_answer_draft_run(
            checklist_id=checklist.pk, judge_id=judge.pk, based_on=based_on
        )
        assert first["ok"] is True
        assert Answer.objects.get(checklist=checklist).text == "Drafted: K1 and K2."
        services.perfect_answer_save(checklist=checklist, text="Fixed draft.", by=collaborator)
        again = services.perfect_answer_draft_run(
            checklist_id=checklist.pk, judge_id=judge.pk, based_on=based_on
        )
        assert again["ok"] is False
        assert Answer.objects.get(checklist=checklist).text == "Fixed draft."
        assert server.call_count == 1


@pytest.mark.django_db
def test_without_an_llm_judge_the_page_explains_instead_of_an_empty_dropdown(
    client, query, collaborator, owner
):
    """Issue 15: "Draft with an LLM" showed a required dropdown with nothing to choose."""
    checklist = checklisted_query(query=query, author=collaborator, criteria=codes(1, 2)).checklist
    page = reverse("perfect-answer", args=[checklist.pk])
    Judge.objects.create(name="Offline", kind=Judge.Kind.NO_LLM)
    client.force_login(collaborator)
    html = client.get(page).content.decode()
    assert "No LLM judge is set up" in html and 'name="judge"' not in html
    assert "ask a site admin" in html  # an expert cannot open the judges page
    client.force_login(owner)
    assert reverse("judge-list") in client.get(page).content.decode()  # an admin gets a link
    Judge.objects.create(name="Drafter", base_url="http://127.0.0.1:9/v1", model="m")
    client.force_login(collaborator)
    html = client.get(page).content.decode()
    assert 'name="judge"' in html and "No LLM judge is set up" not in html
    assert "---------" not in html  # no empty choice: the first LLM judge is chosen
