"""Review pages: a dataset's labelling and disagreement queues (with assignment), and the
review page of one answer, where reviewers label and adjudicate criteria from the keyboard.

Every page needs review_dataset on the dataset: 404 for non-members, 403 for experts.
Writes answer htmx with the one row they changed (a small swap, never a full page); without
JavaScript the same forms post and redirect back.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.template import engines
from django.template.backends.utils import csrf_input
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST

from annotation import roles
from annotation.access import access_dataset, dataset_permissions
from annotation.models import Criterion, Dataset
from config import limits
from config.ids import is_id, parse_id
from evaluation.answers.models import Answer
from evaluation.answers.view import answer_view
from evaluation.labels.models import Label, ReviewAssignment
from evaluation.review import answer_rows, selectors, services
from evaluation.review import filters as queue_filters
from evaluation.review.access import access_answer, reviewable_criterion
from evaluation.review.timeline import timeline_checks
from evaluation.runs.models import Run

QUEUES = {q.value: q.label for q in ReviewAssignment.Queue}
DISAGREEMENT = ReviewAssignment.Queue.DISAGREEMENT
NO_FILTERS = queue_filters.QueueFilters()
UNDO_KEY = "review_undo"
UNDO_DEPTH = 50  # per answer; enough for a session of labelling, small in the session
SKIP_KEY = "review_skipped"
SKIP_DEPTH = 500  # per dataset and queue; the oldest skips are forgotten first
ROWS_TEMPLATE = "evaluation/review/rows.jinja"  # under templates/jinja2/
QUEUE_ROWS_TEMPLATE = "evaluation/review/queue_rows.jinja"
SEARCH_MAX = 200


def _run_for(dataset: Dataset, value: str | None) -> Run | None:
    """The ?run= chosen, which must be a run of the dataset; None when not given."""
    if not value:
        return None
    if not is_id(value):
        raise Http404("No such run in this dataset.")
    run = Run.objects.select_related("panel").filter(pk=value, dataset=dataset).first()
    if run is None:
        raise Http404("No such run in this dataset.")
    return run


def _queue_name(value: str | None) -> str:
    return value if value in QUEUES else ReviewAssignment.Queue.LABELLING


def _filters(data: QueryDict) -> queue_filters.QueueFilters:
    """The queue filters from the query string. A search is cut to SEARCH_MAX characters and
    only ever reaches the database as a parameter; a kind, system or author that is not one
    (a typo, a hostile value) filters nothing rather than failing the page."""
    kind = data.get("kind", "")
    return queue_filters.QueueFilters(
        q=data.get("q", "").strip()[:SEARCH_MAX],
        kind=kind if kind in Criterion.Kind.values else "",
        system=parse_id(data.get("system", "")) if data.get("system") else None,
        author=parse_id(data.get("author", "")) if data.get("author") else None,
        perfect=data.get("answers") == "perfect",
    )


def _queue_params(
    queue: str, *, mine: bool, run: Run | None, filters: queue_filters.QueueFilters
) -> dict[str, object]:
    """What identifies a filtered queue in a URL, carried from the queue to the review page
    and on to the next item, so that "X of N" and Next stay within what was chosen."""
    params: dict[str, object] = {"queue": queue}
    if run is not None:
        params["run"] = run.pk
    if mine:
        params["mine"] = 1
    params.update(filters.params())
    return params


def _review_url(
    item, *, queue: str, mine: bool, run: Run | None,
    filters: queue_filters.QueueFilters = NO_FILTERS, position: tuple[int, int] | None = None,
) -> str:  # fmt: skip
    """The review page of a queue item. `position` is (X, N), where the item stood in the
    filtered queue when the queue page or Next computed it: the review page shows it as it
    is, so that opening an item never recomputes a queue of 100,000 items."""
    params = _queue_params(queue, mine=mine, run=run, filters=filters)
    if getattr(item, "criterion_id", None) is not None:
        params["criterion"] = item.criterion_id
    if position is not None:
        params["pos"], params["of"] = position
    return f"{reverse('answer-review', args=[item.key[0]])}?{urlencode(params)}"


def _position(data: QueryDict) -> tuple[int, int] | None:
    """(X, N) from ?pos=&of=, when they make sense (1 <= X <= N); else None."""
    x, n = parse_id(data.get("pos", "")), parse_id(data.get("of", ""))
    return (x, n) if x and n and x <= n else None


def _skipped_key(dataset: Dataset, queue: str) -> str:
    return f"{SKIP_KEY}:{dataset.pk}:{queue}"


def _skipped(request: HttpRequest, dataset: Dataset, queue: str) -> frozenset[tuple[int, ...]]:
    return frozenset(tuple(k) for k in request.session.get(_skipped_key(dataset, queue), []))


# --- queues ---------------------------------------------------------------------------------


@require_GET
@login_required
def review_queue(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_dataset(request.user, pk, roles.REVIEW)
    queue = _queue_name(request.GET.get("queue"))
    mine = request.GET.get("mine") == "1"
    run = _run_for(dataset, request.GET.get("run"))
    filters = _filters(request.GET)
    items, adjudicated = queue_filters.filtered_queue(
        dataset, request.user, queue=queue, run=run, mine=mine, filters=filters
    )
    page = Paginator(items, 50).get_page(request.GET.get("page"))
    selectors.load_answers(page.object_list)
    for n, item in enumerate(page, start=page.start_index()):
        item.url = _review_url(
            item, queue=queue, mine=mine, run=run, filters=filters, position=(n, len(items))
        )
    can_assign = roles.CHANGE in dataset_permissions(request.user, dataset)
    params = _queue_params(queue, mine=mine, run=run, filters=filters)
    context = {
        "dataset": dataset, "queue": queue, "queues": QUEUES, "mine": mine, "run": run,
        "runs": dataset.runs.order_by("-created_at", "-id")[:50], "page": page,
        "total": len(items), "adjudicated": adjudicated, "can_assign": can_assign,
        # The order is cold (the cold rule): an earlier one or none, counted meanwhile.
        "cold": items.cold,
        "reviewers": selectors.dataset_reviewers(dataset) if can_assign else [],
        "filters": filters, "label_floor": selectors.LABEL_FLOOR,
        "choices": queue_filters.filter_choices(
            dataset, authors=queue == DISAGREEMENT, systems=items.systems
        ),
        "page_query": urlencode(params),
        "next_url": f"{reverse('review-next', args=[dataset.pk])}?{urlencode(params)}",
    }  # fmt: skip
    context["rows_html"] = _queue_rows_html(
        request, context, items=list(page), start=page.start_index()
    )
    if request.htmx and request.htmx.target == "queue-table":
        return render(request, "evaluation/review/review_queue.html#queue-table", context)
    return render(request, "evaluation/review/review_queue.html", context)


@require_POST
@login_required
def review_assign(request: HttpRequest, pk: int) -> HttpResponse:
    """Take an item (reviewers), assign it to someone or clear it (admins)."""
    dataset = access_dataset(request.user, pk, roles.REVIEW)
    queue = _queue_name(request.POST.get("queue"))
    answer = Answer.objects.select_related("query__dataset").filter(
        pk=request.POST.get("answer") or 0, query__dataset=dataset
    ).first()  # fmt: skip
    if answer is None:
        raise Http404("No such answer in this dataset.")
    criterion = None
    if queue == ReviewAssignment.Queue.DISAGREEMENT:
        criterion = reviewable_criterion(answer, request.POST.get("criterion"))
    who = request.POST.get("assignee", "")
    error = ""
    try:
        if who == "":
            services.assignment_clear(
                queue=queue, answer=answer, criterion=criterion, by=request.user
            )
        else:
            assignee = request.user if who == "me" else _member(dataset, who)
            services.assignment_set(
                queue=queue, answer=answer, criterion=criterion, assignee=assignee,
                by=request.user,
            )  # fmt: skip
    except services.ReviewError as exc:
        error = str(exc)
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(f"{reverse('review-queue', args=[dataset.pk])}?queue={queue}")
    assignment = (
        ReviewAssignment.objects.select_related("assignee")
        .filter(queue=queue, answer=answer, criterion=criterion)
        .first()
    )
    perms = dataset_permissions(request.user, dataset)
    context = {
        "dataset": dataset, "queue": queue, "error": error,
        "item": {"answer": answer, "criterion": criterion, "assignment": assignment},
        "can_assign": roles.CHANGE in perms,
        "reviewers": selectors.dataset_reviewers(dataset) if roles.CHANGE in perms else [],
    }  # fmt: skip
    return HttpResponse(_queue_rows_html(request, context, single_assignment=context["item"]))


def _queue_rows_html(request: HttpRequest, context: dict, **rows: object) -> SafeString:
    """The review queue's rows (`items`, numbered from `start`), or one row's assignment
    cell (`single_assignment`), rendered by Jinja2: the queue page's hottest part, half its
    CPU with Django's engine (docs/benchmarks.md). The assignment URL is reversed and the
    CSRF field masked once per page, not once a row."""
    fragment = engines["jinja2"].get_template(QUEUE_ROWS_TEMPLATE)
    values = {
        "items": [], "start": 1, "single_assignment": None, "error": context.get("error", ""),
        "queue": context["queue"], "can_assign": context["can_assign"],
        "reviewers": context["reviewers"], "user_pk": request.user.pk,
        "assign_url": reverse("review-assign", args=[context["dataset"].pk]),
        "csrf_field": csrf_input(request), **rows,
    }  # fmt: skip
    # Jinja2 escapes everything the template prints (autoescape, config/jinja.py).
    return mark_safe(fragment.render(values, request).strip())  # noqa: S308


def _member(dataset: Dataset, user_id: str):
    user = get_user_model().objects.filter(pk=parse_id(user_id) or 0).first()
    if user is None:
        raise services.ReviewError("No such user.")
    return user


@require_GET
@login_required
def review_next(request: HttpRequest, pk: int) -> HttpResponse:
    """The `n` key: go to the item after ?answer= (and ?criterion=) in the filtered queue.
    With ?skip=1 (the `s` key) the current item is also remembered as skipped, in the
    session only (no label, no assignment changes), so that Next passes over it until
    nothing else is left."""
    dataset = access_dataset(request.user, pk, roles.REVIEW)
    queue = _queue_name(request.GET.get("queue"))
    mine = request.GET.get("mine") == "1"
    run = _run_for(dataset, request.GET.get("run"))
    filters = _filters(request.GET)
    ids = tuple(
        parse_id(request.GET[k])
        for k in ("answer", "criterion")
        if request.GET.get(k) and (k == "answer" or queue != "labelling")
    )
    current = ids if None not in ids else ()
    if request.GET.get("skip") == "1" and current:
        key = _skipped_key(dataset, queue)
        skipped = [k for k in request.session.get(key, []) if tuple(k) != current]
        request.session[key] = [*skipped, list(current)][-SKIP_DEPTH:]
    found = queue_filters.next_item(
        dataset, request.user, queue=queue, current=current, run=run, mine=mine,
        filters=filters, skipped=_skipped(request, dataset, queue),
    )  # fmt: skip
    if found is None:
        messages.info(request, f"The {QUEUES[queue].lower()} queue has nothing else for you.")
        params = _queue_params(queue, mine=mine, run=run, filters=filters)
        return redirect(f"{reverse('review-queue', args=[dataset.pk])}?{urlencode(params)}")
    item, position = found
    # Counted on from the page it was pressed on: the item just labelled has moved in the
    # queue (labelled items sort last), so the next one's place there would read "1 of N"
    # again after every label. The reviewer's count goes on instead, out of the queue as
    # they found it, until it would pass its end (new items, or the skipped coming back).
    came_from = _position(request.GET)
    if came_from is not None and came_from[0] < came_from[1]:
        position = (came_from[0] + 1, came_from[1])
    return redirect(
        _review_url(item, queue=queue, mine=mine, run=run, filters=filters, position=position)
    )


# --- the review page ------------------------------------------------------------------------


def _page_run(answer: Answer, value: str | None) -> tuple[Run | None, list[Run]]:
    runs = answer_rows.offered_runs(answer)
    if value:
        chosen = next((r for r in runs if str(r.pk) == value), None)
        if chosen is None:
            chosen = _run_for(answer.query.dataset, value)  # a run of the dataset, no votes
        return chosen, runs
    return answer_rows.default_run(runs), runs


def _render_row(
    request: HttpRequest, answer: Answer, run: Run | None, criterion, *, status: int = 200,
    conflict: bool = False, error: str = "",
) -> HttpResponse:  # fmt: skip
    row = answer_rows.review_rows(answer, request.user, run, criterion=criterion)[0]
    row.conflict, row.error = conflict, error
    html = _rows_html(request, {"run": run, **_write_urls(answer)}, only=row)
    return HttpResponse(html, status=status)


def _rows_html(
    request: HttpRequest, context: dict, *, only: answer_rows.ReviewRow | None = None
) -> SafeString:
    """The review page's criterion rows (context["rows"]), or the one row `only`, rendered by
    Jinja2: the page's hottest part, half its CPU with Django's engine (config/jinja.py)."""
    fragment = engines["jinja2"].get_template(ROWS_TEMPLATE)
    # The CSRF field once: the backend's own `csrf_input` masks the token afresh at each use,
    # two a row.
    context = {"current": "", **context, "single_row": only, "csrf_field": csrf_input(request)}
    # Jinja2 escapes everything the template prints (autoescape, config/jinja.py).
    return mark_safe(fragment.render(context, request))  # noqa: S308


def _write_urls(answer: Answer) -> dict[str, str]:
    """The label and adjudication URLs every row's forms post to, reversed once per page
    rather than twice per row in the template (a review page has up to hundreds of rows)."""
    return {
        "label_url": reverse("answer-review-label", args=[answer.pk]),
        "adjudicate_url": reverse("answer-review-adjudicate", args=[answer.pk]),
    }


@require_GET
@login_required
def answer_review(request: HttpRequest, pk: int) -> HttpResponse:
    answer, _perms = access_answer(request.user, pk)
    run, runs = _page_run(answer, request.GET.get("run"))
    rows = answer_rows.review_rows(answer, request.user, run)
    queue = _queue_name(request.GET.get("queue"))
    mine = request.GET.get("mine") == "1"
    filters = _filters(request.GET)
    dataset = answer.query.dataset
    queue_run = run if request.GET.get("run") else None
    params = _queue_params(queue, mine=mine, run=queue_run, filters=filters)
    current_criterion = parse_id(request.GET.get("criterion", "")) if request.GET.get(
        "criterion"
    ) else None  # fmt: skip
    position = _position(request.GET) if "queue" in request.GET else None
    next_params = {**params, "answer": answer.pk}
    if current_criterion:
        next_params["criterion"] = current_criterion
    if position is not None:  # Next and Skip count on from here (review_next)
        next_params["pos"], next_params["of"] = position
    next_url = f"{reverse('review-next', args=[dataset.pk])}?{urlencode(next_params)}"
    context = {
        "dataset": dataset, "answer": answer, "view": answer_view(answer, timeline_checks(rows)),
        "run": run, "runs": runs, "rows": rows, "queue": queue, "queue_name": QUEUES[queue],
        "current": str(current_criterion or ""), "position": position,
        "filtered": filters.active or mine,
        "labelled": sum(1 for r in rows if r.own is not None),
        "next_url": next_url, "skip_url": f"{next_url}&skip=1",
        "queue_url": f"{reverse('review-queue', args=[dataset.pk])}?{urlencode(params)}",
        **_write_urls(answer),
    }  # fmt: skip
    context["rows_html"] = _rows_html(request, context)
    return render(request, "evaluation/review/review_answer.html", context)


def _item(request: HttpRequest, pk: int):
    answer, _perms = access_answer(request.user, pk)
    criterion = reviewable_criterion(answer, request.POST.get("criterion"))
    run = _run_for(answer.query.dataset, request.POST.get("run"))
    return answer, criterion, run


def _back(answer: Answer, criterion, run: Run | None) -> HttpResponse:
    params = {"criterion": criterion.pk, **({"run": run.pk} if run else {})}
    url = f"{reverse('answer-review', args=[answer.pk])}?{urlencode(params)}"
    return redirect(f"{url}#row-{criterion.pk}")


def _push_undo(request: HttpRequest, answer: Answer, criterion, change) -> None:
    stacks = request.session.get(UNDO_KEY, {})
    stack = stacks.get(str(answer.pk), [])
    previous = change.previous
    stack.append(
        {
            "criterion": criterion.pk,
            "previous": None if previous is None else [previous.label, previous.note],
        }
    )
    stacks[str(answer.pk)] = stack[-UNDO_DEPTH:]
    request.session[UNDO_KEY] = stacks


@require_POST
@login_required
def answer_review_label(request: HttpRequest, pk: int) -> HttpResponse:
    """Set the reviewer's label on one criterion (p / f, or the Pass / Fail buttons)."""
    answer, criterion, run = _item(request, pk)
    label = request.POST.get("label", "")
    if label not in Label.values:
        return HttpResponse("A label is pass or fail.", status=400)
    note = request.POST.get("note")  # absent: keep the note already there
    if note is not None and len(note) > limits.REVIEW_NOTE:
        return HttpResponse(f"A note is at most {limits.REVIEW_NOTE} characters.", status=400)
    change = services.label_set(
        answer=answer, criterion=criterion, reviewer=request.user, label=label, note=note
    )
    _push_undo(request, answer, criterion, change)
    if not request.htmx:
        return _back(answer, criterion, run)
    return _render_row(request, answer, run, criterion)


