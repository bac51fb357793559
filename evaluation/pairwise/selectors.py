"""Reads of pairwise sessions: the next pair for a reviewer, progress, the votes as figures
read them. Each is a fixed number of queries, whatever the session's size."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Prefetch, Q, QuerySet

from annotation.models import Checklist, Criterion, Dataset
from evaluation.pairwise.models import PairwisePair, PairwiseSession, PairwiseVote


@dataclass(frozen=True)
class Progress:
    voted: int  # pairs this reviewer has voted on
    open: int  # shown to them, not voted yet (0 or 1 in the app)
    waiting: int  # pairs they have not seen that still need votes

    @property
    def total(self) -> int:
        return self.voted + self.open + self.waiting


def sessions_of(dataset: Dataset) -> QuerySet[PairwiseSession]:
    return (
        PairwiseSession.objects.filter(dataset=dataset)
        .select_related("system_a", "system_b")
        .annotate(
            pair_count=Count("pairs", distinct=True),
            vote_count=Count("pairs__votes", filter=~Q(pairs__votes__preference=""), distinct=True),
        )
    )


def open_vote(session: PairwiseSession, rater: str) -> PairwiseVote | None:
    """The pair shown to this reviewer and not voted yet (the oldest, should there be more)."""
    return (
        PairwiseVote.objects.filter(pair__session=session, rater=rater, preference="")
        .select_related("pair__query__category", "pair__answer_a", "pair__answer_b")
        .order_by("shown_at", "pk")
        .first()
    )


def own_vote(session: PairwiseSession, rater: str, pk: int) -> PairwiseVote | None:
    """The rater's own vote row `pk` in this session, made in the app: what a vote may be
    cast on (another's id, or an imported vote, is None: a 404, never a vote)."""
    return PairwiseVote.objects.filter(
        pk=pk, pair__session=session, rater=rater, source=PairwiseVote.Source.APP
    ).first()


def _needing_votes(session: PairwiseSession, rater: str) -> QuerySet[PairwisePair]:
    """Pairs this reviewer has not been shown that have fewer votes than the session's
    target: fewest votes first, so that every pair reaches its target before any goes over."""
    return (
        PairwisePair.objects.filter(session=session)
        .exclude(votes__rater=rater)
        .annotate(voted=Count("votes", filter=~Q(votes__preference="")))
        .filter(voted__lt=session.reviewers_per_pair)
    )


def next_pair(session: PairwiseSession, rater: str) -> PairwisePair | None:
    return _needing_votes(session, rater).order_by("voted", "pk").first()


def progress(session: PairwiseSession, rater: str) -> Progress:
    counts = PairwiseVote.objects.filter(pair__session=session, rater=rater).aggregate(
        voted=Count("pk", filter=~Q(preference="")), open=Count("pk", filter=Q(preference=""))
    )
    return Progress(
        voted=counts["voted"], open=counts["open"], waiting=_needing_votes(session, rater).count()
    )


def progress_by_rater(session: PairwiseSession) -> list[tuple[str, int]]:
    """(rater, pairs voted) for everyone who voted in the session: counts only, never the
    votes themselves."""
    rows = (
        PairwiseVote.objects.filter(pair__session=session)
        .exclude(preference="")
        .values("rater")
        .annotate(voted=Count("pk"))
        .order_by("rater")
    )
    return [(r["rater"], r["voted"]) for r in rows]


def votes_of(session: PairwiseSession) -> QuerySet[PairwiseVote]:
    """The cast votes of the session, with their pair's query: what the figures read."""
    return (
        PairwiseVote.objects.filter(pair__session=session)
        .exclude(preference="")
        .order_by("pair_id", "rater")
    )


def session_keys(dataset: Dataset) -> dict[int, str]:
    """Each session's key in a dataset export (and its import): its name, or
    `session-<id>` when two of the dataset's sessions share it (as runs are keyed)."""
    rows = list(
        PairwiseSession.objects.filter(dataset=dataset)
        .order_by("created_at", "pk")
        .values_list("pk", "name")
    )
    names = [name for _, name in rows]
    return {pk: name if names.count(name) == 1 else f"session-{pk}" for pk, name in rows}


def checklists_shown(session: PairwiseSession, query_id: int) -> list[Checklist]:
    """The query's submitted checklists with their active criteria (`active_criteria`), when
    the session shows them (reviewers may read submitted checklists; drafts stay blind)."""
    if not session.show_checklist:
        return []
    return list(
        Checklist.objects.filter(query_id=query_id, status=Checklist.Status.SUBMITTED)
        .prefetch_related(
            Prefetch(
                "criteria",
                Criterion.objects.active().order_by("position"),
                to_attr="active_criteria",
            )
        )
        .order_by("pk")
    )
