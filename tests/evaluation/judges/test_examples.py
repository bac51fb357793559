"""A dataset's instructions and worked examples for a judge in pages and API (issues 25 and
38): examples picked from the dataset's adjudications of submitted checklists by hand or
automatically (balanced, within a token budget), each keeping its source; a run records the
items; validation errors name the example and its field; only the dataset's admins change
the tuning; the prompt a verdict was made with is served by the API."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from annotation import roles, services
from evaluation.judges import examples, tuning
from evaluation.judges.models import Judge, JudgeVersion
from evaluation.labels.models import Adjudication
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from evaluation.runs.models import Verdict
from tests.factories import (
    AnswerFactory,
    PanelFactory,
    UserFactory,
    loopback_judges,
    valid_criteria,
)

pytestmark = pytest.mark.django_db

GOOD = {"criterion": "States revenue.", "excerpt": "Revenue was $4B.", "decision": "pass",
        "reason": "Stated."}  # fmt: skip


def examples_of(judge, dataset) -> list:
    """The dataset's stored examples for the judge."""
    row = tuning.stored(judge, dataset.pk)
    return row.examples if row else []


@pytest.fixture
def adjudicated(reviewed_dataset, query, collaborator):
    """Twelve adjudications of one answer's six criteria and another answer's, alternating
    pass and fail, the reasons quoting the answer."""
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    criteria = list(checklist.criteria.order_by("position"))
    text = "Intro. " * 400 + "Revenue was $4.12 billion in Q3, a record. " + "Outro. " * 400
    made = []
    for n, answer in enumerate([AnswerFactory(query=query, text=text), AnswerFactory(query=query)]):
        for m, criterion in enumerate(criteria):
            made.append(
                Adjudication.objects.create(
                    answer=answer,
                    criterion=criterion,
                    label=("pass", "fail")[(n + m) % 2],
                    reason='It says "Revenue was $4.12 billion in Q3".',
                )
            )
    return made


def test_examples_are_picked_saved_and_recorded_by_runs(
    adjudicated, reviewed_dataset, client, owner, loopback_openai
):
    (judge,) = loopback_judges(loopback_openai, 1)
    client.force_login(owner)
    url = reverse("judge-examples", args=[reviewed_dataset.pk, judge.pk])
    page = client.get(url)
    assert page.status_code == 200
    assert page.content.decode().count("data-adjudication=") == len(adjudicated)

    # Automatic: ticks a balanced choice within the budget, writes nothing.
    budget = 3 * max(c.tokens for c in examples.candidates(reviewed_dataset))
    auto = client.post(url, {"auto": "1", "budget": budget})
    assert auto.status_code == 200
    ticked = [c for c, on in auto.context["rows"] if on]
    decisions = [c.decision for c in ticked]
    assert len(ticked) >= 3 and abs(decisions.count("pass") - decisions.count("fail")) <= 1
    assert sum(c.tokens for c in ticked) <= budget
    assert examples_of(judge, reviewed_dataset) == []

    # Saved by hand: each example keeps its source; typed examples stay.
    tuning.tuning_save(judge=judge, dataset=reviewed_dataset, examples=[GOOD], by=owner)
    chosen = [adjudicated[0].pk, adjudicated[3].pk]
    listed = [a.pk for a in adjudicated]
    saved = client.post(url, {"save": "1", "adjudication": chosen, "listed": listed})
    assert saved.status_code == 302
    stored = examples_of(judge, reviewed_dataset)
    assert stored[0] == GOOD
    sources = [e["source"] for e in stored[1:]]
    assert {s["adjudication"] for s in sources} == set(chosen)
    first = next(e for e in stored[1:] if e["source"]["adjudication"] == chosen[0])
    assert "Revenue was $4.12 billion in Q3" in first["excerpt"]  # the window the reason quotes
    assert len(first["excerpt"]) <= examples.EXCERPT_CHARS
    assert first["decision"] == adjudicated[0].label
    version = tuning.version("verdict-v1", "", stored)
    assert JudgeVersion.objects.filter(
        judge=judge, dataset=reviewed_dataset, version=version, created_by=owner
    ).exists()

    # A run records the items its judge was shown (for agreement to leave them out).
    panel = PanelFactory(judges=[judge])
    run = runs.run_start(run=runs.run_create(dataset=reviewed_dataset, panel=panel, by=owner))
    member = run.snapshot["members"][0]
    assert member["prompt_version"] == version
    assert sorted(map(tuple, member["example_items"])) == sorted(
        (a.answer_id, a.criterion_id) for a in adjudicated if a.pk in chosen
    )
    # ... and the examples are in every prompt it sends.
    answer = adjudicated[-1].answer
    lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    assert all("Worked examples" in c.request.messages[0]["content"] for c in loopback_openai.calls)

    # Saved from a list of one kind: the examples of other kinds stay.
    kind = adjudicated[0].criterion.kind
    of_kind = [a.pk for a in adjudicated if a.criterion.kind == kind]
    assert adjudicated[3].pk not in of_kind
    client.post(url, {"kind": kind, "save": "1", "listed": of_kind})
    stored = examples_of(judge, reviewed_dataset)
    assert [e["source"]["adjudication"] for e in stored[1:]] == [adjudicated[3].pk]

    # Unticking every example listed keeps the typed one.
    client.post(url, {"save": "1", "listed": listed})
    assert examples_of(judge, reviewed_dataset) == [GOOD]