@require_POST
@login_required
def answer_review_undo(request: HttpRequest, pk: int) -> HttpResponse:
    """Undo the reviewer's last label on this answer (u): the label goes back to what it was
    before, or away if it was new. The stack lives in the session, per answer."""
    answer, _perms = access_answer(request.user, pk)
    run = _run_for(answer.query.dataset, request.POST.get("run"))
    stacks = request.session.get(UNDO_KEY, {})
    stack = stacks.get(str(answer.pk), [])
    if not stack:
        if not request.htmx:
            messages.info(request, "Nothing to undo.")
            return redirect("answer-review", pk=answer.pk)
        response = HttpResponse("Nothing to undo on this answer.")
        response["HX-Retarget"] = "#review-status"
        response["HX-Reswap"] = "innerHTML"
        return response
    entry = stack.pop()
    stacks[str(answer.pk)] = stack
    request.session[UNDO_KEY] = stacks
    criterion = reviewable_criterion(answer, entry["criterion"])
    previous = entry["previous"]
    services.label_restore(
        answer=answer, criterion=criterion, reviewer=request.user,
        previous=None if previous is None else services.LabelState(*previous),
    )  # fmt: skip
    if not request.htmx:
        return _back(answer, criterion, run)
    response = _render_row(request, answer, run, criterion)
    response["HX-Retarget"] = f"#row-{criterion.pk}"
    response["HX-Reswap"] = "outerHTML"
    response["HX-Trigger"] = f'{{"review-focus": {{"criterion": {criterion.pk}}}}}'
    return response


