"""Cross-evaluation workloads whose every verdict is known in advance.

Each criterion names one code ("States figure K3."); the scripted loopback judge passes it
exactly when the answer contains that code as a word. A criterion containing UNPARSEABLE
always gets a reply that is not JSON, so its verdict ends unparseable (undecided).
"""

from __future__ import annotations

import re

from annotation import roles, services
from annotation.models import Checklist, Criterion
from evaluation.answers.models import Answer
from evaluation.cross_evaluation.services import perfect_answer_save
from evaluation.runs import snapshot
from evaluation.runs.models import Run, Verdict
from tests.factories import PanelFactory, QueryFactory, UserFactory, offline_judge
from tests.support.builders import checklisted_query

CODE = re.compile(r"\bK\d+\b")


def code_judge(request) -> dict | str:
    text = request.last_user_text
    answer = text.split("Answer:\n", 1)[1].rsplit("\n\nCriterion: ", 1)[0]
    criterion = text.rsplit("Criterion: ", 1)[1]
    if "UNPARSEABLE" in criterion:
        return "I would rather not say."
    found = CODE.search(criterion)
    code = found.group() if found else "no code"
    verdict = "pass" if found and re.search(rf"\b{code}\b", answer) else "fail"
    return {
        "verdict": verdict,
        "failure_kind": None if verdict == "pass" else "missing",
        "rationale": f"{code} {'found' if verdict == 'pass' else 'not found'}.",
    }


def expert(dataset, username: str):
    user = UserFactory(username=username)
    services.dataset_set_role(dataset=dataset, user=user, role=roles.DatasetRole.EXPERT)
    return user


def codes(*numbers: int) -> list[str]:
    return [f"States figure K{n}." for n in numbers]


def two_queries(dataset, by) -> dict[str, Checklist]:
    """Query 1: experts A, B, C; query 2: D, E. Perfect answers for all five.

    By hand (pass = the answer contains the code):
      A→B 2/4 = 0.5   A→C 1/2 = 0.5 (K9 undecided)   B→A 2/3   B→C 1/2 (K9 undecided)
      C→A 1/3         C→B 0/4 = 0                    D→E 2/4 = 0.5   E→D 2/2 = 1
      self: A 3/3, B 4/4, C 2/2 (K9 undecided), D 2/2, E 4/4
    Mean over the 8 ordered pairs: (0.5 + 0.5 + 2/3 + 0.5 + 1/3 + 0 + 0.5 + 1) / 8 = 0.5.
    """
    ann, bob, cat = expert(dataset, "ann"), expert(dataset, "bob"), expert(dataset, "cat")
    q1 = QueryFactory(dataset=dataset, text="Summarise the quarter of company one.")
    q2 = QueryFactory(dataset=dataset, text="Summarise the quarter of company two.")
    lists = {
        key: checklisted_query(query=query, author=author, criteria=criteria).checklist
        for key, query, author, criteria in (
            ("A", q1, ann, codes(1, 2, 3)),
            ("B", q1, bob, codes(1, 4, 5, 6)),
            ("C", q1, cat, [*codes(2, 7), "States figure K9 UNPARSEABLE."]),
            ("D", q2, ann, codes(11, 12)),
            ("E", q2, bob, codes(11, 13, 14, 15)),
        )
    }
    texts = {
        "A": "Figures: K1, K2 and K3; also K4.",
        "B": "Figures: K1, K4, K5, K6 and K2.",
        "C": "Figures: K2, K7 and K9.",
        "D": "Figures: K11, K12 and K13.",
        "E": "Figures: K11, K12, K13, K14 and K15.",
    }
    for key, checklist in lists.items():
        perfect_answer_save(checklist=checklist, text=texts[key], by=by)
    return lists


# overlap(A→B) by hand, for the scenario above: (passed, failed, undecided).
EXPECTED = {
    ("A", "A"): (3, 0, 0), ("A", "B"): (2, 2, 0), ("A", "C"): (1, 1, 1),
    ("B", "A"): (2, 1, 0), ("B", "B"): (4, 0, 0), ("B", "C"): (1, 1, 1),
    ("C", "A"): (1, 2, 0), ("C", "B"): (0, 4, 0), ("C", "C"): (2, 0, 1),
    ("D", "D"): (2, 0, 0), ("D", "E"): (2, 2, 0),
    ("E", "D"): (2, 0, 0), ("E", "E"): (4, 0, 0),
}  # fmt: skip
EXPECTED_MEAN = 0.5


def grade_directly(dataset, outcome_of=None):
    """A finished cross-evaluation run holding a verdict for every perfect answer × scored
    criterion of its query, written directly rather than through the engine (the worker
    tests exercise that). By default the verdicts are those code_judge would give."""
    judge = offline_judge()
    panel = PanelFactory(name="Offline panel", judges=[judge])
    run = Run.objects.create(
        dataset=dataset, panel=panel, kind=Run.Kind.CROSS_EVALUATION, status=Run.Status.DONE,
        name="Cross-evaluation", snapshot=snapshot.take(panel),
    )  # fmt: skip

    def by_code(answer, criterion):
        found = CODE.search(criterion.text)
        return "pass" if found and re.search(rf"\b{found.group()}\b", answer.text) else "fail"

    outcome_of = outcome_of or by_code
    verdicts = []
    for answer in Answer.objects.filter(query__dataset=dataset, checklist__isnull=False):
        for criterion in Criterion.objects.filter(
            checklist__query=answer.query_id, checklist__status=Checklist.Status.SUBMITTED
        ):
            outcome = outcome_of(answer, criterion)
            verdicts.append(
                Verdict(
                    run=run,
                    answer=answer,
                    criterion=criterion,
                    judge=judge,
                    outcome=outcome,
                    rationale=f"Offline {outcome}.",
                    cache_key="direct",
                )
            )
    Verdict.objects.bulk_create(verdicts)
    return run
