"""The stability pass (issue 43, point 2): an admin asks for a fixed sample of an ended run's
items to be graded k times by one judge of its panel, past the cache. On a scripted judge
that flips a known share of the items, the pass (on a real Celery worker, the real openai
client against the loopback server) reports that share within its interval, per criterion
and overall, and the run it measures shows those figures; its calls are exactly its own
and its estimate's. Bad requests are refused naming the field, with nothing created; a
second request while a pass runs is refused, never two."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.alerts.services import previous_run
from evaluation.judges.models import Judge
from evaluation.metrics import intervals
from evaluation.runs import lifecycle, sampling, stability_pass
from evaluation.runs import services as runs
from evaluation.runs.models import Run, RunItem, Verdict
from evaluation.runs.selectors import runs_of_system_answers
from evaluation.runs.stability import measured_on, run_stability
from tests.factories import PanelFactory, loopback_judges
from tests.support.builders import checklisted_query
from tests.support.flipping import alternating_judge

pytestmark = pytest.mark.django_db

CRITERIA, ANSWERS = 6, 5
# Criterion position -> the answers (by number) on which the scripted judge flips: the
# first criterion on every answer, the second on two of five, the others never.
FLIPPING = {0: set(range(ANSWERS)), 1: {0, 1}}


def flipping_judge():
    """The scripted judge: it flips on the FLIPPING items, on every repeated call."""
    return alternating_judge(
        lambda text: any(
            f"States figure {c} of the query." in text
            and any(f"Answer {a}: revenue" in text for a in answers)
            for c, answers in FLIPPING.items()
        )
    )


def world(dataset, server):
    """A query of CRITERIA criteria answered ANSWERS times, a one-judge panel on the
    scripted server; (judge, panel, {(answer id, criterion id): flips?})."""
    made = checklisted_query(dataset, criteria=CRITERIA, answers=ANSWERS)
    server.responder = flipping_judge()
    (judge,) = loopback_judges(server, 1)
    panel = PanelFactory(judges=[judge])
    flips = {
        (answer.pk, criterion.pk): a in FLIPPING.get(c, ())
        for a, answer in enumerate(made.answers)
        for c, criterion in enumerate(made.criteria)
    }
    return judge, panel, flips


def ended_inline(dataset, panel, owner) -> Run:
    """A run of the panel, its tasks run in this process (no worker): done."""
    run = runs.run_create_and_start(dataset=dataset, panel=panel, by=owner)
    for task in run.tasks.all():
        lifecycle.run_task(worker="test", run_id=run.pk, answer_id=task.answer_id,
                           judge_id=task.judge_id)  # fmt: skip
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    return run


def check_share(figures: dict, items: set, flips: dict, criterion_ids: list[int]) -> None:
    """The pass's figures against an independent count of the scripted flips."""
    flipped = sum(flips[i] for i in items)
    assert figures["items"] == len(items)
    assert figures["flips"]["count"] == flipped
    assert figures["flips"]["low"] <= flipped / len(items) <= figures["flips"]["high"]
    rows = {r["criterion_id"]: r["flips"] for r in figures["criteria"]}
    for criterion_id in criterion_ids:
        own = [i for i in items if i[1] == criterion_id]
        if not own:
            assert criterion_id not in rows
            continue
        count = sum(flips[i] for i in own)
        rate, low, high = intervals.wilson(count, len(own))
        assert rows[criterion_id] == {"count": count, "items": len(own), "rate": rate,
                                      "low": low, "high": high}  # fmt: skip
        assert low <= count / len(own) <= high