def test_auto_pick_is_balanced_recent_first_and_by_kind():
    def c(n, kind, decision, size=40):
        example = {"criterion": "C", "excerpt": "x" * size, "decision": decision, "reason": ""}
        return examples.Candidate(n, n, n, kind, "s", None, example)

    found = [c(1, "fact", "pass"), c(2, "fact", "pass"), c(3, "fact", "pass"),
             c(4, "format", "fail"), c(5, "fact", "fail", size=4000)]  # fmt: skip
    picked = examples.auto_pick(found, budget_tokens=10_000)
    assert [p.adjudication_id for p in picked] == [1, 4, 2, 5, 3]
    small = examples.auto_pick(found, budget_tokens=3 * found[0].tokens)
    assert [p.adjudication_id for p in small] == [1, 4, 2]  # 5 passed over: over budget
    by_kind = examples.auto_pick(found, budget_tokens=10_000, by_kind=True)
    assert [p.adjudication_id for p in by_kind][:3] == [1, 5, 4]


def test_the_examples_page_refuses_who_may_not_use_it(
    adjudicated, reviewed_dataset, client, reviewer, owner
):
    judge = Judge.objects.create(name="J", base_url="https://api.example.com/v1", model="m")
    url = reverse("judge-examples", args=[reviewed_dataset.pk, judge.pk])
    assert client.get(url).status_code == 302  # to the login page
    client.force_login(reviewer)  # reads the dataset's tuning, but does not change it
    assert client.get(url).status_code == 403
    assert client.post(url, {"save": "1", "adjudication": [adjudicated[0].pk]}).status_code == 403
    assert (
        client.get(reverse("judge-tuning", args=[reviewed_dataset.pk, judge.pk])).status_code == 200
    )
    admin = UserFactory(username="judge-admin")  # manages judges, on no dataset
    admin.groups.add(Group.objects.get(name=roles.Group.ADMIN.value))
    client.force_login(admin)
    assert client.get(url).status_code == 404
    assert client.post(url, {"save": "1", "adjudication": [adjudicated[0].pk]}).status_code == 404
    assert (
        client.get(reverse("judge-tuning", args=[reviewed_dataset.pk, judge.pk])).status_code == 404
    )
    assert examples_of(judge, reviewed_dataset) == []
    # An adjudication of another dataset is refused, nothing saved.
    other = services.dataset_create(name="Other", by=owner)
    client.force_login(owner)
    response = client.post(
        reverse("judge-examples", args=[other.pk, judge.pk]),
        {"save": "1", "adjudication": [adjudicated[0].pk]},
    )
    assert response.status_code == 400
    assert examples_of(judge, other) == examples_of(judge, reviewed_dataset) == []


