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
"""

from __future__ import annotations

from simple_history import register

from annotation.models import Checklist, Criterion
from evaluation.models import Adjudication, HumanLabel, Judge, JudgeTuning, Panel, PanelMember

AUDITED = (Checklist, Criterion, HumanLabel, Adjudication, Judge, JudgeTuning, Panel, PanelMember)

for model in AUDITED:
    register(model, app="audit", manager_name="history")
