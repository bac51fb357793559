"""Graded workloads for run tests: queries with one submitted checklist each, answers from
several systems, and the verdict the loopback judge gives each (answer, criterion), known in
advance. The judges are `loopback_judges` (tests/factories.py) in a PanelFactory."""

from __future__ import annotations

import hashlib

from evaluation.answers.models import Answer, System
from tests.factories import UserFactory
from tests.support.builders import checklisted_query


def expected_verdict(criterion_text: str, answer_text: str) -> str:
    digest = hashlib.sha256(f"{criterion_text}|{answer_text}".encode()).digest()
    return "pass" if digest[0] % 2 == 0 else "fail"


def scripted_judge(request) -> dict:
    """The loopback judge: a verdict that is a pure function of criterion and answer."""
    text = request.last_user_text
    answer = text.split("Answer:\n", 1)[1].rsplit("\n\nCriterion: ", 1)[0]
    criterion = text.rsplit("Criterion: ", 1)[1]
    verdict = expected_verdict(criterion, answer)
    return {
        "verdict": verdict,
        "failure_kind": None if verdict == "pass" else "missing",
        "rationale": f"Scripted {verdict}.",
    }


def build_workload(dataset, *, queries: int, answers_per_query: int, criteria: int):
    """`queries` queries with a submitted checklist of `criteria` criteria each, answered by
    every one of `answers_per_query` systems (inserted at once: a workload has thousands)."""
    author = UserFactory(username="workload-author")
    systems = [System.objects.create(name=f"System {i}") for i in range(answers_per_query)]
    for q in range(queries):
        query = checklisted_query(
            dataset,
            text=f"Query {q}: what did company {q} report?",
            author=author,
            criteria=[f"States figure {i} of query {q}." for i in range(criteria)],
            timestamps=False,
        ).query
        Answer.objects.bulk_create(
            Answer(system=system, query=query, text=f"Answer of {system.name} to query {q}.")
            for system in systems
        )