def test_a_pass_on_a_scripted_flipping_judge_reports_the_known_share(
    celery_worker, dataset, owner, owner_api, owner_client, loopback_openai
):
    judge, panel, flips = world(dataset, loopback_openai)
    run = runs.wait_for(
        runs.run_create_and_start(dataset=dataset, panel=panel, by=owner), timeout=120
    )
    assert run.status == Run.Status.DONE, celery_worker.log()[-3000:]
    criterion_ids = sorted({c for _, c in flips})
    url = f"/api/runs/{run.pk}/stability-pass/"

    # A sample of 12 of the 30 items, k = 4: first its estimate, then the pass itself.
    estimated = owner_api.post(url, {"judge": judge.pk, "k": 4, "items": 12,
                                     "estimate_only": True}, format="json")  # fmt: skip
    assert estimated.status_code == 200 and estimated.json()["calls"] == 12 * 4
    assert not run.stability_passes.exists()
    before = loopback_openai.call_count
    answer = owner_api.post(url, {"judge": judge.pk, "k": 4, "items": 12}, format="json")
    assert answer.status_code == 201, answer.json()
    first = runs.wait_for(Run.objects.get(pk=answer.json()["id"]), timeout=120)
    assert first.status == Run.Status.DONE, celery_worker.log()[-3000:]
    sample = set(sampling.pass_sample(run, judge.pk, 12))
    assert len(sample) == 12
    assert set(RunItem.objects.filter(run=first).values_list("answer_id", "criterion_id")) == sample
    # Every call went to the judge: the pass's own 48, no more (its estimate), none cached,
    # each item asked under four sample indexes.
    assert loopback_openai.call_count - before == 48 == first.estimate["calls"]
    verdicts = Verdict.objects.filter(run=first)
    assert verdicts.count() == 48 and not verdicts.filter(cache_hit=True).exists()
    assert set(verdicts.values_list("sample", flat=True)) == {0, 1, 2, 3}
    assert first.stability_for_id == run.pk and first.snapshot["members"][0]["samples"] == 4
    assert measured_on(run) == first
    check_share(run_stability(run), sample, flips, criterion_ids)

    # Then every item, k = 3: the run is now measured on this later pass.
    answer = owner_api.post(url, {"judge": judge.pk, "k": 3, "items": 500}, format="json")
    assert answer.status_code == 201, answer.json()
    second = runs.wait_for(Run.objects.get(pk=answer.json()["id"]), timeout=120)
    assert second.status == Run.Status.DONE and second.expected == len(flips) * 3
    assert measured_on(run) == second
    check_share(run_stability(run), set(flips), flips, criterion_ids)
    # 7 of 30 items flip: the scripted share, within the figure's interval.
    body = owner_api.get(f"/api/runs/{run.pk}/stability/").json()
    assert body["items"] == 30 and body["flips"]["count"] == 7
    assert body["flips"]["low"] <= 7 / 30 <= body["flips"]["high"]

    # The run's page shows the pass's figures and names it; a criterion is marked unstable
    # when its interval's low end is above 10%: 5 of 5 flips, and 2 of 5 (low 0.118).
    page = owner_client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "data-stability-from-pass" in page and f'href="/runs/{second.pk}/"' in page
    assert page.count("data-stability-criterion=") == CRITERIA
    unstable = [c for c, a in FLIPPING.items() if intervals.wilson(len(a), ANSWERS)[1] > 0.1]
    assert page.count(">unstable</span>") == len(unstable) == 2
    # A pass measures its run's judge: not a run that systems are scored or alerted on.
    assert [r.pk for r in runs_of_system_answers(dataset)] == [run.pk]
    later = runs.wait_for(
        runs.run_create_and_start(dataset=dataset, panel=panel, by=owner), timeout=120
    )
    assert later.finished_at > second.finished_at
    assert previous_run(later, run.verdicts.first().answer.system_id) == run


def test_bad_requests_are_refused_naming_the_field_and_create_nothing(
    dataset, owner, owner_api, collaborator_api, outsider_api, loopback_openai
):
    judge, panel, _ = world(dataset, loopback_openai)
    other = Judge.objects.create(  # not in the run's panel
        name="Other", base_url=loopback_openai.base_url, model="model-1"
    )
    run = ended_inline(dataset, panel, owner)
    url = f"/api/runs/{run.pk}/stability-pass/"
    count = Run.objects.count()
    for body, field in [
        ({"judge": judge.pk, "k": 1, "items": 10}, "k"),
        ({"judge": judge.pk, "k": 11, "items": 10}, "k"),
        ({"judge": judge.pk, "k": 3, "items": 0}, "items"),
        ({"judge": judge.pk, "k": 3, "items": stability_pass.MAX_ITEMS + 1}, "items"),
        ({"judge": other.pk, "k": 3, "items": 10}, "judge"),
        ({"judge": "x", "k": 3, "items": 10}, "judge"),
        ({"k": 3, "items": 10}, "judge"),
    ]:
        answer = owner_api.post(url, body, format="json")
        assert answer.status_code == 400, body
        assert list(answer.json()) == [field], answer.json()
    assert (
        "Judge 0"
        in owner_api.post(url, {"judge": other.pk, "k": 3, "items": 10}, format="json").json()[
            "judge"
        ][0]
    )
    # Only the dataset's admins; a non-member does not learn the run exists.
    assert collaborator_api.post(url, {"judge": judge.pk, "k": 3, "items": 10},
                                 format="json").status_code == 403  # fmt: skip
    assert outsider_api.post(url, {"judge": judge.pk, "k": 3, "items": 10},
                             format="json").status_code == 404  # fmt: skip
    assert Run.objects.count() == count and not RunItem.objects.exists()

    # A run still running is not measured yet.
    running = runs.run_create_and_start(dataset=dataset, panel=panel, by=owner)
    answer = owner_api.post(f"/api/runs/{running.pk}/stability-pass/",
                            {"judge": judge.pk, "k": 3, "items": 10}, format="json")  # fmt: skip
    assert answer.status_code == 400 and "finished" in answer.json()["non_field_errors"][0]


