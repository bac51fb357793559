"""The Answers page of a dataset and the page of one answer."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation import roles
from annotation.access import access_dataset, dataset_permissions
from evaluation.answer_pages import selectors
from evaluation.answer_pages.access import access_answer, check_sees_answers
from evaluation.answer_pages.forms import AnswerFilterForm
from evaluation.answers.forms import AnswersUploadForm
from evaluation.answers.upload import decode_upload, import_answers
from evaluation.answers.view import answer_view
from evaluation.kept.counters import counters
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.runs import scores
from evaluation.runs.answer_block import answer_in_run
from evaluation.runs.models import Run
from evaluation.tables.rows import ImportRejected

ANSWERS_PER_PAGE = 50


@require_http_methods(["GET", "POST"])
@login_required
def dataset_answers(request: HttpRequest, pk: int) -> HttpResponse:
    """The dataset's answers: counts per system and run label, then every answer as the
    filters say, a page at a time; the upload form for admins."""
    dataset = access_dataset(request.user, pk)
    perms = dataset_permissions(request.user, dataset)
    check_sees_answers(perms)
    can_manage = roles.CHANGE in perms
    form = AnswersUploadForm(request.POST or None, request.FILES or None)
    errors: list[str] = []
    status = 200
    if request.method == "POST":
        if not can_manage:
            raise PermissionDenied("Only the dataset's admins upload answers.")
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                content = decode_upload(upload.name, upload.read())
                result = import_answers(dataset=dataset, name=upload.name, content=content)
            except ImportRejected as rejected:
                errors, status = rejected.errors, 400
            else:
                messages.success(
                    request,
                    f"Imported {upload.name}: {result.created} new answers, {result.updated} "
                    f"updated, {result.systems_created} new systems.",
                )
                return redirect("dataset-answers", pk=dataset.pk)
    counts = selectors.counts_by_system(dataset)
    filter_form = AnswerFilterForm(request.GET or None, counts=counts)
    filters = filter_form.filters()
    page = Paginator(selectors.answer_ids(dataset, filters), ANSWERS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    shown = selectors.answer_rows(list(page))
    latest = selectors.latest_scores(dataset, [a.pk for a in shown])
    kept = {k: v for k, v in request.GET.items() if k != "page" and v}
    context = {
        "dataset": dataset, "form": form if can_manage else None, "errors": errors,
        "groups": counts, "total": sum(g["n"] for g in counts),
        "filter_form": filter_form, "filtered": filters != selectors.AnswerFilters(),
        "page": page, "rows": [(a, latest.get(a.pk)) for a in shown],
        "page_query": urlencode(kept),
    }  # fmt: skip
    return render(request, "evaluation/answers/dataset_answers.html", context, status=status)


SCORE_CARDS = 10  # the newest runs that get a card with the answer's score


@require_GET
@login_required
def answer_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One answer: its text and trajectory (the shared answer view), per run that judged it
    its score, group scores and undecided count, then one run's verdicts criterion by
    criterion (the shared verdicts view: the latest run, or the one `?run=` names among
    those that judged it); the reviewers' labels and adjudications counted."""
    answer, _perms = access_answer(request.user, pk)
    runs = selectors.runs_of_answer(answer)
    shown = _shown_run(request, runs)
    # A card with its score for the newest runs and the one shown; older runs are links
    # (four reads of kept scores a card: a month of nightly runs made this page 134 queries).
    carded = runs[:SCORE_CARDS] + ([shown] if shown in runs[SCORE_CARDS:] else [])
    per_run = []
    at = counters(answer.query.dataset_id) if carded else None  # one read for every card
    for run in carded:
        kept = scores.run_scores(run, at=at)
        per_run.append((run, kept.of_answers([answer.pk]).get(answer.pk), kept.updating))
    block = answer_in_run(request.user, shown, answer) if shown else {}
    labels = list(
        HumanLabel.objects.filter(answer=answer)
        .values("rater", "label")
        .annotate(n=Count("id"))
        .order_by("rater", "label")
    )
    context = {
        "dataset": answer.query.dataset, "answer": answer, "view": answer_view(answer),
        "per_run": per_run, "labels": labels, "shown_run": shown, **block,
        "older_runs": [r for r in runs[SCORE_CARDS:] if r != shown],
        "adjudications": Adjudication.objects.filter(answer=answer).count(),
    }  # fmt: skip
    return render(request, "evaluation/answers/answer_detail.html", context)


def _shown_run(request: HttpRequest, runs: list[Run]) -> Run | None:
    """The run whose verdicts the answer page shows: `?run=` if it names one of the runs
    that judged the answer (the only runs the page lists, all of the answer's dataset),
    else the latest. Anything else in `?run=` is ignored, not an error: the page is the
    answer's, and the latest run's verdicts are a fair default."""
    wanted = request.GET.get("run", "")
    for run in runs:
        if str(run.pk) == wanted:
            return run
    return runs[0] if runs else None
