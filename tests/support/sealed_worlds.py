"""Two datasets, A and B, that share a judge: the data of the seal test
(tests/config/test_dataset_seal.py, issue 38 point 7).

Each dataset is a tests/support/world.py `World`, so the permission matrix's route arguments
(tests/config/matrix_routes.py) point at its objects, made through the product's services
where there is one: its admin, reviewer and three experts (`expert`, the author of a draft
checklist; `other_expert`, of a submitted one; `idle_expert`, of none), a query with both
checklists, an answer, a label, an adjudication, a review assignment, a perfect answer, a
schedule, an alert, an invitation, the admin's API token, and three finished runs of the
judge (the world's `run` of the system answers, a cross-evaluation and a trial) and an export.

Every text a dataset owns carries a marker of its own, "SEALED-<A|B>-<field>-7f3a": its name
and description; the query's text, reference answer and external id; each criterion's text
and notes, a citation and a group of each checklist; the answer's text, external id, run label
and metadata; the label's note; the adjudication's reason; the perfect answer; the runs'
names and the verdicts' rationales; the schedule's name; the alert's addresses; the
invitation's address; the token's name; and the instructions the judge is tuned with for B.
`checklist_markers` says which of them are a checklist's own, for the blind rule.
Site-wide objects (the judge, the panels, the systems, guidelines) carry no marker: they
hold configuration, and the seal test checks that no dataset's markers reach them.

The judge is an LLM judge on a loopback server, the one member of a panel of each dataset.
It is tuned for B, with B's instructions and an example from B's adjudication, through
`tune_judge`, the one function that knows where tuning is kept; then each dataset's runs are
started through the run services and their tasks worked as a worker works them, so the
verdicts record the prompt version their run was started with.

A new dataset-owned text or object belongs here, with a marker; a new site-wide object
belongs here (unmarked) when it can be made to carry a dataset's content, so that the seal
test sees whether it does.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from unittest import mock

from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.authtoken.models import Token

from accounts import keys
from accounts.models import Invitation
from accounts.services import api_token_create
from annotation import roles, services
from annotation.models import Checklist, Dataset
from annotation.services.checklists import CitationData
from annotation.services.groups import group_create
from evaluation.alerts.services import alert_save
from evaluation.analytics import figures
from evaluation.cross_evaluation import services as cross_evaluation
from evaluation.datasets import services as data
from evaluation.datasets.export import ExportOptions
from evaluation.judges import examples, tuning
from evaluation.judges.models import Judge
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.pairwise import services as pairwise
from evaluation.review import services as review
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from evaluation.runs.models import Run, RunTask, Verdict
from evaluation.schedules.services import schedule_save
from loopback import default_responder
from tests.factories import (
    AnswerFactory,
    PanelFactory,
    QueryFactory,
    SystemFactory,
    UserFactory,
    valid_criteria,
)
from tests.support.world import World, seeded_reference

SUFFIX = "7f3a"


def marker(tag: str, name: str) -> str:
    """A string found in nothing but the field it marks. Letters, digits and hyphens only,
    so HTML, JSON, CSV and URL encodings leave it as it is."""
    return f"SEALED-{tag}-{name}-{SUFFIX}"


def tune_judge(
    judge: Judge,
    dataset: Dataset,
    *,
    instructions: str,
    examples_from_adjudications: Sequence[Adjudication],
    by,
) -> None:
    """Tune `judge` for the runs of `dataset`: these instructions, and worked examples made
    from these adjudications of the dataset, by `by` (an admin of the dataset).

    The one place the seal test knows where tuning is kept: the dataset's tuning of the
    judge (evaluation.judges.tuning), through the examples page's service, then the tuning's
    instructions."""
    examples.examples_set(
        judge=judge,
        dataset=dataset,
        chosen=[a.pk for a in examples_from_adjudications],
        among=[],
        by=by,
    )
    tuning.tuning_save(judge=judge, dataset=dataset, instructions=instructions, by=by)


@dataclass
class MarkedWorld(World):
    """A World whose dataset-owned texts carry markers."""

    tag: str = ""
    markers: set[str] = field(default_factory=set)
    # The markers of each checklist's own content (its criteria, their notes and citations,
    # its group, its perfect answer): what the blind rule hides from the query's other
    # experts until they submit.
    checklist_markers: dict[int, set[str]] = field(default_factory=dict)

    def mark(self, name: str) -> str:
        found = marker(self.tag, name)
        self.markers.add(found)
        return found


@dataclass
class SealedWorlds:
    a: MarkedWorld
    b: MarkedWorld
    judge: Judge  # the one judge of both datasets' panels
    server: object = None  # the loopback judge's server: every prompt sent is in its calls
    # People outside both datasets: "no_role" (in no group) and "site_admin" (in the Admin
    # group, on no dataset); "member_of_both", admin of A and of B, whose API token limited
    # to A is `limited_token`.
    users: dict[str, object] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    limited_token: str = ""


def _person(tokens: dict[str, str], username: str, group: str | None = None) -> object:
    user = UserFactory(username=username)
    if group:
        user.groups.add(Group.objects.get(name=group))
    tokens[username] = Token.objects.create(user=user).key
    return user


def _marked(text: str, mark: str) -> str:
    verb, rest = text.split(" ", 1)
    return f"{verb} {mark} {rest}"


def _checklist(w: MarkedWorld, by, name: str, *, count: int, submit: bool) -> Checklist:
    """A checklist of `by` for the world's query, its criteria marked (after their verb and
    before their figures, which the guideline's rules read), the first one with a marked
    citation."""
    own: set[str] = set()
    criteria = []
    for i, criterion in enumerate(valid_criteria()[:count]):
        text, notes = w.mark(f"criterion-{name}-{i}"), w.mark(f"criterion-notes-{name}-{i}")
        own |= {text, notes}
        citations = ()
        if i == 0:
            title = w.mark(f"citation-{name}")
            own.add(title)
            citations = (CitationData(title=title, url=f"https://example.com/{title}"),)
        marked = _marked(criterion.text, text)
        criteria.append(
            dataclasses.replace(criterion, text=marked, notes=notes, citations=citations)
        )
    checklist = services.checklist_create_with_criteria(
        query=w.query, by=by, criteria=criteria, submit=submit
    )
    w.checklist_markers[checklist.pk] = own
    return checklist


def _world(tag: str, judge: Judge) -> MarkedWorld:
    """One dataset's people and content, up to its labels and adjudication (no run yet)."""
    w = MarkedWorld(tag=tag, judge=judge, llm_judge=judge, **seeded_reference())

    def person(role: str, group: str) -> object:
        username = f"{tag.lower()}_{role}"
        user = _person(w.tokens, username, group)
        w.users[role], w.tokens[role] = user, w.tokens.pop(username)
        return user

    admin = person("dataset_admin", roles.Group.ADMIN.value)
    expert = person("expert", roles.Group.EXPERT.value)  # the draft's author
    other = person("other_expert", roles.Group.EXPERT.value)  # the submitted one's
    idle = person("idle_expert", roles.Group.EXPERT.value)  # has written nothing
    reviewer = person("reviewer", roles.Group.REVIEWER.value)

    w.dataset = services.dataset_create(
        name=w.mark("dataset-name"), description=w.mark("dataset-description"), by=admin
    )
    for user, role in (
        (expert, roles.DatasetRole.EXPERT), (other, roles.DatasetRole.EXPERT),
        (idle, roles.DatasetRole.EXPERT), (reviewer, roles.DatasetRole.REVIEWER),
    ):  # fmt: skip
        services.dataset_set_role(dataset=w.dataset, user=user, role=role)

    w.query = QueryFactory(
        dataset=w.dataset,
        text=f"{w.mark('query-text')} What did the company report for Q3 revenue?",
        reference_answer=w.mark("query-reference-answer"),
        external_id=w.mark("query-external-id"),
    )
    w.submitted = _checklist(w, other, "submitted", count=6, submit=True)
    w.draft = _checklist(w, expert, "draft", count=3, submit=False)
    w.submitted_criterion = w.submitted.criteria.order_by("position").first()
    w.criterion = w.draft.criteria.order_by("position").first()
    w.citation = w.criterion.citations.get()
    title = w.mark("group-draft")
    w.checklist_markers[w.draft.pk].add(title)
    w.group = group_create(checklist=w.draft, by=expert, title=title)

    w.system = SystemFactory(name=f"System of {tag}")  # site-wide: unmarked
    w.answer = AnswerFactory(
        query=w.query, system=w.system,
        text=f"{w.mark('answer-text')} Revenue was **$4.12 billion**, with a gross margin of "
        f"61.5%. {w.mark('answer-text-end')}",
        external_id=w.mark("answer-external-id"), run_label=w.mark("answer-run-label"),
        metadata={"source": w.mark("answer-metadata")},
    )  # fmt: skip
    # A second answer to the query, and a pairwise session of the two (issue 42): the
    # session's name and the pair's texts are the dataset's.
    second = AnswerFactory(
        query=w.query, system=SystemFactory(name=f"Second system of {tag}"),
        text=f"{w.mark('pairwise-answer-text')} Revenue was $4.1 billion.",
    )  # fmt: skip
    w.pairwise_session = pairwise.session_create(
        dataset=w.dataset, name=w.mark("pairwise-session-name"), system_a=w.system,
        run_label_a=w.answer.run_label, system_b=second.system, by=admin,
    )  # fmt: skip
    text = w.mark("perfect-answer")
    w.checklist_markers[w.submitted.pk].add(text)
    w.perfect_answer = cross_evaluation.perfect_answer_save(
        checklist=w.submitted, text=f"{text} Revenue was **$4.12 billion**.", by=other
    )

    item = {"answer": w.answer, "criterion": w.submitted_criterion}
    review.label_set(**item, reviewer=reviewer, label="pass", note=w.mark("label-note"))
    w.label = HumanLabel.objects.get(**item, reviewer=reviewer)
    w.adjudication = review.adjudicate(
        **item, by=reviewer, label="fail", reason=w.mark("adjudication-reason"),
        expected_version=None,
    )  # fmt: skip
    w.assignment = review.assignment_set(
        queue="labelling", answer=w.answer, assignee=reviewer, by=admin
    )
    return w


