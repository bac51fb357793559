"""Loads the demo content. Idempotent: every row is found by its natural key first."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from annotation import roles, services
from annotation.models import Checklist, Criterion, Dataset, Query, QueryCategory, SourceType
from annotation.services.checklists import CitationData, CriterionData
from evaluation.answers import agent_fields
from evaluation.answers.models import Answer, System
from evaluation.checks.models import CriterionCheck
from evaluation.cross_evaluation import services as cross_evaluation
from evaluation.cross_evaluation.models import CrossEvaluationSettings
from evaluation.demo import data
from evaluation.judges.models import Judge, Panel, PanelMember


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


def _criteria(items, *, sources, source_types, citation) -> list[CriterionData]:
    """Fact criteria are tagged with the query's sources; the first one cites a document."""
    title, doc_id, citation_type, published = citation
    first_fact = next((i for i, (kind, _) in enumerate(items) if kind == "fact"), None)
    return [
        CriterionData(
            text=text,
            kind=kind,
            notes=data.NOTES.get(text, ""),
            source_types=[source_types[slug] for slug in sources] if kind == "fact" else [],
            citations=(
                CitationData(
                    title=title,
                    url=doc_id,
                    source_type=source_types[citation_type],
                    published_on=dt.date.fromisoformat(published),
                ),
            )
            if i == first_fact
            else (),
        )
        for i, (kind, text) in enumerate(items)
    ]


@transaction.atomic
def load_demo() -> Dataset:
    admin = _user(settings.DEMO_ADMIN_USERNAME, group=roles.Group.ADMIN, superuser=True)
    experts = {name: _user(name, group=roles.Group.EXPERT) for name in data.EXPERTS}
    reviewer = _user(data.REVIEWER, group=roles.Group.REVIEWER)

    dataset = Dataset.objects.filter(name=data.DATASET["name"]).first()
    if dataset is None:
        dataset = services.dataset_create(
            name=data.DATASET["name"],
            description=data.DATASET["description"],
            show_submitted_checklists=True,
            by=admin,
        )
    for expert in experts.values():
        services.dataset_set_role(dataset=dataset, user=expert, role=roles.DatasetRole.EXPERT)
    services.dataset_set_role(dataset=dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)

    source_types = {st.slug: st for st in SourceType.objects.all()}
    systems = {
        name: System.objects.get_or_create(name=name, version=version)[0]
        for name, version in data.SYSTEMS
    }
    for index, (text, date, category, checklists, answers) in enumerate(data.QUERIES):
        query, created = Query.objects.get_or_create(
            dataset=dataset,
            text=text,
            defaults={
                "query_date": dt.date.fromisoformat(date),
                "category": QueryCategory.objects.get(name=category),
            },
        )
        if created:
            query.assigned_experts.set(experts.values())
        sources, citation = data.SOURCES[index]
        for author_name, items in checklists.items():
            author = experts[author_name]
            if Checklist.objects.filter(query=query, author=author).exists():
                continue
            services.checklist_create_with_criteria(
                query=query,
                by=author,
                criteria=_criteria(
                    items, sources=sources, source_types=source_types, citation=citation
                ),
                submit=(index, author_name) in data.SUBMITTED,
            )
        for system_name, markdown in answers.items():
            agent = _agent_fields(data.AGENT_ANSWERS.get((index, system_name), {}))
            Answer.objects.get_or_create(
                system=systems[system_name],
                query=query,
                run_label="demo",
                defaults={"text": markdown, **agent},
            )
        _criterion_checks(index, query, experts)
    panel = _offline_panel()
    _perfect_answers(dataset, panel)
    return dataset


def _criterion_checks(index: int, query: Query, experts: dict) -> None:
    """The demo's trajectory checks and evidence settings; a criterion's existing settings
    are left as users edited them."""
    for (at, author, text), settings_ in data.CRITERION_CHECKS.items():
        if at != index:
            continue
        criterion = Criterion.objects.filter(
            checklist__query=query, checklist__author=experts[author], text=text
        ).first()
        if criterion is not None:
            CriterionCheck.objects.get_or_create(criterion=criterion, defaults=settings_)


def _perfect_answers(dataset: Dataset, panel: Panel) -> None:
    """Each submitted checklist of the first query gets a perfect answer written by its
    author (its criteria stated as findings), so that cross-evaluation can be tried at once
    with the offline panel. Existing perfect answers are left as users edited them."""

    if not CrossEvaluationSettings.objects.filter(dataset=dataset).exists():
        cross_evaluation.settings_update(dataset=dataset, panel=panel, automatic=False)
    first = dataset.queries.order_by("pk").first()
    submitted = Checklist.objects.filter(query=first, status=Checklist.Status.SUBMITTED)
    for checklist in submitted.filter(perfect_answer__isnull=True).select_related("author"):
        lines = [f"- {c.text}" for c in checklist.criteria.order_by("position")]
        text = f"**Answer written by {checklist.author.username}**\n\n" + "\n".join(lines)
        cross_evaluation.perfect_answer_save(checklist=checklist, text=text, by=checklist.author)


def _offline_panel() -> Panel:
    """The offline judge of the embedded set-up: no-LLM checks, so a run can be watched end
    to end without an API key."""
    judge, _ = Judge.objects.get_or_create(
        name="Offline checks", defaults={"kind": Judge.Kind.NO_LLM}
    )
    panel, _ = Panel.objects.get_or_create(
        name="Offline checks",
        defaults={"description": "Figures, keywords and format checks; no LLM, no cost."},
    )
    PanelMember.objects.get_or_create(panel=panel, judge=judge)
    return panel


def _agent_fields(given: dict) -> dict:
    """The demo's turns, context and metadata in the form every import stores them (keys
    in one order): on SQLite, JSON keeps the order it is given, and an export re-imported
    must compare equal to what the demo stored."""
    if not given:
        return {}
    values, problems = agent_fields.check_fields(given)
    if problems:  # the demo's own data: a mistake here is a bug
        raise ValueError(f"demo agent answer: {problems[0]}")
    return {field: values[field] for field in given}
