"""Audit history (django-simple-history) of the records people's work and trust rest on:
checklists, criteria, human labels, adjudications, judges, each dataset's judge tuning,
panels and their members.

Every save or delete through the ORM writes a historical row with who (the request's user,
through simple_history's middleware), when, what kind of change and every field as it then
was. The historical models live here, in their own app, registered from outside their
models: annotation and evaluation keep their models and migrations untouched, and the
history tables can be pruned or moved without touching them. Queryset `update()` and
`bulk_*` calls write no history (position renumbering, imports of many rows): the services
that matter (archiving or rewording a criterion, labelling, adjudicating, saving a judge or
a panel) save row by row. Admins read the history on each object's admin page ("History").

Dataset roles are object permissions, which keep no versions: `RoleChange` records each
change of a person's role instead.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from simple_history import register

from annotation.models import Checklist, Criterion, Dataset
from evaluation.judges.models import Judge, JudgeTuning, Panel, PanelMember
from evaluation.labels.models import Adjudication, HumanLabel

AUDITED = (Checklist, Criterion, HumanLabel, Adjudication, Judge, JudgeTuning, Panel, PanelMember)

for model in AUDITED:
    register(model, app="audit", manager_name="history")


class RoleChange(models.Model):
    """A person's role on a dataset changed: granted, changed or taken away, by whom, when
    and how (accounts.services.people.role_set writes every one). Django's object
    permissions keep no history of their own, and a demoted admin or a role granted by an
    import must be traceable. Rows outlive the dataset and the people, as the rest of the
    audit history does: the dataset and the member are kept by id and name."""

    class Via(models.TextChoices):
        MEMBERS = "members", "Members page"
        INVITATION = "invitation", "Invitation of an existing account"
        ACCEPTED = "accepted", "Invitation link accepted"
        ACCOUNT = "account", "Account made by an admin"
        IMPORT = "import", "Dataset import"

    changed_at = models.DateTimeField(default=timezone.now)
    dataset = models.ForeignKey(
        Dataset, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    dataset_name = models.CharField(max_length=200)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150)
    before = models.CharField(max_length=10, blank=True, help_text="Empty: no role.")
    after = models.CharField(max_length=10, blank=True, help_text="Empty: no role.")
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Empty: the command line.",
    )
    via = models.CharField(max_length=12, choices=Via.choices)

    class Meta:
        ordering = ["-changed_at", "-pk"]
        indexes = [models.Index(fields=["dataset", "changed_at"], name="rolechange_dataset_time")]

    def __str__(self) -> str:
        return (
            f"{self.username} on {self.dataset_name}: {self.before or 'no role'} → "
            f"{self.after or 'no role'}"
        )
