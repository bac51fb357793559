"""Automatic cross-evaluation (a dataset setting): a perfect answer saved, or a checklist
submitted, starts a run over the query once two checklists have perfect answers; the cache
makes only the new pairs cost judge calls. Real worker, real openai client, loopback judge."""

from __future__ import annotations

from django.urls import reverse

from annotation import services as annotation_services
from evaluation.cross_evaluation import services
from evaluation.runs import selectors
from evaluation.runs import services as runs
from evaluation.runs.models import Run, Verdict
from loopback import LoopbackOpenAI
from tests.evaluation.cross_evaluation.two_queries import (
    code_judge,
    codes,
    expert,
)
from tests.factories import PanelFactory, loopback_judges, valid_criteria
from tests.support.builders import checklisted_query


def cross_runs(query):
    return Run.objects.filter(kind=Run.Kind.CROSS_EVALUATION, queries=query).order_by("id")


def test_new_perfect_answers_and_submissions_start_runs_that_reuse_the_cache(
    celery_worker, client, dataset, query, owner, collaborator
):
    bob = expert(dataset, "bob")
    mine = checklisted_query(query=query, author=collaborator, criteria=codes(1, 2, 3)).checklist
    bobs = checklisted_query(query=query, author=bob, criteria=codes(1, 4)).checklist
    with LoopbackOpenAI(responder=code_judge) as server:
        panel = PanelFactory(judges=loopback_judges(server, 1))
        # The settings form on the dataset's cross-evaluation page turns automation on.
        client.force_login(owner)
        url = reverse("dataset-cross-evaluation", args=[dataset.pk])
        assert client.post(url, {"action": "settings", "automatic": "on"}).status_code == 400
        response = client.post(url, {"action": "settings", "panel": panel.pk, "automatic": "on"})
        assert response.status_code == 302

        services.perfect_answer_save(checklist=mine, text="K1, K2, K3.", by=collaborator)
        assert not cross_runs(query).exists()  # one perfect answer: nothing to compare

        services.perfect_answer_save(checklist=bobs, text="K1 and K4.", by=bob)
        first = runs.wait_for(cross_runs(query).get(), timeout=120)
        assert first.status == Run.Status.DONE and first.panel == panel
        assert Verdict.objects.filter(run=first).count() == 2 * 5  # 2 answers × 5 criteria
        assert server.call_count == 10

        # A third expert submits through the real service: the signal starts a run; only
        # the two perfect answers against the new checklist's 6 criteria are new calls.
        cid = expert(dataset, "cid")
        annotation_services.checklist_create_with_criteria(
            query=query, by=cid, criteria=valid_criteria(), submit=True
        )
        second = runs.wait_for(cross_runs(query).last(), timeout=120)
        assert second.pk != first.pk and second.status == Run.Status.DONE
        assert Verdict.objects.filter(run=second).count() == 2 * 11
        assert selectors.run_progress(second).cache_hits == 10
        assert server.call_count == 10 + 2 * 6

        # Saving an unchanged perfect answer starts nothing; changing it does.
        services.perfect_answer_save(checklist=bobs, text="K1 and K4.", by=bob)
        assert cross_runs(query).count() == 2
        services.perfect_answer_save(checklist=bobs, text="K1, K4 and K2.", by=bob)
        third = runs.wait_for(cross_runs(query).last(), timeout=120)
        assert cross_runs(query).count() == 3 and third.status == Run.Status.DONE
        assert server.call_count == 10 + 12 + 11  # only bob's new text, on all 11 criteria


def test_without_the_setting_nothing_starts(celery_worker, dataset, query, owner, collaborator):
    bob = expert(dataset, "bob")
    mine = checklisted_query(query=query, author=collaborator, criteria=codes(1)).checklist
    bobs = checklisted_query(query=query, author=bob, criteria=codes(2)).checklist
    services.perfect_answer_save(checklist=mine, text="K1.", by=collaborator)
    services.perfect_answer_save(checklist=bobs, text="K2.", by=bob)
    assert not cross_runs(query).exists()