def _rest_of_world(w: MarkedWorld) -> None:
    """What hangs off the dataset besides its content: schedule, alert, token, invitation."""
    admin = w.users["dataset_admin"]
    w.schedule = schedule_save(
        dataset=w.dataset, name=w.mark("schedule-name"), system=w.system, panel=w.panel,
        at=dt.time(2, 30), days="*", enabled=True, by=admin,
    )  # fmt: skip
    w.alert = alert_save(
        dataset=w.dataset, by=admin, emails=f"{w.mark('alert-email').lower()}@example.com",
        webhook_url=f"https://{w.mark('alert-webhook').lower()}.example.com/hook",
    )  # fmt: skip
    w.api_token, _ = api_token_create(user=admin, name=w.mark("token-name"), scope="write")
    w.invitation_key = f"{w.tag.lower()}-invitation-key"
    w.invitation = Invitation.objects.create(
        dataset=w.dataset, email=f"{w.mark('invitation-email').lower()}@example.com",
        role="expert", invited_by=admin, key_digest=keys.digest(w.invitation_key),
        expires_at=timezone.now() + dt.timedelta(days=7),
    )  # fmt: skip


def _worked(run: Run) -> Run:
    """A started run worked to its end as a worker works it: each of its tasks in turn."""
    for task in RunTask.objects.filter(run=run).order_by("pk"):
        lifecycle.run_task(
            worker="seal", run_id=run.pk, answer_id=task.answer_id, judge_id=task.judge_id
        )
    run.refresh_from_db()
    assert run.status == Run.Status.DONE, (run.status, run.reason)
    return run