def test_a_draft_checklist_gives_no_example(reviewed_dataset, query, owner, collaborator, client):
    """The blind rule holds through judges: an adjudication of a criterion whose checklist
    is still a draft is neither listed nor accepted as an example."""
    draft = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=False
    )
    criterion = draft.criteria.order_by("position").first()
    adjudication = Adjudication.objects.create(
        answer=AnswerFactory(query=query), criterion=criterion, label="pass", reason="Draft."
    )
    assert examples.candidates(reviewed_dataset) == []
    judge = Judge.objects.create(name="J", base_url="https://api.example.com/v1", model="m")
    client.force_login(owner)
    url = reverse("judge-examples", args=[reviewed_dataset.pk, judge.pk])
    assert client.get(url).content.decode().count("data-adjudication=") == 0
    refused = client.post(url, {"save": "1", "adjudication": [adjudication.pk]})
    assert refused.status_code == 400
    assert examples_of(judge, reviewed_dataset) == []


BAD = [GOOD, {"criterion": "", "excerpt": "x", "decision": "maybe", "colour": "red"}]


def test_bad_examples_are_refused_naming_the_example_and_field(
    client, owner, owner_api, reviewed_dataset
):
    judge = Judge.objects.create(name="Tuned", base_url="https://api.example.com/v1", model="m")
    page_url = reverse("judge-tuning", args=[reviewed_dataset.pk, judge.pk])
    client.force_login(owner)
    response = client.post(page_url, {"instructions": "", "examples": json.dumps(BAD)})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Example 2: unknown field colour." in page
    assert "Example 2: criterion is required (text)." in page
    assert "Example 2: decision must be &quot;pass&quot; or &quot;fail&quot;." in page
    response = client.post(
        page_url, {"instructions": "x" * (tuning.MAX_INSTRUCTIONS + 1), "examples": "[]"}
    )
    assert "at most 8,000" in response.content.decode()
    assert client.post(page_url, {"instructions": "", "examples": "[{"}).status_code == 400
    assert tuning.stored(judge, reviewed_dataset.pk) is None

    url = reverse("api-evaluation:judge-tuning-api", args=[reviewed_dataset.pk, judge.pk])
    response = owner_api.put(url, {"examples": BAD}, format="json")
    assert response.status_code == 400
    assert 'Example 2: decision must be "pass" or "fail".' in response.json()["examples"]
    too_many = owner_api.put(url, {"examples": [GOOD] * (tuning.MAX_EXAMPLES + 1)}, format="json")
    assert too_many.json()["examples"] == [f"{tuning.MAX_EXAMPLES + 1} examples; at most 20."]
    bad_source = owner_api.put(url, {"examples": [{**GOOD, "source": {"answer": 1}}]},
                               format="json")  # fmt: skip
    assert "Example 1: source must be" in bad_source.json()["examples"][0]
    assert tuning.stored(judge, reviewed_dataset.pk) is None

    good = owner_api.put(url, {"instructions": "Be exact.", "examples": [GOOD]}, format="json")
    assert good.status_code == 200
    data = good.json()
    assert data["examples"] == [GOOD] and data["instructions"] == "Be exact."
    assert data["version"] == tuning.version("verdict-v1", "Be exact.", [GOOD])
    assert JudgeVersion.objects.get(judge=judge, dataset=reviewed_dataset).created_by == owner
    # PATCH changes one part; PUT replaces both.
    patched = owner_api.patch(url, {"instructions": "Be brief."}, format="json").json()
    assert patched["examples"] == [GOOD] and patched["instructions"] == "Be brief."
    put = owner_api.put(url, {"instructions": "Only this."}, format="json").json()
    assert put["examples"] == [] and put["instructions"] == "Only this."
    # The judge itself carries none of it.
    judge_body = owner_api.get(reverse("api-evaluation:judge-detail", args=[judge.pk])).json()
    assert "examples" not in judge_body and "instructions" not in judge_body


