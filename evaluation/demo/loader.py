"""Loads the demo content. Idempotent: every row is found by its natural key first."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from annotation import roles, services
from annotation.models import Checklist, Criterion, Dataset, Query
from evaluation.demo import data
from evaluation.models import Answer, System


def _user(username: str, *, group: roles.Group, superuser: bool = False):
    user, created = get_user_model().objects.get_or_create(
        username=username,
        defaults={
            "is_staff": superuser,
            "is_superuser": superuser,
            "email": f"{username}@example.com",
        },
    )
    if created:
        user.set_password(settings.DEMO_PASSWORD)
        user.save(update_fields=["password"])
    user.groups.add(Group.objects.get(name=group.value))
    return user


@transaction.atomic
def load_demo() -> Dataset:
    admin = _user(settings.DEMO_ADMIN_USERNAME, group=roles.Group.ADMIN, superuser=True)
    experts = {name: _user(name, group=roles.Group.EXPERT) for name in data.EXPERTS}
    reviewer = _user(data.REVIEWER, group=roles.Group.REVIEWER)

    dataset = Dataset.objects.filter(name=data.DATASET["name"]).first()
    if dataset is None:
        dataset = services.dataset_create(
            name=data.DATASET["name"], description=data.DATASET["description"], by=admin
        )
    for expert in experts.values():
        services.dataset_set_role(dataset=dataset, user=expert, role=roles.DatasetRole.EXPERT)
    services.dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)

    systems = {
        name: System.objects.get_or_create(name=name, version=version)[0]
        for name, version in data.SYSTEMS
    }
    for text, date, category, checklists, answers in data.QUERIES:
        query, _ = Query.objects.get_or_create(
            dataset=dataset,
            text=text,
            defaults={"query_date": dt.date.fromisoformat(date), "category": category},
        )
        for author_name, criteria in checklists.items():
            checklist, created = Checklist.objects.get_or_create(
                query=query, author=experts[author_name]
            )
            if created:
                Criterion.objects.bulk_create(
                    Criterion(checklist=checklist, position=i, kind=kind, text=criterion)
                    for i, (kind, criterion) in enumerate(criteria, start=1)
                )
        for system_name, markdown in answers.items():
            Answer.objects.get_or_create(
                system=systems[system_name],
                query=query,
                run_label="demo",
                defaults={"text": markdown},
            )
    return dataset
