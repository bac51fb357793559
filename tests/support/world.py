"""One of everything, and one person in each role, for the tests that sweep every route
(tests/config/test_permission_matrix.py, test_api_fuzz.py, tests/browser/test_hostile_input.py).

People: `no_role` (in no group, on no dataset), `outsider` (an expert elsewhere), `expert`
(expert on the dataset, author of the draft checklist), `other_expert` (expert on the
dataset, author of the submitted checklist), `reviewer`, `dataset_admin` (admin of the
dataset) and `superuser`. Objects hang off one dataset: a query with both checklists, their
criteria and a citation, an answer with a finished run of a one-judge panel, a label, an
adjudication, a review assignment and a perfect answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotation import roles, services
from annotation.models import (
    Checklist,
    Citation,
    Criterion,
    CriterionGroup,
    Dataset,
    Guideline,
    Query,
    SourceType,
)
from annotation.seeds import FINANCE_GUIDELINE
from evaluation.answers.models import Answer, System
from evaluation.cross_evaluation.services import perfect_answer_save
from evaluation.judges.models import Judge, Panel
from evaluation.labels.models import Adjudication, HumanLabel, ReviewAssignment
from evaluation.runs.models import Run, Verdict
from tests.factories import (
    AnswerFactory,
    PanelFactory,
    QueryFactory,
    UserFactory,
    offline_judge,
    valid_criteria,
)

ROLES = (
    "anonymous", "no_role", "outsider", "other_expert", "reviewer", "expert",
    "dataset_admin", "superuser",
)  # fmt: skip


@dataclass
class World:
    users: dict[str, object] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    dataset: Dataset | None = None
    query: Query | None = None
    draft: Checklist | None = None  # the expert's, not submitted: blind to the others
    submitted: Checklist | None = None  # the other expert's
    criterion: Criterion | None = None  # of the draft
    group: CriterionGroup | None = None  # of the draft (an aspect of its criteria)
    submitted_criterion: Criterion | None = None
    citation: Citation | None = None
    answer: Answer | None = None
    system: System | None = None
    judge: Judge | None = None
    llm_judge: Judge | None = None  # in no panel: only its dataset tuning is swept
    panel: Panel | None = None
    run: Run | None = None
    verdict: Verdict | None = None
    label: HumanLabel | None = None
    adjudication: Adjudication | None = None
    assignment: ReviewAssignment | None = None
    perfect_answer: Answer | None = None
    export: object = None  # a finished-or-not export job of the dataset, by its admin
    alert: object = None  # a regression alert of the dataset
    schedule: object = None  # a scheduled run of the dataset
    api_token: object = None  # the dataset admin's personal API token (read and write)
    invitation: object = None  # an open invitation to the dataset
    invitation_key: str = "world-invitation-key"  # its link's key
    # A pairwise session of the world's answer and a second answer to the query (one pair).
    pairwise_session: object = None
    # The reference data every installation is seeded with (annotation.seeds), found by
    # name: a flush by an earlier transactional test on the same worker seeds them again
    # under new ids, so they are not id 1 in every world.
    guideline: Guideline | None = None  # the Finance guideline
    source_type: SourceType | None = None  # the first seeded source type


def seeded_reference() -> dict:
    """The world's `guideline` and `source_type`, as seeded in this database now."""
    return {
        "guideline": Guideline.objects.get(name=FINANCE_GUIDELINE, version=1),
        "source_type": SourceType.objects.filter(is_banned=False).order_by("pk").first(),
    }


