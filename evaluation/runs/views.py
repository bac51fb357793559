"""Run pages: a dataset's runs, starting one, and a run's live progress and scores."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import roles
from annotation.access import access_dataset, dataset_permissions
from annotation.models import Query
from evaluation.answers.models import Answer
from evaluation.answers.view import answer_view
from evaluation.runs import canary, rebuild, scores, snapshot, stability, stability_pass
from evaluation.runs import services as runs
from evaluation.runs.access import (
    access_run,
    access_run_with_perms,
    access_verdict,
    can_see_runs,
)
from evaluation.runs.answer_block import answer_in_run
from evaluation.runs.estimate import estimate_selection, panel_members, run_estimate
from evaluation.runs.forms import QUERY_OPTIONS, RunForm, StabilityPassForm
from evaluation.runs.models import Run
from evaluation.runs.overview import run_overview
from evaluation.runs.preflight import panel_setup_problems


@require_http_methods(["GET", "POST"])
@login_required
def dataset_runs(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_dataset(request.user, pk)
    perms = dataset_permissions(request.user, dataset)
    if not can_see_runs(perms):
        raise PermissionDenied("Runs are for the dataset's reviewers and admins.")
    can_manage = roles.CHANGE in perms
    form = None
    if can_manage:
        # ?query_search= narrows the query options; ?queries= (sent by the htmx search)
        # keeps the queries already chosen among them.
        form = RunForm(
            request.POST or None, dataset=dataset,
            query_search=request.GET.get("query_search", "")[:200],
            initial={"queries": request.GET.getlist("queries")},
        )  # fmt: skip
    if request.method == "POST":
        if not can_manage:
            raise PermissionDenied("Only the dataset's admins start runs.")
        if form.is_valid():
            data = form.cleaned_data
            try:
                run = runs.run_create_and_start(
                    dataset=dataset, panel=data["panel"], by=request.user, name=data["name"],
                    queries=list(data["queries"]), systems=list(data["systems"]),
                    answer_run_label=data["answer_run_label"],
                    concurrency=data["concurrency"], scope=data["scope"],
                    baseline=data["baseline"],
                )  # fmt: skip
            except runs.RunRefused as refused:
                for problem in refused.problems:
                    form.add_error(refused.field, problem)
            except runs.RunStateError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"{run} started: {run.expected} verdicts to collect.")
                return redirect("run-detail", pk=run.pk)
    context = {
        "dataset": dataset,
        "runs": dataset.runs.select_related("panel").order_by("-created_at", "-id")[:100],
        "form": form,
        "query_options": QUERY_OPTIONS,
    }
    return render(request, "evaluation/runs/dataset_runs.html", context)


@require_GET
@login_required
def run_estimate_page(request: HttpRequest, pk: int) -> HttpResponse:
    """The start form's cost estimate for what the form says now (its fields as GET
    parameters): the form's htmx fragment, or a page of its own without JavaScript."""
    dataset = access_dataset(request.user, pk, roles.CHANGE)
    # No panel chosen yet (the form as it opens): nothing to estimate, and no error to show.
    form = RunForm(request.GET if request.GET.get("panel") else None, dataset=dataset)
    found, refused = None, []
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        # The judges first: a key not set is said here, with Start disabled, rather than
        # priced here and refused after Start.
        refused = panel_setup_problems(data["panel"])
        if not refused:
            fields = {**data, "dataset": dataset, "queries": list(data["queries"])}
            found = run_estimate(estimate_selection(fields), panel_members(data["panel"]))
    context = {"dataset": dataset, "estimate": found, "form": form, "refused": refused}
    if request.htmx:
        return render(request, "evaluation/runs/run_estimate.html#estimate", context)
    return render(request, "evaluation/runs/run_estimate.html", context)


