"""Cross-evaluation pages: a checklist's perfect answer (write, preview, draft with an LLM),
a query's overlap heatmap with drill-down, and a dataset's mean overlap, distribution,
shared core and settings."""

from __future__ import annotations

from dataclasses import dataclass

from celery.result import AsyncResult
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import roles
from annotation.access import access_dataset, access_query, dataset_permissions
from annotation.models import Criterion, Dataset, Query
from config.ids import parse_id
from evaluation.answers.models import Answer
from evaluation.answers.rendering import render_answer
from evaluation.cross_evaluation import counted, selectors, services, sources
from evaluation.cross_evaluation.access import (
    access_perfect_answer_checklist,
    can_write_perfect_answer,
)
from evaluation.cross_evaluation.export import overlap_rows, write_csv
from evaluation.cross_evaluation.forms import (
    CrossEvaluationSettingsForm,
    CrossEvaluationStartForm,
    DraftForm,
    PerfectAnswerForm,
)
from evaluation.metrics import overlap as om
from evaluation.runs.access import can_see_runs
from evaluation.runs.models import Run


def _draft_key(checklist_id: int) -> str:
    return f"perfect-answer-draft:{checklist_id}"


@require_http_methods(["GET", "POST"])
@login_required
def perfect_answer(request: HttpRequest, pk: int) -> HttpResponse:
    checklist = access_perfect_answer_checklist(request.user, pk)
    perms = dataset_permissions(request.user, checklist.query.dataset)
    can_write = can_write_perfect_answer(request.user, checklist, perms)
    writable = can_write and checklist.status == checklist.Status.SUBMITTED
    answer = Answer.objects.select_related("author", "drafted_by").filter(checklist=checklist)
    answer = answer.first()
    form = PerfectAnswerForm(request.POST or None, initial={"text": answer.text if answer else ""})
    form.fields["text"].widget.attrs.update(
        {
            "hx-post": reverse("perfect-answer-preview", args=[checklist.pk]),
            "hx-trigger": "input changed delay:400ms",
            "hx-target": "#preview",
            "hx-swap": "outerHTML",
        }
    )
    status = 200
    if request.method == "POST":
        if not can_write:
            raise PermissionDenied(
                "Only the checklist's author or a dataset admin writes its perfect answer."
            )
        if form.is_valid():
            try:
                services.perfect_answer_save(
                    checklist=checklist, text=form.cleaned_data["text"], by=request.user
                )
            except services.CrossEvaluationRefused as exc:
                form.add_error("text", str(exc))
            else:
                messages.success(request, "Perfect answer saved.")
                return redirect("perfect-answer", pk=checklist.pk)
        status = 400
    dataset = checklist.query.dataset
    context = {
        "checklist": checklist,
        "query": checklist.query,
        "dataset": dataset,
        "criteria": list(checklist.criteria.active().order_by("position", "id")),
        "answer": answer,
        "answer_html": render_answer(answer.text) if answer else "",
        "form": form,
        "can_write": can_write,
        "writable": writable,
        "draft_form": DraftForm(initial={"judge": services.draft_judge(dataset)})
        if writable
        else None,
        "draft": _draft_state(request, checklist.pk),
        "can_see_overlaps": can_see_runs(perms),
    }
    return render(
        request, "evaluation/cross_evaluation/perfect_answer.html", context, status=status
    )


@require_POST
@login_required
def perfect_answer_preview(request: HttpRequest, pk: int) -> HttpResponse:
    """The markdown as it will show, rendered and sanitised; nothing is saved."""
    access_perfect_answer_checklist(request.user, pk, edit=True)
    html = render_answer(request.POST.get("text", ""))
    return render(
        request, "evaluation/cross_evaluation/perfect_answer.html#preview", {"preview_html": html}
    )


@require_POST
@login_required
def perfect_answer_draft(request: HttpRequest, pk: int) -> HttpResponse:
    checklist = access_perfect_answer_checklist(request.user, pk, edit=True)
    form = DraftForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"No draft: {form.errors.as_text()}")
        return redirect("perfect-answer", pk=checklist.pk)
    try:
        task_id = services.perfect_answer_draft_request(
            checklist=checklist, judge=form.cleaned_data["judge"]
        )
    except services.CrossEvaluationRefused as exc:
        messages.error(request, str(exc))
        return redirect("perfect-answer", pk=checklist.pk)
    request.session[_draft_key(checklist.pk)] = task_id
    messages.info(request, f"{form.cleaned_data['judge'].name} is drafting the perfect answer.")
    return redirect("perfect-answer", pk=checklist.pk)


@dataclass(frozen=True)
class DraftState:
    task_id: str
    state: str  # PENDING, STARTED, RETRY, SUCCESS, FAILURE
    error: str = ""

    @property
    def running(self) -> bool:
        return self.state in ("PENDING", "STARTED", "RETRY")


