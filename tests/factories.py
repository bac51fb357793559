"""factory_boy factories, and the judges panels are made of. Datasets get members through
services, never by writing perms."""

from __future__ import annotations

import datetime as dt

import factory
from django.contrib.auth import get_user_model

from annotation.models import Checklist, Criterion, Dataset, Query, QueryCategory
from evaluation.answers.models import Answer, System
from evaluation.judges.models import Judge, Panel, PanelMember

PASSWORD = "correct horse battery staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.django.Password(PASSWORD)


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Dataset

    name = factory.Sequence(lambda n: f"Dataset {n}")
    description = "A dataset made by a test."


class QueryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Query

    dataset = factory.SubFactory(DatasetFactory)
    text = factory.Sequence(lambda n: f"What did company {n} report for Q3 revenue?")
    query_date = dt.date(2026, 10, 1)
    category = factory.LazyFunction(
        lambda: QueryCategory.objects.get_or_create(name="Point-fact retrieval")[0]
    )


class ChecklistFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Checklist

    query = factory.SubFactory(QueryFactory)
    author = factory.SubFactory(UserFactory)


class CriterionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Criterion

    checklist = factory.SubFactory(ChecklistFactory)
    position = factory.Sequence(int)
    text = factory.Sequence(lambda n: f"States the revenue figure number {n}.")
    kind = Criterion.Kind.FACT


class SystemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = System
        django_get_or_create = ("name", "version")

    name = factory.Sequence(lambda n: f"System {n}")
    version = "1.0"


class AnswerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Answer

    system = factory.SubFactory(SystemFactory)
    query = factory.SubFactory(QueryFactory)
    text = "Revenue was **$4.1 billion**."


class PanelFactory(factory.django.DjangoModelFactory):
    """Every panel of the tests: `PanelFactory(judges=[a, b], method="unanimity")`.

    Members follow the order of `judges` (finished_run gives a run's i-th vote to the i-th
    member). A judge may come with its member's options, `(judge, {"samples": 2})`;
    `judges__samples=3` gives them to every member."""

    class Meta:
        model = Panel
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Panel {n}")

    @factory.post_generation
    def judges(panel, create, extracted, **every_member):
        for entry in extracted or ():
            judge, options = entry if isinstance(entry, tuple) else (entry, {})
            PanelMember.objects.create(panel=panel, judge=judge, **{**every_member, **options})


def offline_judge(name: str = "Offline") -> Judge:
    """A no-LLM judge: runs of its panels call no endpoint."""
    return Judge.objects.create(name=name, kind=Judge.Kind.NO_LLM)


def loopback_judges(server, count: int, *, timeout: float = 5.0) -> list[Judge]:
    """LLM judges on the loopback server, "Judge 0", "Judge 1", ... with models "model-0",
    "model-1", ...: a responder tells them apart by `request.model`."""
    return [
        Judge.objects.create(
            name=f"Judge {j}", base_url=server.base_url, model=f"model-{j}", timeout=timeout
        )
        for j in range(count)
    ]


def external_judges(count: int) -> list[Judge]:
    """Judges whose verdicts are imported, never called ("Reviewed judge 0", ...): the same
    rows for every panel of as many judges in a test."""
    return [
        Judge.objects.get_or_create(
            name=f"Reviewed judge {j}", defaults={"kind": Judge.Kind.EXTERNAL}
        )[0]
        for j in range(count)
    ]


def source_types(*slugs: str):
    from annotation.models import SourceType

    return list(SourceType.objects.filter(slug__in=slugs))


def valid_criteria():
    """Six criteria that meet the finance guideline: the shape of a real small checklist."""
    from annotation.services.checklists import CriterionData

    transcript = source_types("earnings-call-transcript")
    release = source_types("earnings-release")
    return [
        CriterionData(
            text="Uses the Q3 FY2026 earnings call as the primary source.", kind="methodology"
        ),
        CriterionData(text="States Q3 revenue of $4.12 billion.", source_types=release),
        CriterionData(text="Reports a Q3 gross margin of 61.5%.", source_types=release),
        CriterionData(
            text="Mentions the Q4 revenue guidance of $4.3–4.45 billion.",
            source_types=transcript,
        ),
        CriterionData(
            text="Explains that data-centre demand drove the Q3 revenue beat.",
            source_types=transcript,
        ),
        CriterionData(text="Presents guidance versus actuals in a table.", kind="format"),
    ]


def tune(judge: Judge, dataset: Dataset, *, by=None, **fields):
    """Set the dataset's instructions and/or examples for the judge through the service."""
    from evaluation.judges.tuning import tuning_save

    return tuning_save(judge=judge, dataset=dataset, by=by, **fields)
