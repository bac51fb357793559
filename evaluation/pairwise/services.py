"""Writes of pairwise sessions: create one (its pairs with it), show a reviewer their next
pair (drawing its position), vote, undo. Each runs in one transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotation.models import Dataset
from evaluation.answers.models import Answer, System
from evaluation.pairwise import blind, selectors
from evaluation.pairwise.models import PairwisePair, PairwiseSession, PairwiseVote

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


def _answers(dataset: Dataset, system: System, run_label: str) -> dict[int, int]:
    """query id → the side's answer to it (one per system, query and run label; perfect
    answers are never a side)."""
    rows = Answer.objects.filter(
        query__dataset=dataset, system=system, run_label=run_label, checklist__isnull=True
    ).values_list("query_id", "pk")
    return dict(rows)


@transaction.atomic
def session_create(
    *,
    dataset: Dataset,
    name: str,
    system_a: System,
    system_b: System,
    run_label_a: str = "",
    run_label_b: str = "",
    reviewers_per_pair: int = 3,
    show_checklist: bool = False,
    by: AbstractBaseUser | None,
) -> PairwiseSession:
    """A session with one pair per query that both sides answered. Refused (nothing made)
    when the two sides are one, or when no query has an answer from both."""
    if system_a.pk == system_b.pk and run_label_a == run_label_b:
        raise ValidationError(
            {"system_b": "Choose two different systems, or two run labels of one system."}
        )
    if not 1 <= reviewers_per_pair <= 50:
        raise ValidationError({"reviewers_per_pair": "Between 1 and 50 reviewers per pair."})
    side_a = _answers(dataset, system_a, run_label_a)
    side_b = _answers(dataset, system_b, run_label_b)
    both = sorted(side_a.keys() & side_b.keys())
    if not both:
        raise ValidationError(
            {"system_b": "No query of this dataset has an answer from both sides."}
        )
    session = PairwiseSession.objects.create(
        dataset=dataset, name=name, system_a=system_a, run_label_a=run_label_a,
        system_b=system_b, run_label_b=run_label_b, reviewers_per_pair=reviewers_per_pair,
        show_checklist=show_checklist, created_by=by,
    )  # fmt: skip
    PairwisePair.objects.bulk_create(
        PairwisePair(session=session, query_id=q, answer_a_id=side_a[q], answer_b_id=side_b[q])
        for q in both
    )
    return session


def pair_show(*, session: PairwiseSession, reviewer: AbstractBaseUser) -> PairwiseVote | None:
    """The pair this reviewer votes on next, as their (open) vote row: the one already shown
    to them if any (same position as before), else a new one with its position drawn. None
    when nothing is left for them."""
    rater = reviewer.get_username()
    shown = selectors.open_vote(session, rater)
    if shown is not None:
        return shown
    for _attempt in range(3):
        pair = selectors.next_pair(session, rater)
        if pair is None:
            return None
        try:
            return _open(pair, reviewer, rater)
        except IntegrityError:
            # The same reviewer in two tabs opened it at once: the other tab's row stands.
            shown = selectors.open_vote(session, rater)
            if shown is not None:
                return shown
    return selectors.open_vote(session, rater)


@transaction.atomic
def _open(pair: PairwisePair, reviewer: AbstractBaseUser, rater: str) -> PairwiseVote:
    # The pair's row is locked while its earlier positions are counted, so that two reviewers
    # opening it at once are balanced against each other too.
    PairwisePair.objects.select_for_update().filter(pk=pair.pk).first()
    counts = PairwiseVote.objects.filter(pair=pair, first_is_a__isnull=False).aggregate(
        a=Count("pk", filter=Q(first_is_a=True)), b=Count("pk", filter=Q(first_is_a=False))
    )
    vote = PairwiseVote.objects.create(
        pair=pair, reviewer=reviewer, rater=rater,
        first_is_a=blind.draw_first_is_a(counts["a"], counts["b"]),
    )  # fmt: skip
    return selectors.open_vote(pair.session, rater) or vote


@transaction.atomic
def vote_cast(*, vote: PairwiseVote, choice: str, reason: str = "") -> PairwiseVote:
    """Record the reviewer's 1 / 2 / tie on the pair as shown to them. A vote may be changed
    by voting again; `voted_at` then moves, so undo takes back the latest."""
    if vote.first_is_a is None:
        raise ValidationError({"choice": "This vote was imported; it has no position to vote on."})
    try:
        preference = blind.preference_for(choice, vote.first_is_a)
    except ValueError as error:
        raise ValidationError({"choice": str(error)}) from None
    vote.preference = preference
    vote.reason = reason.strip()
    vote.voted_at = timezone.now()
    vote.save(update_fields=["preference", "reason", "voted_at"])
    return vote


@transaction.atomic
def vote_undo(*, session: PairwiseSession, reviewer: AbstractBaseUser) -> PairwiseVote | None:
    """Take back the reviewer's latest vote in the session: the pair is open again for them,
    in the same position, with their reason kept to edit. None when they have no vote."""
    vote = (
        PairwiseVote.objects.select_for_update()
        .filter(pair__session=session, rater=reviewer.get_username(), source="app")
        .exclude(preference="")
        .order_by("-voted_at", "-pk")
        .first()
    )
    if vote is None:
        return None
    # One open pair at a time: another one shown but not voted goes back to the queue, so
    # the undone pair is the one the reviewer sees next.
    PairwiseVote.objects.filter(pair__session=session, rater=vote.rater, preference="").delete()
    vote.preference = ""
    vote.voted_at = None
    vote.save(update_fields=["preference", "voted_at"])
    return vote