def _draft_state(request: HttpRequest, checklist_id: int) -> DraftState | None:
    """The draft this user asked for, as its Celery result says (kept in the database)."""
    task_id = request.session.get(_draft_key(checklist_id))
    if not task_id:
        return None
    result = AsyncResult(task_id)
    state = result.state
    error = ""
    if state == "SUCCESS":
        outcome = result.result if isinstance(result.result, dict) else {}
        if not outcome.get("ok"):
            state, error = "FAILURE", str(outcome.get("error", "The draft failed."))
    elif state == "FAILURE":
        error = f"The draft failed: {result.result}"
    return DraftState(task_id, state, error)


@require_GET
@login_required
def perfect_answer_draft_status(request: HttpRequest, pk: int) -> HttpResponse:
    checklist = access_perfect_answer_checklist(request.user, pk, edit=True)
    draft = _draft_state(request, checklist.pk)
    response = render(
        request,
        "evaluation/cross_evaluation/perfect_answer.html#draft-status",
        {"draft": draft, "checklist": checklist},
    )
    if draft is not None and not draft.running:
        del request.session[_draft_key(checklist.pk)]
        if draft.state == "SUCCESS":
            messages.success(request, "The LLM's draft is ready: review and edit it.")
        else:
            messages.error(request, draft.error)
        response["HX-Refresh"] = "true"  # show the new text (or the error) in the whole page
    return response


# --- Overlaps ---------------------------------------------------------------------------


def _check_overlaps(user, dataset: Dataset) -> set[str]:
    perms = dataset_permissions(user, dataset)
    if not can_see_runs(perms):
        raise PermissionDenied("Overlaps are for the dataset's reviewers and admins.")
    return perms


def _source(request: HttpRequest) -> sources.Source:
    try:
        return sources.Source.parse(request.GET.get("source"))
    except sources.UnknownSource as exc:
        raise Http404(str(exc)) from None


@dataclass(frozen=True)
class Cell:
    a: int
    b: int
    b_name: str
    pair: om.PairOverlap | None
    shade: str
    light_text: bool


def shade(value: float | None) -> tuple[str, bool]:
    """A blue whose strength is the overlap; grey when undefined."""
    if value is None:
        return "background-color: #eef1f5", False
    alpha = 0.08 + 0.82 * value
    return f"background-color: rgba(31, 95, 191, {alpha:.2f})", alpha > 0.5


def _grid(overlap: selectors.QueryOverlap) -> list[tuple[object, list[Cell]]]:
    grid = []
    for a, cells in overlap.rows():
        row = []
        for b, pair in cells:
            style, light = shade(pair.overlap if pair else None)
            row.append(Cell(a.pk, b.pk, b.author.get_username(), pair, style, light))
        grid.append((a, row))
    return grid


def _review_url(answer_id: int) -> str | None:
    try:  # the review page comes with the review feature; link to it once it exists
        return reverse("answer-review", args=[answer_id])
    except NoReverseMatch:
        return None


def _int(value: str | None) -> int | None:
    return parse_id(value)


@require_GET
@login_required
def query_overlaps(request: HttpRequest, pk: int) -> HttpResponse:
    query = access_query(request.user, pk)
    perms = _check_overlaps(request.user, query.dataset)
    source = _source(request)
    try:
        overlap = selectors.query_overlap(query, source)
    except sources.UnknownSource as exc:
        raise Http404(str(exc)) from None
    a, b = _int(request.GET.get("a")), _int(request.GET.get("b"))
    detail = None
    if overlap is not None and a is not None and b is not None:
        rows = selectors.cell_detail(overlap, a, b, source)
        if rows is None:
            raise Http404("No such cell.")
        by_id = {c.pk: c for c in overlap.checklists}
        answer = overlap.answers[a]
        detail = {
            "a": by_id[a], "b": by_id[b], "pair": overlap.matrix.cell(a, b), "rows": rows,
            "answer": answer, "review_url": _review_url(answer.pk), "run": overlap.run,
        }  # fmt: skip
    context = {
        "query": query,
        "dataset": query.dataset,
        "overlap": overlap,
        "grid": _grid(overlap) if overlap else [],
        "answer_rows": [(c, overlap.answers.get(c.pk)) for c in overlap.checklists]
        if overlap
        else [],
        "mean": om.mean_overlap({query.pk: overlap.matrix.pairs()}) if overlap else None,
        "source": source,
        "runs": sources.cross_evaluation_runs(query.dataset)[:50],
        "detail": detail,
        "can_manage": roles.CHANGE in perms,
        "start_form": CrossEvaluationStartForm(
            initial={"panel": services.settings_for(query.dataset).panel}
        ),
    }
    if request.htmx and request.htmx.target == "cell-detail":
        return render(
            request, "evaluation/cross_evaluation/cross_evaluation_query.html#cell-detail", context
        )
    return render(request, "evaluation/cross_evaluation/cross_evaluation_query.html", context)


def _start(request: HttpRequest, dataset: Dataset, queries: list[Query]) -> Run | None:
    form = CrossEvaluationStartForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Not started: {form.errors.as_text()}")
        return None
    try:
        run = services.cross_evaluation_start(
            dataset=dataset, panel=form.cleaned_data["panel"], by=request.user, queries=queries
        )
    except services.CrossEvaluationRefused as exc:
        messages.error(request, f"Not started: {exc}")
        return None
    messages.success(request, f"{run} started: {run.expected} verdicts to collect.")
    return run


