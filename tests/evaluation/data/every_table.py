"""A dataset with rows in every table that hangs off a dataset, for the deletion tests.

`Shared` holds what datasets share (people, a system, a judge, a panel, a group), built once;
`build_dataset` fills one dataset through the services where they exist, so that a second
dataset built the same way can be counted before and after the first one is deleted.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.apps import apps
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone
from guardian.models import GroupObjectPermission, UserObjectPermission
from guardian.shortcuts import assign_perm

from annotation import roles, services
from annotation.models import Checklist, Citation, Criterion, Dataset, DomainTag
from evaluation.alerts.models import AlertEvent, RegressionAlert
from evaluation.answers.models import Answer, System
from evaluation.archive import parquet as archive_parquet
from evaluation.archive import services as archive_services
from evaluation.checks.models import CriterionCheck
from evaluation.cross_evaluation.models import CrossEvaluationSettings
from evaluation.cross_evaluation.services import perfect_answer_save
from evaluation.datasets.models import DatasetExport
from evaluation.formality.models import FormalityAdvice
from evaluation.judges.models import Judge, Panel
from evaluation.kept.models import KeptFigure, KeptQueueRow, KeptRefresh, ScoresMove
from evaluation.labels.models import Adjudication, HumanLabel, ReviewAssignment
from evaluation.rewards.models import RewardAudit, RewardBatch
from evaluation.runs import scores
from evaluation.runs.models import GradedScore, Run, RunArchive, RunTask, Verdict
from evaluation.schedules.services import schedule_save
from tests.factories import PanelFactory, QueryFactory, UserFactory, offline_judge, valid_criteria

# Tables whose rows datasets share or that keep rows about a deleted dataset on purpose:
# the audit history stays (evaluation.datasets.purge, docs/operations.md).
NOT_PER_DATASET = ("audit.",)


@dataclass
class Shared:
    admin: object
    expert: object
    reviewer: object
    system: System
    judge: Judge
    panel: Panel
    group: Group


def build_shared() -> Shared:
    judge = offline_judge("Purge checks")
    panel = PanelFactory(name="Purge panel", judges=[judge])
    DomainTag.objects.get_or_create(name="purge-tag")
    return Shared(
        admin=UserFactory(username="purge-admin"),
        expert=UserFactory(username="purge-expert"),
        reviewer=UserFactory(username="purge-reviewer"),
        system=System.objects.create(name="Purge system"),
        judge=judge,
        panel=panel,
        group=Group.objects.create(name="Purge readers"),
    )


def build_dataset(shared: Shared, name: str, *, queries: int = 2) -> Dataset:
    s = shared
    dataset = services.dataset_create(name=name, by=s.admin)
    services.dataset_set_role(dataset=dataset, user=s.expert, role=roles.DatasetRole.EXPERT)
    services.dataset_set_role(dataset=dataset, user=s.reviewer, role=roles.DatasetRole.REVIEWER)
    assign_perm("annotation.view_dataset", s.group, dataset)
    # Generic object permissions (guardian's own tables, no foreign key): what an older
    # install or another app may have written for the dataset.
    dataset_type = ContentType.objects.get_for_model(Dataset)
    view = Permission.objects.get(codename="view_dataset")
    UserObjectPermission.objects.create(
        user=s.reviewer, permission=view, content_type=dataset_type, object_pk=str(dataset.pk)
    )
    GroupObjectPermission.objects.create(
        group=s.group, permission=view, content_type=dataset_type, object_pk=str(dataset.pk)
    )
    now = timezone.now()
    done = {"status": Run.Status.DONE, "kind": Run.Kind.IMPORTED, "finished_at": now}
    runs = [Run.objects.create(dataset=dataset, panel=s.panel, **done) for _ in range(2)]
    # A third run, archived: its verdicts are in a file, its frozen scores in RunArchive.
    archived = Run.objects.create(dataset=dataset, panel=s.panel, archived_at=now, **done)
    relative = archive_services.file_of(archived)
    (archive_services.archive_dir() / relative).parent.mkdir(parents=True, exist_ok=True)
    archive_parquet.write(archive_services.archive_dir() / relative, [])  # no verdict
    RunArchive.objects.create(
        run=archived, path=str(relative), verdicts=0, checksum="0",
        scores=scores.frozen(archived),
    )  # fmt: skip
    for run in runs:
        run.systems.add(s.system)
    for q in range(queries):
        query = QueryFactory(dataset=dataset, text=f"{name}: query {q}")
        query.tags.set(DomainTag.objects.filter(name="purge-tag"))
        query.assigned_experts.set([s.expert])
        for run in runs:
            run.queries.add(query)
        checklist = services.checklist_create_with_criteria(
            query=query, by=s.expert, criteria=valid_criteria(), submit=True
        )
        criteria = list(checklist.criteria.order_by("position"))
        first = criteria[0]
        Citation.objects.create(criterion=first, title="Q3 release", url="https://x.test/q3")
        FormalityAdvice.objects.create(criterion=first, text_hash=f"h{first.pk}")
        CriterionCheck.objects.create(criterion=first, kind="tool_set", params={"tools": ["x"]})
        answer = Answer.objects.create(system=s.system, query=query, text="An answer.")
        for run in runs:
            RunTask.objects.create(run=run, answer=answer, judge=s.judge, done_at=now)
            GradedScore.objects.create(
                run=run, answer=answer, judge=s.judge, outcome="scored", score=4, cache_key="g"
            )
            vote = {"judge": s.judge, "outcome": "pass", "cache_key": "k"}
            Verdict.objects.bulk_create(
                Verdict(run=run, answer=answer, criterion=c, **vote) for c in criteria
            )
        for c in criteria[:3]:
            HumanLabel.objects.create(
                answer=answer, criterion=c, reviewer=s.reviewer, rater=s.reviewer.username,
                label="pass",
            )  # fmt: skip
        Adjudication.objects.create(
            answer=answer, criterion=first, label="pass", decided_by=s.reviewer
        )
        ReviewAssignment.objects.create(
            queue=ReviewAssignment.Queue.LABELLING, answer=answer, criterion=first,
            assignee=s.reviewer, assigned_by=s.admin,
        )  # fmt: skip
        # A reworded criterion that carries a label: archived, its new wording points at it.
        services.checklist_reopen(checklist=checklist, by=s.expert)
        services.criterion_update(criterion=first, by=s.expert, text="States it anew.")
        services.checklist_submit(checklist=checklist, by=s.expert)
        perfect_answer_save(checklist=checklist, text="Revenue was $4.12 billion.", by=s.expert)
    kept = KeptFigure.objects.create(
        dataset=dataset, kind="labelling-queue", key=f"queue:{name}", cells={}
    )
    KeptQueueRow.objects.create(kept=kept, sort_key="1", answer_id=answer.pk)
    KeptRefresh.objects.create(
        dataset=dataset, run=runs[0], group="default", claimed_at=timezone.now()
    )
    ScoresMove.objects.create(dataset=dataset, scores=1, answer_id=answer.pk)
    CrossEvaluationSettings.objects.create(dataset=dataset, panel=s.panel)
    rewards = RewardBatch.objects.create(user=s.admin, dataset=dataset, panel=s.panel, items=1)
    RewardAudit.objects.create(batch=rewards, item=0, query=query, completion="An answer.")
    DatasetExport.objects.create(dataset=dataset, requested_by=s.admin)
    alert = RegressionAlert.objects.create(
        dataset=dataset, emails="team@example.com", created_by=s.admin
    )
    AlertEvent.objects.create(
        alert=alert, run=runs[1], previous=runs[0], system=s.system, before=0.8, after=0.6,
        difference=-0.2, payload={},
    )  # fmt: skip
    schedule_save(
        dataset=dataset, name=f"Nightly {name}", system=s.system, panel=s.panel,
        at=dt.time(2, 30), days="*", enabled=True, by=s.admin,
    )  # fmt: skip
    assert Checklist.objects.filter(query__dataset=dataset).exists()
    assert (
        Criterion.objects.filter(checklist__query__dataset=dataset)
        .exclude(previous_version=None)
        .exists()
    )
    return dataset


def table_counts() -> dict[str, int]:
    """Rows in every table of the project's apps (many-to-many tables included)."""
    return {
        model._meta.label: model._base_manager.count()
        for model in apps.get_models(include_auto_created=True)
    }
