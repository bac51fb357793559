"""The judging engine at the size the issue names, through a real worker, the real openai
client and the loopback server: faults retried, nothing lost or doubled, cache reused."""

from __future__ import annotations

from django.conf import settings

from evaluation.runs import selectors
from evaluation.runs import services as runs
from evaluation.runs.models import Run, Verdict
from loopback import FaultKind, LoopbackOpenAI
from tests.evaluation.runs.workload import (
    build_workload,
    expected_verdict,
    scripted_judge,
)
from tests.factories import PanelFactory, loopback_judges

TRANSIENT = (
    FaultKind.RATE_LIMIT,
    FaultKind.SERVER_ERROR,
    FaultKind.SERVICE_UNAVAILABLE,
    FaultKind.TIMEOUT,
    FaultKind.TRUNCATED_BODY,
    FaultKind.MALFORMED_JSON,
)


def start_and_wait(dataset, panel, *, timeout: float = 600) -> Run:
    run = runs.run_create(dataset=dataset, panel=panel, concurrency=16)
    runs.run_start(run=run)
    return runs.wait_for(run, timeout=timeout)


def verdicts_match_the_script(run: Run) -> bool:
    rows = Verdict.objects.filter(run=run).select_related("criterion", "answer")
    return all(v.outcome == expected_verdict(v.criterion.text, v.answer.text) for v in rows)


# The size the issue asks for, on PostgreSQL + Redis (production's set-up, and CI's first
# pass); a fifth of it on the SQLite default, whose single writer makes the full size slow.
FULL_SIZE = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
ANSWERS, CRITERIA, JUDGES = (200, 20, 3) if FULL_SIZE else (40, 20, 3)
TOTAL = ANSWERS * CRITERIA * JUDGES


def test_12000_verdicts_with_10_percent_faults_then_cache_then_one_edit(celery_worker, dataset):
    # One query answered by 200 systems; its checklist has 20 criteria; 3 judges.
    build_workload(dataset, queries=1, answers_per_query=ANSWERS, criteria=CRITERIA)
    with LoopbackOpenAI(
        responder=scripted_judge,
        fault_rate=0.10,
        fault_kinds=TRANSIENT,
        max_faults_per_request=1,
        retry_after=0.01,
        timeout_delay=1.0,
        seed=7,
    ) as server:
        panel = PanelFactory(judges=loopback_judges(server, JUDGES, timeout=0.5))
        first = start_and_wait(dataset, panel)
        progress = selectors.run_progress(first)
        assert first.status == Run.Status.DONE
        assert (first.expected, progress.done) == (TOTAL, TOTAL)
        assert Verdict.objects.filter(run=first).count() == TOTAL
        assert (progress.errors, progress.unparseable) == (0, 0)  # every fault was retried
        faults = sum(server.fault_counts.values())
        assert 0.07 * TOTAL < faults < 0.13 * TOTAL, server.fault_counts
        assert set(server.fault_counts) == set(TRANSIENT)
        assert verdicts_match_the_script(first)
        traced = Verdict.objects.filter(run=first, judge__name="Judge 1").first()
        assert traced.judge_params == {
            "kind": "llm", "base_url": server.base_url, "model": "model-1",
            "prompt_version": traced.judge.prompt_version, "temperature": 0.0,
            "max_tokens": 512, "seed": None,
        }  # fmt: skip

        # The same run again: every verdict comes from the cache, no call is made.
        calls = server.call_count
        second = start_and_wait(dataset, panel)
        assert selectors.run_progress(second).cache_hits == TOTAL
        assert server.call_count == calls

        # One edited criterion: only its 200 answers × 3 judges are judged again.
        from annotation.models import Criterion

        criterion = Criterion.objects.order_by("pk").first()
        criterion.text = "States the restated figure of query 0."
        criterion.save()
        server.fault_rate = 0.0
        third = start_and_wait(dataset, panel)
        third_progress = selectors.run_progress(third)
        assert third_progress.done == TOTAL
        assert third_progress.cache_hits == TOTAL - ANSWERS * JUDGES
        # Distinct requests, not HTTP calls: on a loaded machine a call may outlast the
        # client's 0.5 s timeout and be resent unchanged, which is the client's retry, not
        # a second judgment.
        asked_again = {call.request.key for call in server.calls[calls:]}
        assert len(asked_again) == ANSWERS * JUDGES
        assert verdicts_match_the_script(third)