def test_a_second_request_while_a_pass_runs_is_refused(dataset, owner, owner_api, loopback_openai):
    judge, panel, _ = world(dataset, loopback_openai)
    run = ended_inline(dataset, panel, owner)
    url = f"/api/runs/{run.pk}/stability-pass/"
    # No worker here: the first pass stays running.
    first = owner_api.post(url, {"judge": judge.pk, "k": 5, "items": 10}, format="json")
    assert first.status_code == 201 and first.json()["status"] == "running"
    assert first.json()["stability_for"] == run.pk and first.json()["expected"] == 50
    second = owner_api.post(url, {"judge": judge.pk, "k": 2, "items": 3}, format="json")
    assert second.status_code == 409
    assert second.json()["running"] == first.json()["id"]
    assert "already running" in second.json()["detail"]
    assert run.stability_passes.count() == 1
    # A pass measures a run: it is not measured itself, nor a canary.
    again = owner_api.post(f"/api/runs/{first.json()['id']}/stability-pass/",
                           {"judge": judge.pk, "k": 2, "items": 3}, format="json")  # fmt: skip
    assert again.status_code == 400 and "checks another run" in str(again.json())


def test_the_run_page_asks_for_a_pass_and_follows_its_progress(
    dataset, owner, owner_client, loopback_openai, django_assert_max_num_queries
):
    judge, panel, _ = world(dataset, loopback_openai)
    run = ended_inline(dataset, panel, owner)
    page_url = reverse("run-detail", args=[run.pk])
    page = owner_client.get(page_url).content.decode()
    assert 'id="stability-pass-form"' in page and f'<option value="{judge.pk}"' in page

    estimate_url = reverse("run-stability-pass-estimate", args=[run.pk])
    found = owner_client.get(estimate_url, {"judge": judge.pk, "k": 3, "items": 7},
                             headers={"HX-Request": "true"})  # fmt: skip
    assert "data-estimate-calls>21<" in found.content.decode()
    refused = owner_client.get(estimate_url, {"judge": judge.pk, "k": 12, "items": 7})
    assert "k (calls per item):" in refused.content.decode()

    start_url = reverse("run-stability-pass", args=[run.pk])
    answer = owner_client.post(start_url, {"judge": judge.pk, "k": 12, "items": 7}, follow=True)
    assert "k (calls per item): Ensure this value is less than or equal to 10." in (
        answer.content.decode()
    )
    assert not run.stability_passes.exists()
    owner_client.post(start_url, {"judge": judge.pk, "k": 3, "items": 7})
    made = run.stability_passes.get()
    assert made.expected == 21 and made.status == Run.Status.RUNNING

    with django_assert_max_num_queries(45):
        page = owner_client.get(page_url).content.decode()
    assert 'data-stability-pass="running"' in page and "data-stability-pass-progress" in page
    assert 'hx-target="#stability-pass"' in page
    poll = owner_client.get(page_url, headers={"HX-Request": "true", "HX-Target": "stability-pass"})
    assert "0</strong> / 21 verdicts" in poll.content.decode()
    assert "HX-Refresh" not in poll.headers

    for task in made.tasks.all():  # what a worker does
        lifecycle.run_task(worker="test", run_id=made.pk, answer_id=task.answer_id,
                           judge_id=task.judge_id)  # fmt: skip
    poll = owner_client.get(page_url, headers={"HX-Request": "true", "HX-Target": "stability-pass"})
    assert poll.headers["HX-Refresh"] == "true"
    page = owner_client.get(page_url).content.decode()
    assert 'data-stability-pass="done"' in page and "data-stability-from-pass" in page
    # The pass's own page says what it is.
    assert (
        "data-stability-pass-of"
        in owner_client.get(reverse("run-detail", args=[made.pk])).content.decode()
    )