@require_POST
@login_required
def query_cross_evaluation_start(request: HttpRequest, pk: int) -> HttpResponse:
    query = access_query(request.user, pk, roles.CHANGE)
    run = _start(request, query.dataset, [query])
    if run is not None:
        return redirect("run-detail", pk=run.pk)
    return redirect("query-overlaps", pk=query.pk)


def _bars(bins: list[om.Bin], peak: int) -> list[dict[str, object]]:
    """Geometry of the inline SVG histogram: 10 bars 40 px apart, 115 px high at most."""
    bars = []
    for i, b in enumerate(bins):
        height = round(115 * b.count / peak)
        low, high = round(b.low * 100), round(b.high * 100)
        bars.append(
            {
                "x": 12 + 40 * i, "mid": 29 + 40 * i, "y": 130 - height, "height": height,
                "count": b.count, "low": low, "label": f"{low}–{high}",
            }
        )  # fmt: skip
    return bars


@require_http_methods(["GET", "POST"])
@login_required
def dataset_cross_evaluation(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_dataset(request.user, pk)
    perms = _check_overlaps(request.user, dataset)
    can_manage = roles.CHANGE in perms
    current = services.settings_for(dataset)
    settings_form = CrossEvaluationSettingsForm(
        initial={"panel": current.panel, "automatic": current.automatic}
    )
    status = 200
    if request.method == "POST":
        if not can_manage:
            raise PermissionDenied("Only the dataset's admins run cross-evaluation.")
        if request.POST.get("action") == "start":
            run = _start(request, dataset, [])
            if run is not None:
                return redirect("run-detail", pk=run.pk)
            return redirect("dataset-cross-evaluation", pk=dataset.pk)
        settings_form = CrossEvaluationSettingsForm(request.POST)
        if settings_form.is_valid():
            services.settings_update(
                dataset=dataset,
                panel=settings_form.cleaned_data["panel"],
                automatic=settings_form.cleaned_data["automatic"],
            )
            messages.success(request, "Cross-evaluation settings saved.")
            return redirect("dataset-cross-evaluation", pk=dataset.pk)
        status = 400
    source = _source(request)
    try:
        # Cold (after seeding, a migration, a flush): an earlier state's figures or the
        # placeholder, counted in the background (evaluation.kept.cold).
        data, cold = counted.served(dataset, source)
    except sources.UnknownSource as exc:
        raise Http404(str(exc)) from None
    histogram = counted.histogram_of(data)
    peak = max((b.count for b in histogram), default=0) or 1
    after = parse_id(request.GET.get("after", ""))
    rows, next_after = counted.query_page(data, after)
    core, tail = _with_criteria(data["core"], data["tail"])
    context = {
        "dataset": dataset,
        "cold": cold,
        "cold_computing": cold is not None and cold.figures is None,
        "interval": counted.interval_of(data),
        "per_query": _query_rows(rows),
        "next_after": next_after,
        "after": after,
        "core": core,
        "core_count": data["core_count"],
        "tail": tail,
        "tail_count": data["tail_count"],
        "bars": _bars(histogram, peak),
        "source": source,
        "runs": sources.cross_evaluation_runs(dataset)[:50],
        "can_manage": can_manage,
        "settings_form": settings_form if can_manage else None,
        "start_form": CrossEvaluationStartForm(initial={"panel": current.panel})
        if can_manage
        else None,
    }
    return render(
        request, "evaluation/cross_evaluation/cross_evaluation_dataset.html", context, status=status
    )


def _query_rows(rows: list[counted.QueryRow]) -> list[tuple[counted.QueryRow, Query, Run | None]]:
    """The page's queries and runs, two queries whatever the page."""
    queries = Query.objects.in_bulk([r.query_id for r in rows])
    runs = Run.objects.in_bulk({r.run_id for r in rows if r.run_id is not None})
    return [(r, queries[r.query_id], runs.get(r.run_id)) for r in rows if r.query_id in queries]


def _with_criteria(*lists: list[list]) -> list[list[tuple[om.CriterionCoverage, Criterion]]]:
    """The shown criteria of the shared core and the long tail with their text (one query)."""
    coverages = [counted.coverage_of(rows) for rows in lists]
    ids = {c.criterion for coverage in coverages for c in coverage}
    criteria = Criterion.objects.select_related("checklist").in_bulk(ids)
    return [
        [(c, criteria[c.criterion]) for c in cov if c.criterion in criteria] for cov in coverages
    ]


@require_GET
@login_required
def dataset_overlaps_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """Every cell of every query's matrix as CSV (docs/data-formats.md), safe to open in a
    spreadsheet: text that would run as a formula is quoted."""
    dataset = access_dataset(request.user, pk)
    _check_overlaps(request.user, dataset)
    source = _source(request)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="overlaps-dataset-{dataset.pk}.csv"'
    write_csv(overlap_rows(dataset, source), response)
    return response