@require_GET
@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run, perms = access_run_with_perms(request.user, pk)
    overview = run_overview(run)
    context = {
        "run": run,
        "dataset": run.dataset,
        "progress": overview.progress,
        "overview": overview,
        "panel": snapshot.of(run),
        "can_manage": roles.CHANGE in perms,
    }
    context["stability_pass"] = _stability_pass(run, can_manage=context["can_manage"])
    if request.htmx and request.htmx.target == "stability-pass":
        # The pass section's poll while its pass runs: reload the page once it has ended,
        # for the figures it measured.
        response = render(request, "evaluation/runs/_stability_pass.html#pass", context)
        latest = context["stability_pass"]["latest"]
        if latest is None or latest.ended:
            response["HX-Refresh"] = "true"
        return response
    if request.htmx and request.htmx.target == "run-progress":
        response = render(request, "evaluation/runs/run_detail.html#progress", context)
        if run.ended and not overview.updating:
            # The run ended while the page polled, or its counts were being counted and
            # are kept now: reload it whole, for status and scores.
            response["HX-Refresh"] = "true"
        return response
    report = scores.run_scores(run)
    if request.htmx and request.htmx.target == "figures-updating":
        # The note's poll while the scores are being refreshed: reload once they are kept.
        if not report.updating:
            return HttpResponse(headers={"HX-Refresh": "true"})
        return render(
            request, "evaluation/analytics/_figures_updating.html",
            {"served": report, "poll_url": request.path, "reload_url": request.path},
        )  # fmt: skip
    if request.htmx and request.htmx.target == "scores-watch":
        return _scores_watch(request, report)
    context["report"] = report
    context["reliability"] = scores.reliability_shown(report)
    # The latest pass, read for its section, is the one that measures the run once it has
    # finished; without any pass the run measures itself (no query either way).
    latest = context["stability_pass"]["latest"]
    source = run if latest is None else latest if latest.status in Run.FINISHED else None
    judged_twice = stability.served(run, source=source)
    context["stability"] = stability.stability_shown(judged_twice.figures)
    context["stability_served"] = judged_twice
    context["canary"] = canary.shown(run)
    # The per-system table covers every answer; the per-answer table shows a page of them
    # (a run of 5,000 answers is not one page of HTML), each with its query's text. Only
    # that page's answers are read (run_scores keeps an ended run's rows in pieces).
    page = Paginator(report, ANSWERS_PER_PAGE).get_page(request.GET.get("page"))
    texts = dict(Query.objects.filter(pk__in={r.query_id for r in page}).values_list("pk", "text"))
    context["page"] = page
    context["answers"] = [(r, texts.get(r.query_id, "")) for r in page]
    return render(request, "evaluation/runs/run_detail.html", context)


ANSWERS_PER_PAGE = 100


def _stability_pass(run, *, can_manage: bool) -> dict:
    """The run page's stability pass section: the run's latest pass and its progress while
    it runs, and the form to ask for one (admins, a finished run of judges it may call)."""
    latest = stability_pass.latest(run)
    offered = (
        can_manage and run.status in Run.FINISHED and run.kind != Run.Kind.IMPORTED
        and not run.past_the_cache and bool(stability_pass.judges_of(run))
    )  # fmt: skip
    return {
        "latest": latest,
        "progress": stability_pass.progress(latest) if latest and not latest.ended else None,
        "form": StabilityPassForm(run=run) if offered else None,
    }


@require_POST
@login_required
def run_stability_pass(request: HttpRequest, pk: int) -> HttpResponse:
    """Start a stability pass of the run (its admins), then back to the run page, which
    follows its progress; a refusal is said there, naming the field."""
    run = access_run(request.user, pk, manage=True)
    form = StabilityPassForm(request.POST, run=run)
    if not form.is_valid():
        for name, errors in form.errors.items():
            label = form.fields[name].label or name if name in form.fields else "Stability pass"
            messages.error(request, f"{label}: {' '.join(errors)}")
        return redirect("run-detail", pk=run.pk)
    try:
        found = stability_pass.stability_pass_start(run=run, asked=form.asked(), by=request.user)
    except runs.RunRefused as refused:
        field = form.fields.get(refused.field or "")
        label = (field.label or refused.field) if field else "Stability pass"
        messages.error(request, f"{label}: {' '.join(refused.problems)}")
    except stability_pass.PassRunning as busy:
        messages.error(request, str(busy))
    else:
        messages.success(request, f"{found} started: {found.expected} verdicts to collect.")
    return redirect("run-detail", pk=run.pk)


