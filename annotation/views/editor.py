"""The checklist editor: add, edit, reorder and delete criteria, cite sources, submit.

Editing autosaves: each criterion row is its own form that htmx posts after a pause in
typing; the answer is that criterion's rule results plus the checklist summary (swapped
out of band), so the text box keeps focus while the expert types. Without JavaScript the
same forms post and redirect back.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial, wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation import access, guidelines, hooks, scoring, selectors, services
from annotation.forms import (
    CitationForm,
    CriterionForm,
    GroupChoiceForm,
    GroupForm,
    NewCriterionForm,
    allowed_source_types,
)
from annotation.models import Checklist, Criterion, CriterionGroup, Scoring, Undecided
from annotation.services import groups
from annotation.services.checklists import CitationData, CriterionData, CriterionWork
from annotation.validation import Finding

TEMPLATE = "annotation/checklist_editor.html"
NO_WORK = CriterionWork()


@dataclass(frozen=True)
class EditorRow:
    criterion: Criterion
    findings: tuple[Finding, ...]
    source_type_ids: frozenset[int]
    advice: Any = None  # evaluation's FormalityAdvice, through annotation.hooks
    work: CriterionWork = NO_WORK  # reviewers' work on this wording: warn before edits
    override: str = ""  # the justified vagueness override in the notes, shown on the row


@dataclass(frozen=True)
class EditorGroup:
    """A group as a collapsible section: its own criteria's rows, then its subgroups."""

    group: CriterionGroup
    depth: int  # 1 at the top
    rows: list[EditorRow]
    children: list[EditorGroup]
    inside: frozenset[int]  # its id and its subgroups' ids: parents it cannot take
    count: int  # criteria in the whole section, subgroups included


@dataclass(frozen=True)
class GroupOption:
    """A group in a choice list, indented by depth."""

    pk: int
    label: str


def _group_tree(
    all_groups: list[CriterionGroup], rows: list[EditorRow]
) -> tuple[list[EditorRow], list[EditorGroup], list[GroupOption]]:
    """The criteria in no group, the tree of groups holding the others, and every group as
    a choice (depth first: annotation.services.groups.section_order)."""
    children: dict[int | None, list[CriterionGroup]] = {}
    for group in all_groups:  # by position, then id (selectors.checklist_for_editor)
        children.setdefault(group.parent_id, []).append(group)
    own: dict[int | None, list[EditorRow]] = {}
    for row in rows:
        own.setdefault(row.criterion.group_id, []).append(row)
    options: list[GroupOption] = []

    def build(group: CriterionGroup, depth: int) -> EditorGroup:
        options.append(GroupOption(group.pk, "\u2003" * (depth - 1) + group.title))
        kids = [build(child, depth + 1) for child in children.get(group.pk, [])]
        inside = frozenset({group.pk}).union(*(k.inside for k in kids))
        mine = own.get(group.pk, [])
        count = len(mine) + sum(k.count for k in kids)
        return EditorGroup(group, depth, mine, kids, inside, count)

    tree = [build(group, 1) for group in children.get(None, [])]
    return own.get(None, []), tree, options


def _editor_context(request: HttpRequest, checklist: int | Checklist, **extra: object) -> dict:
    """The editor's context for a checklist's id (loaded here, after a change), or for the
    checklist the request's access check has just loaded (not loaded twice)."""
    if isinstance(checklist, Checklist):
        checklist = selectors.editor_checklist(checklist)
    else:
        checklist = selectors.checklist_for_editor(checklist)
    all_groups = list(checklist.groups.all())  # prefetched, by position
    sections = groups.reading_sections((g.pk, g.parent_id) for g in all_groups)
    section = {pk: index for index, pk in enumerate(sections)}
    criteria = list(checklist.criteria.all())  # active ones (selectors.checklist_for_editor)
    if all_groups:  # as the expert reads them (positions follow, annotation.services.groups)
        criteria.sort(key=lambda c: (section.get(c.group_id, 0), c.position, c.pk))
    work = services.criteria_work(c.pk for c in criteria)
    guideline = guidelines.guideline_for(checklist.query.dataset)
    report = guidelines.validate_checklist(
        guidelines.checklist_input(checklist, criteria), guidelines.config_of(guideline)
    )
    rows = [
        EditorRow(
            criterion=c,
            findings=report.for_criterion(str(c.pk)),
            source_type_ids=frozenset(st.pk for st in c.source_types.all()),
            advice=hooks.current_advice(c),
            work=work[c.pk],
            override=guidelines.override_summary(c.notes),
        )
        for c in criteria
    ]
    loose_rows, tree, group_options = _group_tree(all_groups, rows)
    editable = checklist.is_editable and checklist.author_id == request.user.pk
    dataset = checklist.query.dataset
    return {
        # The full page says (checklist_detail); the partials never render the card.
        "can_set_scoring": False,
        "scoring_choices": Scoring.choices,
        "undecided_choices": Undecided.choices,
        "dataset_scoring": Scoring(scoring.strategy_of(dataset.scoring)).label,
        "dataset_undecided": Undecided(scoring.undecided_of(dataset.undecided)).label,
        "checklist": checklist,
        "query": checklist.query,
        "dataset": checklist.query.dataset,
        "guideline": guideline,
        "report": report,
        "rows": rows,
        "loose_rows": loose_rows,
        "tree": tree,
        "group_options": group_options,
        "editable": editable,
        "source_types": list(allowed_source_types()),
        "kinds": Criterion.Kind.choices,
        "new_form": NewCriterionForm(),
        "events": checklist.events.select_related("actor").order_by("-at", "-id")[:20],
        **extra,
    }