def _runs(w: MarkedWorld) -> None:
    """The dataset's runs, started by its admin through the services: a run of its system
    answers (the world's `run`), a cross-evaluation of its perfect answers and a trial of
    the judge on its labelled items; then its export, written as the export job writes it."""
    admin = w.users["dataset_admin"]
    w.run = _worked(
        runs.run_start(
            run=runs.run_create(dataset=w.dataset, panel=w.panel, by=admin, name=w.mark("run"))
        )
    )
    w.verdict = Verdict.objects.get(run=w.run, answer=w.answer, criterion=w.submitted_criterion)
    figures.warm(w.run)
    _worked(
        cross_evaluation.cross_evaluation_start(
            dataset=w.dataset, panel=w.panel, by=admin, queries=[w.query],
            name=w.mark("cross-evaluation"),
        )
    )  # fmt: skip
    trial = runs.run_create(
        dataset=w.dataset, panel=w.panel, by=admin, name=w.mark("trial"),
        scope=Run.Scope.LABELLED, baseline=w.run,
    )  # fmt: skip
    # Its figures kept too, as the task at a run's end keeps them: it is the newest run, the
    # one the analytics pages show by default.
    figures.warm(_worked(runs.run_start(run=trial)))

    w.export = data.export_start(
        dataset=w.dataset, by=admin, options=ExportOptions.parse(None, ["jsonl", "csv"])
    )
    # No progress written on the way: it goes out on a connection of its own, which waits
    # on this transaction (SQLite) or cannot see the job yet (PostgreSQL).
    with mock.patch.object(data, "PROGRESS_EVERY", float("inf")):
        data.export_run(export_id=w.export.pk)
    w.export.refresh_from_db()


