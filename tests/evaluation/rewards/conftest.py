"""Fixtures of the reward tests: a dataset query "q-1" with one submitted checklist of three
criteria, a loopback judge that fails the criterion about figure 1 and passes the others,
and a panel of that judge alone. The real openai client talks to the loopback server."""

from __future__ import annotations

import pytest

from loopback import Fault, LoopbackOpenAI
from tests.factories import PanelFactory, loopback_judges
from tests.support.builders import checklisted_query

CRITERIA = [
    "States figure 0 of the query.",
    "States figure 1 of the query.",
    "States figure 2 of the query.",
]
FAILED_CRITERION = "figure 1"
BROKEN = "BROKEN"  # a completion holding this gets an unparseable output on every criterion


def grade(request) -> dict | Fault:
    text = request.last_user_text
    if BROKEN in text:
        return Fault.malformed_json()
    criterion = text.rsplit("Criterion:", 1)[-1]
    if FAILED_CRITERION in criterion:
        return {"verdict": "fail", "failure_kind": "missing", "rationale": "Not stated."}
    return {"verdict": "pass", "failure_kind": None, "rationale": "Stated."}


@pytest.fixture
def judge_server():
    with LoopbackOpenAI(responder=grade) as server:
        yield server


@pytest.fixture
def checklisted(dataset):
    return checklisted_query(dataset, criteria=CRITERIA, external_id="q-1")


@pytest.fixture
def panel(judge_server, db):
    return PanelFactory(judges=loopback_judges(judge_server, 1))


def native(dataset, panel, *completions: str, query: str = "q-1", **extra) -> dict:
    items = [{"query": query, "completion": c} for c in completions]
    return {"dataset": dataset.pk, "panel": panel.pk, "items": items, **extra}