@require_GET
@login_required
def run_stability_pass_estimate(request: HttpRequest, pk: int) -> HttpResponse:
    """What the stability pass the form describes would cost (its fields as GET
    parameters): the form's htmx fragment, or a page of its own without JavaScript."""
    run = access_run(request.user, pk, manage=True)
    form = StabilityPassForm(request.GET if request.GET.get("judge") else None, run=run)
    found, refused = None, []
    if form.is_bound and form.is_valid():
        try:
            found = stability_pass.pass_estimate(run, form.asked())
        except runs.RunRefused as exc:
            refused = exc.problems
    context = {"run": run, "dataset": run.dataset, "form": form, "estimate": found,
               "refused": refused}  # fmt: skip
    if request.htmx:
        return render(request, "evaluation/runs/stability_pass_estimate.html#estimate", context)
    return render(request, "evaluation/runs/stability_pass_estimate.html", context)


def _scores_watch(request: HttpRequest, report: scores.RunScores) -> HttpResponse:
    """The poll of an ended run's page whose scores were current when shown: a change they
    depend on since (a strategy or undecided setting, a weight, an adjudication) makes
    run_scores queue their refresh, and the page says "Updating" (the note polls on and
    reloads the page once the fresh ones are kept); fresh ones kept already reload it now.
    Nothing changed: 204, and the page polls on."""
    if report.updating:
        return render(
            request, "evaluation/analytics/_figures_updating.html",
            {"served": report, "poll_url": request.path, "reload_url": request.path},
        )  # fmt: skip
    shown = request.GET.get("shown", "")
    if report.computed_at is not None and report.computed_at.isoformat() != shown:
        return HttpResponse(headers={"HX-Refresh": "true"})
    return HttpResponse(status=204)


ACTIONS = {
    "cancel": (runs.run_cancel, "Run cancelled; the verdicts collected so far are kept."),
    "resume": (runs.run_resume, "Run resumed; only missing verdicts will be collected."),
    "retry-failed": (runs.run_retry_failed, "The failed calls are queued again."),
}


@require_POST
@login_required
def run_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    if action not in ACTIONS:
        raise Http404("No such action.")
    run = access_run(request.user, pk, manage=True)
    service, done = ACTIONS[action]
    try:
        service(run=run)
    except (runs.RunStateError, runs.RunRefused) as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, done)
    return redirect("run-detail", pk=run.pk)


@require_GET
@login_required
def run_answer(request: HttpRequest, pk: int, answer_id: int) -> HttpResponse:
    """The rendered answer beside each criterion's votes, rationales and final verdict."""
    run = access_run(request.user, pk)
    answer = (
        Answer.objects.select_related("query", "system")
        .filter(pk=answer_id, query__dataset=run.dataset_id)
        .first()
    )
    if answer is None:
        raise Http404("No such answer in this run's dataset.")
    context = {
        "run": run,
        "dataset": run.dataset,
        "answer": answer,
        "view": answer_view(answer),
        **answer_in_run(request.user, run, answer),
    }
    return render(request, "evaluation/runs/run_answer.html", context)


@require_GET
@login_required
def verdict_prompt(request: HttpRequest, pk: int) -> HttpResponse:
    """The prompt a verdict's call sent, rebuilt from the version it records (the page of
    `GET /api/verdicts/{id}/prompt/`), for those who may see its run."""
    verdict = access_verdict(request.user, pk)
    context = {
        "verdict": verdict, "run": verdict.run, "dataset": verdict.run.dataset,
        "sent": rebuild.prompt_sent(verdict),
    }  # fmt: skip
    return render(request, "evaluation/runs/verdict_prompt.html", context)