def test_tuning_api_follows_the_dataset_permissions(
    reviewed_dataset, owner_api, reviewer_api, outsider_api
):
    judge = Judge.objects.create(name="J", base_url="https://api.example.com/v1", model="m")
    url = reverse("api-evaluation:judge-tuning-api", args=[reviewed_dataset.pk, judge.pk])
    owner_api.put(url, {"instructions": "Secret rule."}, format="json")
    assert reviewer_api.get(url).json()["instructions"] == "Secret rule."
    assert reviewer_api.patch(url, {"instructions": "x"}, format="json").status_code == 403
    assert outsider_api.get(url).status_code == 404
    assert outsider_api.patch(url, {"instructions": "x"}, format="json").status_code == 404
    listed = reviewer_api.get(
        reverse("api-evaluation:dataset-tunings-api", args=[reviewed_dataset.pk])
    ).json()
    assert [(t["judge"], t["instructions"]) for t in listed] == [(judge.pk, "Secret rule.")]
    assert tuning.stored(judge, reviewed_dataset.pk).instructions == "Secret rule."


INSTRUCTIONS = "Figures within 1%."


@pytest.fixture
def tuned_verdict(reviewed_dataset, query, collaborator, owner, loopback_openai):
    """A verdict of a run whose judge carries instructions and a worked example, graded on
    the loopback server (its calls recorded)."""
    services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    answer = AnswerFactory(query=query)
    (judge,) = loopback_judges(loopback_openai, 1)
    tuning.tuning_save(
        judge=judge, dataset=reviewed_dataset, instructions=INSTRUCTIONS, examples=[GOOD], by=owner
    )
    panel = PanelFactory(judges=[judge])
    run = runs.run_start(run=runs.run_create(dataset=reviewed_dataset, panel=panel, by=owner))
    lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    return run.verdicts.order_by("pk").first()


def sent_for(verdict, loopback_openai) -> list[dict]:
    """The messages the loopback server received for the verdict's criterion."""
    return next(
        c.request.messages for c in loopback_openai.calls
        if c.request.last_user_text.endswith(verdict.criterion.text)
    )  # fmt: skip


def test_the_prompt_of_a_verdict_is_served_by_the_api(
    tuned_verdict, reviewer_api, outsider_api, loopback_openai
):
    verdict = tuned_verdict
    url = reverse("api-evaluation:verdict-prompt", args=[verdict.pk])
    body = reviewer_api.get(url).json()
    assert body["messages"] == sent_for(verdict, loopback_openai)
    assert body["prompt_version"] == tuning.version("verdict-v1", INSTRUCTIONS, [GOOD])
    assert outsider_api.get(url).status_code == 404


def test_the_prompt_sent_has_a_page_linked_from_the_run_answer(
    tuned_verdict, reviewer, outsider, client, loopback_openai
):
    verdict, run, answer = tuned_verdict, tuned_verdict.run, tuned_verdict.answer
    url = reverse("verdict-prompt-page", args=[verdict.pk])

    client.force_login(reviewer)
    listing = client.get(reverse("run-answer", args=[run.pk, answer.pk])).content.decode()
    assert f'href="{url}"' in listing
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert tuning.version("verdict-v1", INSTRUCTIONS, [GOOD]) in html
    assert page.context["sent"].messages == sent_for(verdict, loopback_openai)
    assert INSTRUCTIONS in html and "Worked examples" in html  # the system message

    # A verdict no prompt made (imported, here) says so instead of inventing one.
    Verdict.objects.filter(pk=verdict.pk).update(judge_params={"kind": "external"})
    assert "not made by a judge prompt" in client.get(url).content.decode()

    # Outsiders: a hidden verdict answers as a missing one.
    client.force_login(outsider)
    hidden = client.get(url)
    missing = client.get(reverse("verdict-prompt-page", args=[verdict.pk + 10_000]))
    assert hidden.status_code == missing.status_code == 404
    # Equal but for the per-response CSP nonce and masked CSRF token.
    pages = [re.sub(rb"[A-Za-z0-9+/=_-]{20,}", b"", r.content) for r in (hidden, missing)]
    assert pages[0] == pages[1]
