from __future__ import annotations

import pytest

from annotation import roles, services
from evaluation.pairwise.services import session_create
from tests.factories import AnswerFactory, QueryFactory, SystemFactory, UserFactory
from tests.support.builders import checklisted_query, finished_run


@pytest.fixture
def second_reviewer(reviewed_dataset):
    from django.contrib.auth.models import Group

    user = UserFactory(username="second_reviewer")
    user.groups.add(Group.objects.get(name=roles.Group.REVIEWER.value))
    services.dataset_set_role(dataset=reviewed_dataset, user=user, role=roles.DatasetRole.REVIEWER)
    return user


def two_systems_answered(dataset, queries: int = 5):
    """`queries` queries, each answered by "Alpha" and "Beta" (texts naming system and query)."""
    alpha, beta = SystemFactory(name="Alpha"), SystemFactory(name="Beta")
    made = []
    for i in range(queries):
        query = QueryFactory(dataset=dataset, text=f"Question {i}: what was Q{i % 4 + 1} revenue?")
        a = AnswerFactory(query=query, system=alpha, text=f"Alpha answers question {i}.")
        b = AnswerFactory(query=query, system=beta, text=f"Beta answers question {i}.")
        made.append((query, a, b))
    return alpha, beta, made


@pytest.fixture
def pairwise_session(reviewed_dataset, owner):
    alpha, beta, _made = two_systems_answered(reviewed_dataset)
    return session_create(
        dataset=reviewed_dataset, name="Session one", system_a=alpha, system_b=beta,
        reviewers_per_pair=2, by=owner,
    )  # fmt: skip


@pytest.fixture
def scored(reviewed_dataset, offline_panel, owner):
    """Four queries with a two-criterion checklist, answered by Alpha and Beta; a finished run
    where Alpha meets both criteria and Beta one (so Alpha scores higher on each)."""
    alpha, beta = SystemFactory(name="Alpha"), SystemFactory(name="Beta")
    votes, queries = {}, []
    for i in range(4):
        made = checklisted_query(reviewed_dataset, criteria=2, text=f"Question {i}")
        a = AnswerFactory(query=made.query, system=alpha, text=f"Alpha {i}")
        b = AnswerFactory(query=made.query, system=beta, text=f"Beta {i}")
        first, second = made.criteria
        votes |= {(a, first): ["pass"], (a, second): ["pass"], (b, first): ["pass"],
                  (b, second): ["fail"]}  # fmt: skip
        queries.append(made.query)
    run = finished_run(reviewed_dataset, offline_panel, votes)
    session = session_create(
        dataset=reviewed_dataset, name="Session one", system_a=alpha, system_b=beta,
        reviewers_per_pair=2, by=owner,
    )  # fmt: skip
    return run, session, [q.pk for q in queries]
