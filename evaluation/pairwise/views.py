"""Pairwise pages: a dataset's sessions (admins create them), a session's progress, and the
blind vote page where a reviewer answers 1, 2 or tie from the keyboard.

Every page needs review_dataset on the dataset (404 for non-members, 403 for experts);
creating a session needs change_dataset. The vote page never shows another rater's vote,
and no system name: only "Answer 1" and "Answer 2". Votes post a plain form and redirect to
the next pair, so the page works without JavaScript; static/js/pairwise.js adds the keys.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import roles
from annotation.access import access_dataset, dataset_permissions
from config.form_pages import form_status, posted
from config.ids import is_id
from evaluation import task_names
from evaluation.answers.rendering import render_answer
from evaluation.judges.models import Panel
from evaluation.pairwise import figures, judging, selectors, services
from evaluation.pairwise.access import access_session
from evaluation.pairwise.forms import SessionForm, VoteForm


@require_http_methods(["GET", "POST"])
@login_required
def dataset_pairwise(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_dataset(request.user, pk, roles.REVIEW)
    can_create = roles.CHANGE in dataset_permissions(request.user, dataset)
    form = SessionForm(posted(request), dataset=dataset) if can_create else None
    if request.method == "POST":
        if form is None:
            raise PermissionDenied("Only the dataset's admins create pairwise sessions.")
        if form.is_valid():
            try:
                session = services.session_create(
                    dataset=dataset, by=request.user, **form.cleaned_data
                )
            except ValidationError as error:
                for field, errors in error.message_dict.items():
                    for message in errors:
                        form.add_error(field if field in form.fields else None, message)
            else:
                messages.success(request, f"Session “{session.name}” made with its pairs.")
                return redirect("pairwise-session", pk=session.pk)
    context = {"dataset": dataset, "sessions": selectors.sessions_of(dataset), "form": form}
    return render(
        request,
        "evaluation/pairwise/sessions.html",
        context,
        status=form_status(form) if form else 200,
    )


@require_GET
@login_required
def pairwise_session(request: HttpRequest, pk: int) -> HttpResponse:
    session, perms = access_session(request.user, pk)
    rater = request.user.get_username()
    context = {
        "session": session, "dataset": session.dataset,
        "mine": selectors.progress(session, rater),
        "raters": selectors.progress_by_rater(session),
        "pair_count": session.pairs.count(),
        "is_admin": roles.CHANGE in perms,
    }  # fmt: skip
    if roles.CHANGE in perms:
        # The outcome of the votes is for the dataset's admins: reviewers still voting must
        # not learn which way the pairs lean (nor, from the sides, which system is which).
        context["wtl"], context["agreement"] = figures.session_figures(session)
        context["judges"] = judging.judge_figures(session)
        context["panels"] = Panel.objects.order_by("name")
    return render(request, "evaluation/pairwise/session.html", context)


@require_http_methods(["GET", "POST"])
@login_required
def pairwise_vote(request: HttpRequest, pk: int) -> HttpResponse:
    session, _perms = access_session(request.user, pk)
    if request.method == "POST":
        return _cast(request, session)
    vote = services.pair_show(session=session, reviewer=request.user)
    return _page(request, session, vote)


def _cast(request: HttpRequest, session) -> HttpResponse:
    form = VoteForm(request.POST)
    if not form.is_valid():
        vote = selectors.open_vote(session, request.user.get_username())
        return _page(request, session, vote, form=form, status=400)
    vote = selectors.own_vote(session, request.user.get_username(), form.cleaned_data["vote"])
    if vote is None:
        raise Http404("No such pair shown to you in this session.")
    services.vote_cast(
        vote=vote, choice=form.cleaned_data["choice"], reason=form.cleaned_data["reason"]
    )
    return redirect("pairwise-vote", pk=session.pk)


@require_POST
@login_required
def pairwise_judge(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue the panel's pairwise judging of the session (admins: it spends the judges'
    budget). Judges are site-wide: a panel holds configuration, and the prompts it is sent
    carry only this session's pairs."""
    session, _perms = access_session(request.user, pk, roles.CHANGE)
    chosen = request.POST.get("panel", "")
    panel = Panel.objects.filter(pk=chosen).first() if is_id(chosen) else None
    if panel is None:
        messages.error(request, "panel: choose one of the panels.")
        return redirect("pairwise-session", pk=session.pk)
    transaction.on_commit(
        lambda: task_names.signature(
            task_names.PAIRWISE_JUDGE_TASK, (session.pk, panel.pk)
        ).apply_async()
    )
    messages.success(request, f"The panel “{panel}” is judging the pairs in both orders.")
    return redirect("pairwise-session", pk=session.pk)


@require_POST
@login_required
def pairwise_undo(request: HttpRequest, pk: int) -> HttpResponse:
    session, _perms = access_session(request.user, pk)
    if services.vote_undo(session=session, reviewer=request.user) is None:
        messages.info(request, "Nothing to undo: you have not voted in this session.")
    else:
        messages.info(request, "Your last vote was taken back: vote on that pair again.")
    return redirect("pairwise-vote", pk=session.pk)


def _page(request, session, vote, *, form=None, status: int = 200) -> HttpResponse:
    rater = request.user.get_username()
    context = {"session": session, "dataset": session.dataset, "vote": vote, "form": form,
               "mine": selectors.progress(session, rater)}  # fmt: skip
    if vote is not None:
        pair = vote.pair
        first, second = (
            (pair.answer_a, pair.answer_b) if vote.first_is_a else (pair.answer_b, pair.answer_a)
        )
        context.update(
            query=pair.query,
            first_html=render_answer(first.text),
            second_html=render_answer(second.text),
            checklists=selectors.checklists_shown(session, pair.query_id),
        )
    return render(request, "evaluation/pairwise/vote.html", context, status=status)
