"""The bridge between stored checklists and the plain-Python guideline rules.

Builds annotation.validation inputs from model instances (using what the caller prefetched)
and picks the guideline version that applies to a dataset.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from annotation.models import Checklist, Criterion, Dataset, Guideline
from annotation.seeds import FINANCE_GUIDELINE
from annotation.validation import (
    FINANCE,
    ChecklistInput,
    CitationInput,
    CriterionInput,
    GuidelineConfig,
    Report,
    vagueness,
    validate_checklist,
)


def guideline_for(dataset: Dataset) -> Guideline | None:
    """The dataset's own guideline, else the newest version of the default one."""
    if dataset.guideline_id:
        return dataset.guideline
    return Guideline.objects.filter(name=FINANCE_GUIDELINE).order_by("-version").first()


def config_of(guideline: Guideline | None) -> GuidelineConfig:
    return GuidelineConfig.from_dict(guideline.config) if guideline else FINANCE


def _citation_input(citation) -> CitationInput:
    """From a stored Citation or an unsaved CitationData: both have these attributes."""
    source = citation.source_type
    return CitationInput(
        title=citation.title,
        url=citation.url,
        source_type=source.slug if source else "",
        published_on=citation.published_on,
    )


def criterion_values_input(
    *,
    key: str,
    text: str,
    kind: str,
    notes: str,
    source_types: Iterable[str],
    citations: Iterable[CitationInput],
    weight: float | Decimal,
    in_group: bool | None,
) -> CriterionInput:
    """What the rules read of one criterion, from plain values. The editor (stored or
    unsaved criteria, below) and the dataset import (file rows) both come through here, so
    the rules see the same fields from each: every argument is required, and the notes,
    where an author justifies an override (`override fact-anchor: …`), cannot be left out
    by one caller and honoured by the other. `weight` is negative for a penalty (the
    penalty-wording rule); `in_group` None when the caller does not know (criterion-in-group)."""
    return CriterionInput(
        key=key,
        text=text,
        kind=kind,
        source_types=tuple(source_types),
        citations=tuple(citations),
        notes=notes,
        weight=float(weight),
        in_group=in_group,
    )


def _criterion_input(key: str, criterion, source_types, citations) -> CriterionInput:
    return criterion_values_input(
        key=key,
        text=criterion.text,
        kind=criterion.kind,
        notes=criterion.notes,
        source_types=(st.slug for st in source_types),
        citations=(_citation_input(c) for c in citations),
        weight=criterion.weight,
        # A stored criterion knows its group; unsaved data (a payload) does not say.
        in_group=criterion.group_id is not None if isinstance(criterion, Criterion) else None,
    )


def criterion_input(criterion: Criterion) -> CriterionInput:
    # .all() on prefetched relations: no query per criterion when the caller prefetched.
    return _criterion_input(
        str(criterion.pk), criterion, criterion.source_types.all(), criterion.citations.all()
    )


def checklist_input(checklist: Checklist, criteria: Iterable[Criterion]) -> ChecklistInput:
    return ChecklistInput(
        criteria=tuple(criterion_input(c) for c in criteria),
        query_date=checklist.query.query_date,
    )


def criteria_for_validation(checklist: Checklist):
    return checklist.criteria.active().prefetch_related("source_types", "citations__source_type")


def checklist_report(checklist: Checklist, config: GuidelineConfig | None = None) -> Report:
    config = config or config_of(guideline_for(checklist.query.dataset))
    return validate_checklist(
        checklist_input(checklist, criteria_for_validation(checklist)), config
    )


def input_from_data(criteria, query_date) -> ChecklistInput:
    """Validation input from unsaved criteria (annotation.services.CriterionData), keyed by
    their index, for dry runs and for checking a payload before anything is written."""
    return ChecklistInput(
        criteria=tuple(
            _criterion_input(str(index), data, data.source_types, data.citations)
            for index, data in enumerate(criteria)
        ),
        query_date=query_date,
    )


def override_summary(notes: str) -> str:
    """The vagueness overrides written in a criterion's notes, for the editor to show."""
    found = [vagueness.find_override(notes, rule_id) for rule_id in vagueness.OVERRIDABLE]
    return "; ".join(f"{o.rule_id}: {o.justification}" for o in found if o is not None)
