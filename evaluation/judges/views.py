"""Judges and panels pages. Site-wide objects: the Admin group (the global evaluation model
permissions, annotation.roles.GROUP_MODEL_PERMISSIONS) lists, creates and changes them."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count, Prefetch
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import roles
from annotation.access import access_dataset, dataset_permissions
from annotation.models import Criterion
from annotation.selectors import datasets_for_user
from config.site_permissions import site_permission_required
from evaluation.judges import examples, reachability, services, tuning
from evaluation.judges.forms import (
    ExamplesPickForm,
    JudgeForm,
    PanelForm,
    PanelMemberFormSet,
    TuningForm,
)
from evaluation.judges.models import Judge, JudgeTuning, Panel, PanelMember
from evaluation.judging.connection import key_is_set
from evaluation.labels.models import Adjudication


@require_GET
@login_required
@site_permission_required("evaluation.change_judge", action="Managing judges")
def judge_list(request: HttpRequest) -> HttpResponse:
    judges = list(Judge.objects.annotate(panel_count=Count("memberships")).order_by("name"))
    down = reachability.outages(judges)
    rows = [(judge, key_is_set(judge.api_key_env), down.get(judge.pk)) for judge in judges]
    can_add = request.user.has_perm("evaluation.add_judge")
    return render(request, "evaluation/judges/judge_list.html", {"rows": rows, "can_add": can_add})


@require_http_methods(["GET", "POST"])
@login_required
@site_permission_required("evaluation.add_judge", action="Adding a judge")
def judge_create(request: HttpRequest) -> HttpResponse:
    form = JudgeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        judge = services.judge_save(by=request.user, **form.cleaned_data)
        messages.success(request, f"Judge “{judge.name}” created.")
        return redirect("judge-edit", pk=judge.pk)
    status = 400 if request.method == "POST" else 200  # refused: the form says why
    context = {"form": form, "judge": None}
    return render(request, "evaluation/judges/judge_form.html", context, status=status)


@require_http_methods(["GET", "POST"])
@login_required
@site_permission_required("evaluation.change_judge", action="Changing a judge")
def judge_edit(request: HttpRequest, pk: int) -> HttpResponse:
    judge = get_object_or_404(Judge, pk=pk)
    form = JudgeForm(request.POST or None, instance=judge)
    if request.method == "POST" and form.is_valid():
        services.judge_save(judge=judge, by=request.user, **form.cleaned_data)
        messages.success(request, f"Judge “{judge.name}” saved.")
        return redirect("judge-edit", pk=judge.pk)
    status = 200
    if request.method == "POST":
        judge.refresh_from_db()  # the form cleaned the instance in place: show what is stored
        status = 400
    context = {
        "form": form, "judge": judge, "key_set": key_is_set(judge.api_key_env),
        "outage": reachability.outages([judge]).get(judge.pk),
        "tuned": _tuned_versions(request, judge),
    }  # fmt: skip
    return render(request, "evaluation/judges/judge_form.html", context, status=status)


def _tuned_versions(request: HttpRequest, judge: Judge) -> list[tuple[object, str]]:
    """(dataset, prompt version) where a dataset the user reviews tunes the judge: the
    versions its runs and its Examples page say, beside the base one the judge page shows.
    Other datasets' names stay hidden (their tuning is theirs)."""
    if judge.kind != Judge.Kind.LLM:
        return []
    rows = JudgeTuning.objects.filter(
        judge=judge, dataset__in=datasets_for_user(request.user, roles.REVIEW)
    ).select_related("dataset")
    found = [(row.dataset, tuning.current_from(judge, row)) for row in rows]
    return sorted(
        ((dataset, t.version) for dataset, t in found if t.tuned), key=lambda x: x[0].name
    )


