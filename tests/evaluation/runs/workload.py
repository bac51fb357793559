"""Building graded workloads for run tests: queries with one submitted checklist each,
answers from several systems, judges on the loopback server, and the known verdicts."""

from __future__ import annotations

import hashlib

from annotation.models import Checklist, Criterion
from evaluation.models import Answer, Judge, Panel, PanelMember, System
from tests.factories import QueryFactory, UserFactory


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
    author = UserFactory(username="workload-author")
    systems = [System.objects.create(name=f"System {i}") for i in range(answers_per_query)]
    for q in range(queries):
        query = QueryFactory(dataset=dataset, text=f"Query {q}: what did company {q} report?")
        checklist = Checklist.objects.create(
            query=query, author=author, status=Checklist.Status.SUBMITTED
        )
        Criterion.objects.bulk_create(
            Criterion(checklist=checklist, position=i + 1, text=f"States figure {i} of query {q}.")
            for i in range(criteria)
        )
        Answer.objects.bulk_create(
            Answer(system=system, query=query, text=f"Answer of {system.name} to query {q}.")
            for system in systems
        )


def loopback_panel(server, *, judges: int, samples: int = 1, timeout: float = 5.0) -> Panel:
    panel = Panel.objects.create(name=f"Panel of {judges}")
    for j in range(judges):
        judge = Judge.objects.create(
            name=f"Judge {j}", base_url=server.base_url, model=f"model-{j}", timeout=timeout
        )
        PanelMember.objects.create(panel=panel, judge=judge, samples=samples)
    return panel