def responder(request) -> dict:
    """The loopback judge's reply: a pass, with a rationale marked with the dataset whose
    answer and criterion it was asked about (never with what the instructions or examples
    say: those are the judge's tuning, whose reach is what the seal test checks)."""
    body = default_responder(request)
    tag = "B" if "SEALED-B-" in request.last_user_text else "A"
    rationale = marker(tag, "verdict-rationale")
    for verdict in body.get("verdicts", [body]):
        verdict["rationale"] = rationale
    return body


def build_sealed_worlds(server) -> SealedWorlds:
    """A and B, the judge (on the loopback `server`, whose responder is set here) tuned with
    B's content, then a finished run on each."""
    server.responder = responder
    judge = Judge.objects.create(
        name="Shared judge", base_url=server.base_url, model="model-0", timeout=5.0
    )
    a, b = _world("A", judge), _world("B", judge)
    for w in (a, b):
        w.mark("verdict-rationale")  # what the loopback judge says (`responder`)
        w.panel = PanelFactory(name=f"Panel of {w.tag}", judges=[judge])
        _rest_of_world(w)
    sealed = SealedWorlds(a=a, b=b, judge=judge, server=server)
    sealed.users["no_role"] = _person(sealed.tokens, "no_role")
    sealed.users["site_admin"] = _person(sealed.tokens, "site_admin", roles.Group.ADMIN.value)
    both = _person(sealed.tokens, "member_of_both", roles.Group.ADMIN.value)
    sealed.users["member_of_both"] = both
    for w in (a, b):
        services.dataset_set_role(dataset=w.dataset, user=both, role=roles.DatasetRole.ADMIN)
    _, sealed.limited_token = api_token_create(
        user=both, name="Limited to A", scope="read", datasets=[a.dataset]
    )

    tune_judge(
        judge, b.dataset, instructions=f"{b.mark('judge-instructions')} Read figures exactly.",
        examples_from_adjudications=[b.adjudication], by=b.users["dataset_admin"],
    )  # fmt: skip
    for w in (a, b):
        _runs(w)
    return sealed