def _partials(request: HttpRequest, context: dict, *names: str) -> HttpResponse:
    """Render named partials of the editor into one htmx response; the checklist summary
    always comes along, swapped out of band, because every change can alter it."""
    context = {**context, "oob": True}
    html = "".join(
        render_to_string(f"{TEMPLATE}#{n}", context, request) for n in (*names, "summary")
    )
    return HttpResponse(html)


def _row(context: dict, criterion_pk: int) -> EditorRow:
    return next(r for r in context["rows"] if r.criterion.pk == criterion_pk)


def _row_response(
    request: HttpRequest, criterion: Criterion, partial: str = "criterion-row", **extra: object
) -> HttpResponse:
    """One criterion re-rendered (the whole row, or just its findings) plus the summary."""
    context = _editor_context(request, criterion.checklist_id, **extra)
    context["row"] = _row(context, criterion.pk)
    return _partials(request, context, partial)


def _criteria_response(request: HttpRequest, checklist_id: int) -> HttpResponse:
    """The whole list re-rendered (positions changed) plus the summary."""
    return _partials(request, _editor_context(request, checklist_id), "criteria")


def locked_checklist_answers_409(view):
    """A stale tab may post to a checklist submitted since: say so instead of failing."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except services.ChecklistNotEditable as exc:
            if request.htmx:
                return HttpResponse(str(exc), status=409)
            messages.error(request, str(exc))
            return redirect(request.headers.get("Referer") or "home")

    return wrapper


def _latest_version(criterion: Criterion) -> Criterion:
    """An autosave still in flight when its criterion was reworded into a new version posts
    to the old id: it edits the newest version instead."""
    while criterion.archived_at is not None:
        newer = Criterion.objects.filter(previous_version=criterion).first()
        if newer is None:
            break
        newer.checklist = criterion.checklist
        criterion = newer
    return criterion


def _back(checklist: Checklist, anchor: str = "") -> HttpResponse:
    return redirect(reverse("checklist-detail", args=[checklist.pk]) + anchor)


@require_GET
@login_required
def checklist_detail(request: HttpRequest, pk: int) -> HttpResponse:
    checklist, perms = access.access_checklist_with_perms(request.user, pk)
    health = partial(hooks.checklist_health, request.user, checklist)  # computed if rendered
    context = _editor_context(
        request, checklist, criterion_health=health,
        can_set_scoring=access.can_set_scoring(request.user, checklist, perms),
    )  # fmt: skip
    return render(request, TEMPLATE, context)


@require_POST
@login_required
@locked_checklist_answers_409
def criterion_create(request: HttpRequest, pk: int) -> HttpResponse:
    checklist = access.access_checklist(request.user, pk, edit=True)
    form = NewCriterionForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Criterion not added: {form.errors.as_text()}")
        return _back(checklist, "#new-criterion")
    data = CriterionData(text=form.cleaned_data["text"], kind=form.cleaned_data["kind"])
    if not checklist.groups.exists():
        criterion = services.criterion_add(checklist=checklist, by=request.user, data=data)
        if request.htmx:
            return _row_response(request, criterion)
        return _back(checklist, f"#criterion-{criterion.pk}")
    # With groups, the new criterion may go into one and the numbers after it change: the
    # whole list comes back.
    choice = GroupChoiceForm(request.POST, checklist_id=checklist.pk)
    group = choice.cleaned_data["group"] if choice.is_valid() else None
    criterion = groups.criterion_add_to_group(
        checklist=checklist, by=request.user, data=data, group=group
    )
    if request.htmx:
        response = _criteria_response(request, checklist.pk)
        response["HX-Retarget"] = "#criteria"
        response["HX-Reswap"] = "outerHTML"
        return response
    return _back(checklist, f"#criterion-{criterion.pk}")


@require_POST
@login_required
@locked_checklist_answers_409
def criterion_update(request: HttpRequest, pk: int) -> HttpResponse:
    criterion = _latest_version(access.access_criterion(request.user, pk, edit=True))
    edited = criterion
    form = CriterionForm(request.POST, instance=criterion)
    if form.is_valid():
        data = form.cleaned_data
        try:
            edited = services.criterion_update(
                criterion=criterion,
                by=request.user,
                text=data["text"],
                kind=data["kind"],
                source_types=list(data["source_types"]),
                notes=data["notes"],
                weight=data["weight"],
                is_core=data["is_core"],
            )
        except scoring.ScoringRefused as exc:  # a weight the checklist's strategy cannot score
            form.add_error(None, exc)
    if request.htmx and edited.pk != criterion.pk:
        # Reworded into a new version: the whole row changes (its forms post to the new id).
        response = _row_response(request, edited, new_version=edited.pk)
        response["HX-Retarget"] = f"#criterion-{criterion.pk}"
        response["HX-Reswap"] = "outerHTML"
        return response
    if request.htmx:
        return _row_response(
            request, criterion, "criterion-findings", form_errors=form.errors,
            saved=form.is_valid(),
        )  # fmt: skip
    if edited.pk != criterion.pk:
        messages.info(request, "Reworded as a new version: reviewers' work stays on the old one.")
        return _back(criterion.checklist, f"#criterion-{edited.pk}")
    if form.is_valid():
        messages.success(request, f"Criterion {criterion.position} saved.")
    else:
        messages.error(request, f"Criterion not saved: {form.errors.as_text()}")
    return _back(criterion.checklist, f"#criterion-{criterion.pk}")


@require_GET
@login_required
def criterion_formality(request: HttpRequest, pk: int) -> HttpResponse:
    """The formality advice box; htmx polls it while the advice is pending."""
    criterion = access.access_criterion(request.user, pk)
    advice = hooks.advice_on_wording(criterion)
    row = EditorRow(criterion=criterion, findings=(), source_type_ids=frozenset(), advice=advice)
    return render(request, f"{TEMPLATE}#formality-advice", {"row": row})


@require_POST
@login_required
@locked_checklist_answers_409
def criterion_delete(request: HttpRequest, pk: int) -> HttpResponse:
    criterion = access.access_criterion(request.user, pk, edit=True)
    checklist = criterion.checklist
    work = services.criterion_delete(criterion=criterion, by=request.user)
    if request.htmx:
        return _criteria_response(request, checklist.pk)
    if work:
        messages.info(request, f"Criterion archived, not deleted: {work.describe()} kept.")
    return _back(checklist)


@require_POST
@login_required
@locked_checklist_answers_409
def criterion_move(request: HttpRequest, pk: int) -> HttpResponse:
    criterion = access.access_criterion(request.user, pk, edit=True)
    direction = request.POST.get("direction", "down")
    offset = -1 if direction in ("up", "group-up") else 1
    if direction.startswith("group-"):  # straight into the previous or next group
        groups.criterion_shift_group(criterion=criterion, by=request.user, offset=offset)
    else:
        groups.criterion_shift(criterion=criterion, by=request.user, offset=offset)
    if request.htmx:
        return _criteria_response(request, criterion.checklist_id)
    return _back(criterion.checklist, f"#criterion-{criterion.pk}")


@require_POST
@login_required
@locked_checklist_answers_409
def criterion_group(request: HttpRequest, pk: int) -> HttpResponse:
    """Move a criterion into a group of its checklist (at its end), or out of every group."""
    criterion = access.access_criterion(request.user, pk, edit=True)
    form = GroupChoiceForm(request.POST, checklist_id=criterion.checklist_id)
    if form.is_valid():
        groups.criterion_to_group(
            criterion=criterion, by=request.user, group=form.cleaned_data["group"]
        )
    return _tree_changed(request, criterion.checklist, form, f"#criterion-{criterion.pk}")


def _tree_changed(
    request: HttpRequest, checklist: Checklist, form: object, anchor: str = "",
    refused: str = "",
) -> HttpResponse:  # fmt: skip
    """The answer to a change of the groups: the whole list again (htmx, with what was
    refused), or back to the editor with a message."""
    errors = getattr(form, "errors", None)
    problem = refused or (errors.as_text() if errors else "")
    if request.htmx:
        context = _editor_context(request, checklist.pk, group_error=problem)
        # The group choices outside the list (new criterion, new group) follow, out of band.
        return _partials(request, context, "criteria", "new-criterion-group", "new-group-parent")
    if problem:
        messages.error(request, f"Not changed: {problem}")
    return _back(checklist, anchor)


@require_POST
@login_required
@locked_checklist_answers_409
def group_create(request: HttpRequest, pk: int) -> HttpResponse:
    checklist = access.access_checklist(request.user, pk, edit=True)
    form = GroupForm(request.POST, checklist_id=checklist.pk)
    refused = ""
    if form.is_valid():
        data = form.cleaned_data
        try:
            group = groups.group_create(
                checklist=checklist, by=request.user, title=data["title"],
                description=data["description"], weight=data["weight"], parent=data["parent"],
            )  # fmt: skip
        except groups.GroupRefused as exc:
            refused = str(exc)
        else:
            return _tree_changed(request, checklist, form, f"#group-{group.pk}")
    return _tree_changed(request, checklist, form, "#new-group", refused)


@require_POST
@login_required
@locked_checklist_answers_409
def group_update(request: HttpRequest, pk: int) -> HttpResponse:
    """Rename, describe, weight or nest (choose the parent of) a group."""
    group = access.access_group(request.user, pk, edit=True)
    form = GroupForm(request.POST, checklist_id=group.checklist_id)
    refused = ""
    if form.is_valid():
        data = form.cleaned_data
        try:
            groups.group_update(
                group=group, by=request.user, title=data["title"].strip(),
                description=data["description"], weight=data["weight"], parent=data["parent"],
            )  # fmt: skip
        except groups.GroupRefused as exc:
            refused = str(exc)
    return _tree_changed(request, group.checklist, form, f"#group-{group.pk}", refused)


@require_POST
@login_required
@locked_checklist_answers_409
def group_move(request: HttpRequest, pk: int) -> HttpResponse:
    """Move a group up or down among its siblings."""
    group = access.access_group(request.user, pk, edit=True)
    offset = -1 if request.POST.get("direction") == "up" else 1
    groups.group_shift(group=group, by=request.user, offset=offset)
    return _tree_changed(request, group.checklist, None, f"#group-{group.pk}")


@require_POST
@login_required
@locked_checklist_answers_409
def group_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """Delete a group and its subgroups; their criteria stay, in no group."""
    group = access.access_group(request.user, pk, edit=True)
    groups.group_delete(group=group, by=request.user)
    return _tree_changed(request, group.checklist, None)


@require_POST
@login_required
@locked_checklist_answers_409
def citation_create(request: HttpRequest, pk: int) -> HttpResponse:
    criterion = access.access_criterion(request.user, pk, edit=True)
    form = CitationForm(request.POST)
    if form.is_valid():
        services.citation_add(
            criterion=criterion, by=request.user, data=CitationData(**form.cleaned_data)
        )
    elif not request.htmx:
        messages.error(request, f"Citation not added: {form.errors.as_text()}")
    if request.htmx:
        return _row_response(request, criterion, citation_errors=form.errors)
    return _back(criterion.checklist, f"#criterion-{criterion.pk}")


@require_POST
@login_required
@locked_checklist_answers_409
def citation_delete(request: HttpRequest, pk: int) -> HttpResponse:
    citation = access.access_citation(request.user, pk, edit=True)
    criterion = citation.criterion
    services.citation_delete(citation=citation, by=request.user)
    if request.htmx:
        return _row_response(request, criterion)
    return _back(criterion.checklist, f"#criterion-{criterion.pk}")


@require_POST
@login_required
def checklist_submit(request: HttpRequest, pk: int) -> HttpResponse:
    checklist = access.access_checklist(request.user, pk, edit=True)
    try:
        services.checklist_submit(checklist=checklist, by=request.user)
    except services.ChecklistRejected as rejected:
        context = _editor_context(request, pk, rejected=rejected.report)
        return render(request, TEMPLATE, context, status=422)
    except services.ChecklistNotEditable as exc:
        messages.error(request, str(exc))
        return _back(checklist)
    messages.success(request, "Checklist submitted.")
    return _back(checklist)


@require_POST
@login_required
def checklist_reopen(request: HttpRequest, pk: int) -> HttpResponse:
    checklist = access.access_checklist(request.user, pk, edit=True)
    services.checklist_reopen(checklist=checklist, by=request.user)
    messages.info(request, "Checklist reopened: edit it, then submit again.")
    return _back(checklist)


@login_required
@require_POST
def checklist_scoring(request: HttpRequest, pk: int) -> HttpResponse:
    """Set the checklist's own scoring strategy and undecided setting (its author or a
    dataset admin; empty: the dataset's). A refusal (a weight the strategy cannot score)
    is shown on the editor and changes nothing."""
    checklist = access.access_checklist_scoring(request.user, pk)
    try:
        services.checklist_set_scoring(
            checklist=checklist, by=request.user,
            strategy=request.POST.get("scoring", ""), undecided=request.POST.get("undecided", ""),
        )  # fmt: skip
    except ValidationError as exc:
        problems = "; ".join(m for ms in exc.message_dict.values() for m in ms)
        messages.error(request, f"Scoring not changed: {problems}")
    else:
        messages.success(request, "Scoring saved: the runs' scores follow it.")
    return _back(checklist, "#scoring")