@require_POST
@login_required
@site_permission_required("evaluation.change_judge", action="Testing a judge")
def judge_test(request: HttpRequest, pk: int) -> HttpResponse:
    """One small real call with the saved settings; the reply or the error kind."""
    judge = get_object_or_404(Judge, pk=pk)
    context = {"judge": judge, "result": services.judge_test_connection(judge)}
    if request.htmx:
        return render(request, "evaluation/judges/judge_form.html#connection-result", context)
    context |= {
        "form": JudgeForm(instance=judge), "key_set": key_is_set(judge.api_key_env),
        "tuned": _tuned_versions(request, judge),
    }  # fmt: skip
    return render(request, "evaluation/judges/judge_form.html", context)


@require_GET
@login_required
@site_permission_required("evaluation.change_panel", action="Managing panels")
def panel_list(request: HttpRequest) -> HttpResponse:
    members = PanelMember.objects.select_related("judge").order_by("judge__name")
    panels = Panel.objects.annotate(run_count=Count("runs")).prefetch_related(
        Prefetch("members", queryset=members)
    )
    context = {"panels": panels, "can_add": request.user.has_perm("evaluation.add_panel")}
    return render(request, "evaluation/judges/panel_list.html", context)


@require_http_methods(["GET", "POST"])
@login_required
@site_permission_required("evaluation.add_panel", action="Adding a panel")
def panel_create(request: HttpRequest) -> HttpResponse:
    return _panel_form(request, None)


@require_http_methods(["GET", "POST"])
@login_required
@site_permission_required("evaluation.change_panel", action="Changing a panel")
def panel_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _panel_form(request, get_object_or_404(Panel, pk=pk))


def _panel_form(request: HttpRequest, panel: Panel | None) -> HttpResponse:
    judges = Judge.objects.order_by("name")
    initial = (
        [
            {"judge": m.judge_id, "samples": m.samples, "temperatures": _temps(m.temperatures)}
            for m in panel.members.order_by("judge__name")
        ]
        if panel
        else []
    )
    data = request.POST or None
    form = PanelForm(data, instance=panel)
    formset = PanelMemberFormSet(data, initial=initial, prefix="members", judges=judges)
    status = 200
    if request.method == "POST":
        if form.is_valid() and formset.is_valid():
            saved = services.panel_save(panel=panel, members=formset.members(), **form.cleaned_data)
            messages.success(request, f"Panel “{saved.name}” saved.")
            return redirect("panel-edit", pk=saved.pk)
        status = 400
        if panel is not None:
            panel.refresh_from_db()
    context = {
        "form": form,
        "formset": formset,
        "panel": panel,
        "run_count": panel.runs.count() if panel else 0,
    }
    return render(request, "evaluation/judges/panel_form.html", context, status=status)


def _temps(values: list) -> str:
    return ", ".join(f"{float(v):g}" for v in values)


# --- A dataset's tuning of its judges (issue 38): the dataset's pages, its permissions. ---


@require_GET
@login_required
def dataset_tuning(request: HttpRequest, pk: int) -> HttpResponse:
    """The LLM judges and what this dataset adds to each one's prompt. Read by the
    dataset's reviewers and admins (who read its adjudications); changed by its admins."""
    dataset = access_dataset(request.user, pk, roles.REVIEW)
    judges = list(Judge.objects.filter(kind=Judge.Kind.LLM).order_by("name"))
    tunings = tuning.current_of(judges, dataset.pk)
    rows = [(j, tunings[j.pk]) for j in judges]
    context = {"dataset": dataset, "rows": rows, "can_change": _can_change(request, dataset)}
    return render(request, "evaluation/judges/dataset_tuning.html", context)


