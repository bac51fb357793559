"""A query checklisted by two experts whose criteria read the same ("States Q3 revenue of
$4.12 billion."), answered by two systems, with a run whose judges split on every item: the
disagreement queue holds every (answer, criterion), and only the author tells the twins
apart."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.models import Criterion
from evaluation.answers.models import Answer
from evaluation.runs.models import Run
from tests.factories import (
    AnswerFactory,
    PanelFactory,
    QueryFactory,
    SystemFactory,
    UserFactory,
    external_judges,
)
from tests.support.builders import checklisted_query, finished_run

TWIN = "States Q3 revenue of $4.12 billion."


@dataclass
class TwoExperts:
    run: Run
    alice: object
    bob: object
    twins: tuple[Criterion, Criterion]  # alice's and bob's, same text
    table: Criterion  # bob's format criterion
    other: Criterion  # a criterion of a second query (by alice)
    answers: dict[str, Answer]  # "alpha" / "beta" on the first query; "other" on the second
    systems: dict[str, object]


def checklist(query, author, criteria: list[tuple[str, str]]) -> list[Criterion]:
    """A submitted checklist whose criteria are saved one by one, as the editor saves them."""
    return checklisted_query(query=query, author=author, criteria=criteria, save_each=True).criteria


def build_two_experts(dataset) -> TwoExperts:
    alice = UserFactory(username="alice")
    bob = UserFactory(username="bob")
    query = QueryFactory(dataset=dataset, text="Summarise Acme's Q3 earnings call.")
    second = QueryFactory(dataset=dataset, text="How did Globex guide for 2027?")
    (a_twin,) = checklist(query, alice, [(TWIN, "fact")])
    b_twin, table = checklist(
        query, bob, [(TWIN, "fact"), ("Presents the figures in a table.", "format")]
    )
    (other,) = checklist(second, alice, [("States the 2027 revenue guidance.", "fact")])
    systems = {"alpha": SystemFactory(name="Alpha"), "beta": SystemFactory(name="Beta")}
    answers = {
        "alpha": AnswerFactory(query=query, system=systems["alpha"], text="Revenue $4.12bn."),
        "beta": AnswerFactory(query=query, system=systems["beta"], text="Revenue grew."),
        "other": AnswerFactory(query=second, system=systems["alpha"], text="Guided up."),
    }
    votes = {
        (answers[name], criterion): ("pass", "fail", "fail")
        for name in ("alpha", "beta")
        for criterion in (a_twin, b_twin, table)
    }
    votes[answers["other"], other] = ("pass", "pass", "fail")
    run = finished_run(dataset, PanelFactory(judges=external_judges(3)), votes)
    return TwoExperts(run, alice, bob, (a_twin, b_twin), table, other, answers, systems)