def build_world() -> World:
    w = World(**seeded_reference())

    def person(name: str, group: str | None = None, **extra) -> object:
        user = UserFactory(username=name, **extra)
        if group:
            user.groups.add(Group.objects.get(name=group))
        w.users[name] = user
        w.tokens[name] = Token.objects.create(user=user).key
        return user

    admin = person("dataset_admin", roles.Group.ADMIN.value)
    person("no_role")
    person("outsider", roles.Group.EXPERT.value)
    expert = person("expert", roles.Group.EXPERT.value)
    other = person("other_expert", roles.Group.EXPERT.value)
    reviewer = person("reviewer", roles.Group.REVIEWER.value)
    person("superuser", is_staff=True, is_superuser=True)

    w.dataset = services.dataset_create(name="World dataset", by=admin)
    for user, role in ((expert, "EXPERT"), (other, "EXPERT"), (reviewer, "REVIEWER")):
        services.dataset_set_role(
            dataset=w.dataset, user=user, role=getattr(roles.DatasetRole, role)
        )
    services.dataset_create(name="Outsider's own dataset", by=w.users["outsider"])
    w.query = QueryFactory(dataset=w.dataset)
    w.submitted = services.checklist_create_with_criteria(
        query=w.query, by=other, criteria=valid_criteria(), submit=True
    )
    w.draft = services.checklist_create_with_criteria(
        query=w.query, by=expert, criteria=valid_criteria()[:3]
    )
    w.criterion = w.draft.criteria.order_by("position").first()
    w.submitted_criterion = w.submitted.criteria.order_by("position").first()
    w.citation = Citation.objects.create(criterion=w.criterion, title="Q3 release", url="x")
    w.group = CriterionGroup.objects.create(checklist=w.draft, title="Figures")
    w.answer = AnswerFactory(query=w.query)
    w.system = w.answer.system
    # A no-LLM judge: "Test connection" and runs call no endpoint from the sweep.
    w.judge = offline_judge("World checks")
    w.panel = PanelFactory(name="World panel", judges=[w.judge])
    w.llm_judge = Judge.objects.create(
        name="World LLM", base_url="https://llm.example.com/v1", model="world-model"
    )
    w.run = Run.objects.create(
        dataset=w.dataset, panel=w.panel, status=Run.Status.DONE, kind=Run.Kind.IMPORTED,
        finished_at=timezone.now(), expected=1,
    )  # fmt: skip
    w.verdict = Verdict.objects.create(
        run=w.run, answer=w.answer, criterion=w.submitted_criterion, judge=w.judge,
        outcome="pass", cache_key="world",
    )  # fmt: skip
    w.label = HumanLabel.objects.create(
        answer=w.answer, criterion=w.submitted_criterion, reviewer=reviewer,
        rater=reviewer.username, label="pass",
    )  # fmt: skip
    w.adjudication = Adjudication.objects.create(
        answer=w.answer, criterion=w.submitted_criterion, label="pass", decided_by=reviewer
    )
    w.assignment = ReviewAssignment.objects.create(
        queue=ReviewAssignment.Queue.LABELLING, answer=w.answer, assignee=reviewer,
        assigned_by=admin,
    )  # fmt: skip
    w.perfect_answer = perfect_answer_save(
        checklist=w.submitted, text="Revenue was **$4.12 billion**.", by=other
    )
    from evaluation.datasets.models import DatasetExport

    w.export = DatasetExport.objects.create(dataset=w.dataset, requested_by=admin)
    from evaluation.alerts.models import RegressionAlert

    w.alert = RegressionAlert.objects.create(
        dataset=w.dataset, emails="team@example.com", created_by=admin
    )
    import datetime as dt

    from evaluation.schedules.services import schedule_save

    w.schedule = schedule_save(
        dataset=w.dataset, name="Nightly", system=w.system, panel=w.panel, at=dt.time(2, 30),
        days="*", enabled=True, by=admin,
    )  # fmt: skip
    from accounts import keys
    from accounts.models import Invitation
    from accounts.services import api_token_create

    w.api_token, _ = api_token_create(user=admin, name="World token", scope="write")
    w.invitation = Invitation.objects.create(
        dataset=w.dataset, email="newcomer@example.com", role="expert", invited_by=admin,
        key_digest=keys.digest(w.invitation_key),
        expires_at=timezone.now() + dt.timedelta(days=7),
    )  # fmt: skip
    from evaluation.pairwise.services import session_create

    AnswerFactory(query=w.query, system=w.system, run_label="world-second")
    w.pairwise_session = session_create(
        dataset=w.dataset, name="World pairs", system_a=w.system, system_b=w.system,
        run_label_b="world-second", by=admin,
    )  # fmt: skip
    # The run's analytics figures, as the task at a run's end keeps them: the analytics
    # pages and API serve kept figures and never compute them in the request.
    from evaluation.analytics import figures

    figures.warm(w.run)
    return w