@require_http_methods(["GET", "POST"])
@login_required
def judge_tuning(request: HttpRequest, pk: int, judge_pk: int) -> HttpResponse:
    """One judge's instructions and typed examples on this dataset."""
    dataset = access_dataset(request.user, pk, roles.REVIEW)
    judge = get_object_or_404(Judge, pk=judge_pk, kind=Judge.Kind.LLM)
    if request.method == "POST":
        access_dataset(request.user, pk, roles.CHANGE)
    row = tuning.stored(judge, dataset.pk) or JudgeTuning(judge=judge, dataset=dataset)
    # Bound on every POST, an empty one too (it empties the tuning).
    form = TuningForm(request.POST if request.method == "POST" else None, instance=row)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                tuning.tuning_save(judge=judge, dataset=dataset, by=request.user,
                                   **form.cleaned_data)  # fmt: skip
            except ValidationError as exc:
                for field, problems in exc.message_dict.items():
                    form.add_error(field, problems)
            else:
                messages.success(request, f"Tuning of “{judge.name}” on this dataset saved.")
                return redirect("judge-tuning", pk=dataset.pk, judge_pk=judge.pk)
        status = 400
    context = {
        "dataset": dataset, "judge": judge, "form": form,
        "can_change": _can_change(request, dataset),
        "version": tuning.current(judge, dataset.pk).version,
        "versions": tuning.versions(judge, dataset.pk),
    }  # fmt: skip
    return render(request, "evaluation/judges/judge_tuning.html", context, status=status)


def _can_change(request: HttpRequest, dataset) -> bool:
    return roles.CHANGE in dataset_permissions(request.user, dataset)


@require_http_methods(["GET", "POST"])
@login_required
def judge_examples(request: HttpRequest, pk: int, judge_pk: int) -> HttpResponse:
    """Worked examples from this dataset's adjudications: checkboxes, and an automatic pick
    that ticks a balanced choice within a token budget for review before it is saved. The
    dataset's admins only (its other members get 403, everyone else 404)."""
    dataset = access_dataset(request.user, pk, roles.CHANGE)
    judge = get_object_or_404(Judge, pk=judge_pk, kind=Judge.Kind.LLM)
    auto = request.method == "POST" and "auto" in request.POST
    kind = (request.POST if auto else request.GET).get("kind", "")
    kind = kind if kind in Criterion.Kind.values else ""
    pick = ExamplesPickForm(request.POST) if auto else ExamplesPickForm(initial={"kind": kind})
    found = examples.candidates(dataset, kind=kind)
    row = tuning.stored(judge, dataset.pk)
    ticked = examples.chosen_ids(row.examples if row else [])
    errors: list[str] = []
    status = 200
    if auto:
        if pick.is_valid():
            chosen = examples.auto_pick(
                found, budget_tokens=pick.cleaned_data["budget"],
                by_kind=pick.cleaned_data["by_kind"],
            )  # fmt: skip
            ticked = {c.adjudication_id for c in chosen}
        else:
            status = 400
    elif request.method == "POST" and "save" in request.POST:
        try:
            ids = [int(v) for v in request.POST.getlist("adjudication")]
            listed = [int(v) for v in request.POST.getlist("listed")]
            examples.examples_set(judge=judge, dataset=dataset, chosen=ids, among=listed,
                                  by=request.user)  # fmt: skip
        except (ValueError, Adjudication.DoesNotExist):
            return HttpResponseBadRequest("An adjudication chosen is not one of this dataset's.")
        except ValidationError as exc:
            errors = [m for ms in exc.message_dict.values() for m in ms]
            ticked, status = set(ids), 400
        else:
            messages.success(request, f"Examples of “{judge.name}” saved: a new prompt version.")
            return redirect("judge-examples", pk=dataset.pk, judge_pk=judge.pk)
    elif request.method == "POST":
        return HttpResponseBadRequest("Nothing to do: save the ticked examples or pick some.")
    rows = [(c, c.adjudication_id in ticked) for c in found]
    context = {
        "judge": judge, "dataset": dataset, "rows": rows, "pick": pick, "errors": errors,
        "ticked_tokens": sum(c.tokens for c, on in rows if on),
        "version": tuning.current(judge, dataset.pk).version, "limit": examples.LIST_LIMIT,
        "max_examples": tuning.MAX_EXAMPLES, "kind": kind,
        "kinds": [("", "Every kind"), *Criterion.Kind.choices],
    }  # fmt: skip
    return render(request, "evaluation/judges/judge_examples.html", context, status=status)
