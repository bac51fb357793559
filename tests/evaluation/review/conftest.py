"""Fixtures of the review tests: a second reviewer, and a dataset whose every vote, label and
adjudication is known (the queue selection and kept-queue tests)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation import roles, services
from evaluation.labels.models import Adjudication
from evaluation.runs.models import Run
from tests.factories import PanelFactory, UserFactory, external_judges
from tests.support.builders import checklisted_query, finished_run, human_label


@pytest.fixture
def share_alone(monkeypatch):
    """The label policy's share alone decides how many answers the queue offers: no floor
    (selectors.LABEL_FLOOR), for tests of the share on datasets of a few answers."""
    from evaluation.review import selectors

    monkeypatch.setattr(selectors, "LABEL_FLOOR", 0)


@pytest.fixture
def second_reviewer(reviewed_dataset):
    user = UserFactory(username="second-reviewer")
    services.dataset_set_role(dataset=reviewed_dataset, user=user, role=roles.DatasetRole.REVIEWER)
    return user


@pytest.fixture
def second_reviewer_api(second_reviewer) -> APIClient:
    client = APIClient()
    client.force_authenticate(second_reviewer)
    return client


@pytest.fixture
def workload(reviewed_dataset, reviewer, owner):
    """Two answers × seven criteria, two finished runs and a running one, labels and an
    adjudication; the comments say where each item belongs in the disagreement queue."""
    made = checklisted_query(reviewed_dataset, criteria=7, answers=2)
    c, (a1, a2) = made.criteria, made.answers
    panel = PanelFactory(judges=external_judges(3))
    p, f, u, e = "pass", "fail", "unparseable", "error"
    old = finished_run(reviewed_dataset, panel, {(a1, c[0]): (f, f, p), (a2, c[4]): (p, f, u)})
    latest = finished_run(
        reviewed_dataset,
        panel,
        {
            (a1, c[0]): (p, p, p),  # agreement, no human: out
            (a1, c[1]): (p, p, f),  # split 2–1
            (a1, c[2]): (p, f, u),  # split 1–1, the most even
            (a1, c[3]): (f, f, f),  # a human says pass
            (a1, c[4]): (p, p, p),  # a human agrees
            (a1, c[5]): (p, u, e),  # invalid votes are never fails: out
            (a1, c[6]): (f, f, p),  # adjudicated: out
            (a2, c[0]): (p, f, f),  # split 1–2, and a human disagrees
            (a2, c[1]): (p, p, p),  # two humans say fail
            (a2, c[2]): (u, u, u),  # no valid vote: nothing to contradict
            (a2, c[3]): (p, p, p),  # agreement, no human: out
        },
    )
    # A newer run that has not finished does not count by default.
    finished_run(reviewed_dataset, panel, {(a1, c[0]): (f, f, f)}, status=Run.Status.RUNNING)
    human_label(a1, c[3], "reviewer", "pass")
    human_label(a1, c[4], "reviewer", "pass")
    human_label(a2, c[0], "owner", "pass")
    human_label(a2, c[1], "reviewer", "fail")
    human_label(a2, c[1], "owner", "fail")
    human_label(a2, c[2], "owner", "fail")
    Adjudication.objects.create(answer=a1, criterion=c[6], label="fail", decided_by=owner)
    return {"a1": a1, "a2": a2, "c": c, "old": old, "latest": latest}