@require_POST
@login_required
def answer_review_adjudicate(request: HttpRequest, pk: int) -> HttpResponse:
    """Decide an item's final label against the version the reviewer saw. On a conflict the
    row comes back with the decision that stands and the form set to its version."""
    answer, criterion, run = _item(request, pk)
    data: QueryDict = request.POST
    label = data.get("label", "")
    version_text = data.get("version", "")
    if len(data.get("reason", "")) > limits.ADJUDICATION_REASON:
        message = f"A reason is at most {limits.ADJUDICATION_REASON} characters."
        if not request.htmx:
            return HttpResponse(message, status=400)
        return _render_row(request, answer, run, criterion, error=message)
    if label not in Label.values or (version_text and not is_id(version_text)):
        if not request.htmx:
            return HttpResponse("Choose pass or fail.", status=400)
        return _render_row(request, answer, run, criterion, error="Choose pass or fail.")
    try:
        services.adjudicate(
            answer=answer, criterion=criterion, by=request.user, label=label,
            reason=data.get("reason", "").strip(),
            expected_version=int(version_text) if version_text else None,
        )  # fmt: skip
    except services.AdjudicationConflict:
        if request.htmx:
            return _render_row(request, answer, run, criterion, conflict=True)
        return _conflict_page(request, answer, run, criterion)
    except services.ReviewError as exc:
        raise PermissionDenied(str(exc)) from exc
    if not request.htmx:
        messages.success(request, "Adjudication saved.")
        return _back(answer, criterion, run)
    return _render_row(request, answer, run, criterion)


def _conflict_page(request: HttpRequest, answer: Answer, run: Run | None, criterion):
    rows = answer_rows.review_rows(answer, request.user, run)
    for row in rows:
        row.conflict = row.criterion.pk == criterion.pk
    dataset = answer.query.dataset
    context = {
        "dataset": dataset, "answer": answer, "view": answer_view(answer, timeline_checks(rows)),
        "run": run, "runs": answer_rows.offered_runs(answer), "rows": rows,
        "queue": "disagreement", "current": str(criterion.pk),
        "labelled": sum(1 for r in rows if r.own is not None),
        "next_url": reverse("review-next", args=[dataset.pk]),
        "skip_url": reverse("review-next", args=[dataset.pk]),
        "queue_url": reverse("review-queue", args=[dataset.pk]),
        **_write_urls(answer),
    }  # fmt: skip
    context["rows_html"] = _rows_html(request, context)
    return render(request, "evaluation/review/review_answer.html", context, status=409)
