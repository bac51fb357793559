"""The side-by-side tests' data (tests/evaluation/side_by_side, tests/browser): two
systems on three queries, judged in two finished runs: run A judged Old's answers,
run B judged New's and Old's again. Each query's checklist has three criteria and a
penalty; the outcomes are chosen so that each pair differs in a known way."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.models import Criterion, QueryCategory
from evaluation.answers.models import Answer, System
from evaluation.judges.models import Judge
from tests.evaluation.answers.test_answers_pages import TURNS  # an agent's tool call
from tests.factories import PanelFactory
from tests.support.builders import checklisted_query, finished_run

CRITERIA = ["States the revenue.", "States the margin.", "Includes a table.",
            "Cites an AI tool as a source."]  # fmt: skip
# Per query: outcomes of criteria 0..3 (3 is a penalty: "pass" means committed). "error": no
# valid vote, so undecided.
OLD_IN_A = [["pass", "pass", "fail", "fail"], ["pass", "pass", "pass", "fail"],
            ["fail", "fail", "fail", "fail"]]  # fmt: skip
NEW_IN_B = [["pass", "fail", "pass", "pass"], ["pass", "pass", "pass", "fail"],
            ["pass", "pass", "error", "fail"]]  # fmt: skip
OLD_IN_B = [["fail", "pass", "fail", "fail"], ["pass", "pass", "pass", "fail"],
            ["fail", "fail", "fail", "fail"]]  # fmt: skip


@dataclass
class TwoRuns:
    dataset: object
    queries: list
    criteria: list[list[Criterion]]
    old: System
    new: System
    old_answers: list[Answer]
    new_answers: list[Answer]
    run_a: object
    run_b: object


def build_two_runs(dataset, *, queries: int = 3) -> TwoRuns:
    dataset.dimensions = {"answer_type": ["number", "text"]}
    dataset.save(update_fields=["dimensions"])
    facts = QueryCategory.objects.get_or_create(name="Point-fact retrieval")[0]
    digests = QueryCategory.objects.get_or_create(name="Event digests")[0]
    old = System.objects.get_or_create(name="Old", version="1")[0]  # systems are site-wide
    new = System.objects.get_or_create(name="New", version="2")[0]
    made, crits, old_answers, new_answers = [], [], [], []
    for q in range(queries):
        built = checklisted_query(
            dataset, text=f"Side query {q}: revenue <b>and</b> margin?",
            category=digests if q % 3 == 2 else facts, criteria=CRITERIA,
            dimensions={"answer_type": "number" if q % 3 == 0 else "text"},
        )  # fmt: skip
        penalty = built.criteria[3]
        penalty.weight = -1
        penalty.save(update_fields=["weight"])
        made.append(built.query)
        crits.append(built.criteria)
        old_answers.append(Answer.objects.create(system=old, query=built.query, text=f"Old {q}."))
        new_answers.append(
            Answer.objects.create(
                system=new,
                query=built.query,
                text=f"New **{q}** <script>alert(1)</script>.",
                turns=TURNS if q == 0 else [],
            )
        )
    judge = Judge.objects.get_or_create(name="side judge", kind=Judge.Kind.EXTERNAL)[0]
    panel = PanelFactory(judges=[judge])

    def votes(answers, table):
        return {
            (answers[q], crits[q][c]): [table[q % 3][c]]
            for q in range(queries)
            for c in range(len(CRITERIA))
        }

    run_a = finished_run(dataset, panel, votes(old_answers, OLD_IN_A))
    run_b = finished_run(
        dataset, panel, {**votes(new_answers, NEW_IN_B), **votes(old_answers, OLD_IN_B)}
    )
    return TwoRuns(dataset, made, crits, old, new, old_answers, new_answers, run_a, run_b)
