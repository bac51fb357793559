"""Past one machine (issue 44): judge workers on their own hosts, a queue per provider
(settings.RUNS_QUEUE_BY_HOST). Two real Celery workers, each serving one provider's queue,
against one PostgreSQL and one Redis: a run of two judges on two providers (two loopback
servers, the real openai client) is split across them, each task run by its provider's
worker, and ends with every verdict exactly once and exactly as its judge said."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import pytest

from evaluation.judges.models import Judge
from evaluation.runs import queue
from evaluation.runs import services as runs
from evaluation.runs.models import Run, RunTask, Verdict
from loopback import LoopbackOpenAI
from tests.evaluation.runs.workload import build_workload, expected_verdict, scripted_judge
from tests.factories import PanelFactory


def _host(server) -> str:
    address = urlsplit(server.base_url)
    return f"{address.hostname}:{address.port}"


@pytest.mark.worker
def test_a_run_is_split_across_two_providers_workers_and_ends_exact(
    start_worker, dataset, settings
):
    build_workload(dataset, queries=2, answers_per_query=3, criteria=4)
    first_queue, second_queue = (f"provider-{n}-{uuid.uuid4().hex[:8]}" for n in (1, 2))
    with (
        LoopbackOpenAI(responder=scripted_judge) as first,
        LoopbackOpenAI(responder=scripted_judge) as second,
    ):
        by_host = {_host(first): first_queue, _host(second): second_queue}
        settings.RUNS_QUEUE_BY_HOST = by_host
        # The workers requeue what a lost worker held (the sweep): they route the same way.
        env = {"RUNS_QUEUE_BY_HOST": ",".join(f"{h}={q}" for h, q in by_host.items())}
        workers = {
            first_queue: start_worker(queue=first_queue, concurrency=2, env=env),
            second_queue: start_worker(queue=second_queue, concurrency=2, env=env),
        }
        judges = [
            Judge.objects.create(name=f"On {name}", base_url=server.base_url, model="model-0")
            for name, server in (("first", first), ("second", second))
        ]
        panel = PanelFactory(judges=judges)
        run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
        run = runs.wait_for(run, timeout=120)
        logs = "\n".join(w.log()[-2000:] for w in workers.values())
        assert run.status == Run.Status.DONE, logs
        # Each provider got its own judge's calls, each once: 6 answers x 4 criteria.
        assert first.call_count == second.call_count == 2 * 3 * 4, logs

    # Split: each judge's tasks were run by its provider's worker, and only by it.
    for judge in judges:
        node = workers[queue.queue_of(judge.base_url, by_host)].node
        ran = set(RunTask.objects.filter(run=run, judge=judge).values_list("worker", flat=True))
        assert ran and all(node in name for name in ran), (judge.name, ran, node)
    # Exact: one verdict per vote, each what its judge said.
    verdicts = Verdict.objects.filter(run=run).select_related("criterion", "answer")
    votes = list(verdicts.values_list("answer", "criterion", "judge", "sample"))
    assert len(votes) == len(set(votes)) == run.expected == 2 * 3 * 4 * 2
    assert all(v.outcome == expected_verdict(v.criterion.text, v.answer.text) for v in verdicts)


def test_the_queue_of_an_endpoint_by_host_and_port_then_host_then_the_runs_queue(settings):
    settings.RUNS_QUEUE = "judges"
    by_host = {"api.openai.com": "openai", "vllm.internal:8000": "vllm-a"}
    assert queue.queue_of("https://API.openai.com/v1", by_host) == "openai"
    assert queue.queue_of("http://vllm.internal:8000/v1", by_host) == "vllm-a"
    assert queue.queue_of("http://vllm.internal:9000/v1", by_host) == "judges"
    assert queue.queue_of("", by_host) == "judges"
