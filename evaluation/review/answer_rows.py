"""The review page of one answer: its criteria with every judge's votes in the chosen run,
the human labels and the adjudication of each (a fixed number of queries), and the runs a
reviewer may choose between."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from annotation.access import AnyUser

from dataclasses import dataclass, field, replace

from django.db.models import Exists, OuterRef

from annotation.headings import GroupHeading, in_reading_order
from annotation.models import Criterion
from evaluation.answers.models import Answer
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.metrics.aggregation import CriterionVerdict, Vote, aggregate
from evaluation.review.selectors import latest_run, reviewable_criteria
from evaluation.runs.access import raw_output_shown
from evaluation.runs.models import Run, Verdict


@dataclass(frozen=True, slots=True)
class ShownVote:
    """What a row shows of one judge's vote. Plain values, not a Verdict: building 180
    deferred model instances was a tenth of the page's CPU."""

    criterion_id: int
    judge_id: int
    sample: int
    outcome: str
    failure_kind: str
    rationale: str
    error: str
    error_kind: str
    raw_output: str
    judge_name: str


# ShownVote's fields as columns, in its order: the judge's name through the join.
VOTE_COLUMNS = (*tuple(ShownVote.__dataclass_fields__)[:-1], "judge__name")


@dataclass
class ReviewRow:
    """One criterion of the review page with everything said about it."""

    criterion: Criterion
    votes: list[ShownVote] = field(default_factory=list)
    verdict: CriterionVerdict | None = None  # None when no run graded the answer
    labels: list[HumanLabel] = field(default_factory=list)
    own: HumanLabel | None = None
    adjudication: Adjudication | None = None
    # Set by the adjudication view when the reviewer's decision lost a race: the decision
    # that stands (None: removed), shown so that they can decide again knowingly.
    conflict: bool = False
    error: str = ""
    # The group headings that open before this criterion (a group and its subgroup when the
    # criterion is the first of both), top first.
    headings: tuple[GroupHeading, ...] = ()
    # The criterion's id as the page writes it (ten times a row): a string once, not an
    # integer localised at each use.
    key: str = field(init=False)
    author: str = field(init=False)  # the checklist's author, shown three times a row

    def __post_init__(self) -> None:
        self.key = str(self.criterion.pk)
        self.author = self.criterion.checklist.author.get_username()

    @property
    def final(self) -> str:
        """The label that stands: the adjudication once there is one (its pass replaces the
        panel's fail bar), else the panel's verdict; "none" without either."""
        if self.adjudication is not None:
            return self.adjudication.label
        return self.verdict.outcome if self.verdict is not None else "none"

    @property
    def others(self) -> list[HumanLabel]:
        return [label for label in self.labels if label is not self.own]


def offered_runs(answer: Answer) -> list[Run]:
    """Runs holding verdicts on the answer, newest first. One index probe per run of the
    dataset (does it hold one?), where a join read every verdict of the answer in every
    run: 3,600 index rows for 30 nightly runs, ten times as many for a year of them."""
    graded = Verdict.objects.filter(run=OuterRef("pk"), answer=answer)
    return list(
        Run.objects.filter(Exists(graded), dataset=answer.query.dataset_id)
        .select_related("panel")
        .order_by("-created_at", "-id")
    )


def default_run(runs: list[Run]) -> Run | None:
    return latest_run(runs)


def review_rows(
    answer: Answer, user: AnyUser, run: Run | None, *, criterion: Criterion | None = None
) -> list[ReviewRow]:
    """Every reviewable criterion of the answer's query (or just `criterion`) with the run's
    votes and verdict, the human labels and the adjudication. Four queries."""
    criteria = reviewable_criteria(checklist__query=answer.query_id)
    if criterion is not None:
        criteria = criteria.filter(pk=criterion.pk)
    rows = {
        c.pk: ReviewRow(criterion=c)
        for c in criteria.select_related("checklist__author").order_by("checklist_id", "position")
    }
    if run is not None:
        votes = (
            Verdict.objects.filter(run=run, answer=answer, criterion__in=rows)
            .order_by("judge__name", "sample")
            .values_list(*VOTE_COLUMNS)
        )
        for values in votes:
            vote = ShownVote(*values)
            if vote.raw_output and not raw_output_shown(user, vote.outcome):
                vote = replace(vote, raw_output="")
            rows[vote.criterion_id].votes.append(vote)
        for row in rows.values():
            row.verdict = aggregate(
                [Vote(str(v.judge_id), v.sample, v.outcome) for v in row.votes],
                run.panel_method,
                threshold=run.panel_threshold,
            )
    username = user.get_username()
    for label in HumanLabel.objects.filter(answer=answer, criterion__in=rows).order_by("rater"):
        row = rows[label.criterion_id]
        row.labels.append(label)
        if label.rater == username:
            row.own = label
    adjudications = Adjudication.objects.filter(answer=answer, criterion__in=rows)
    for adjudication in adjudications.select_related("decided_by"):
        rows[adjudication.criterion_id].adjudication = adjudication
    if criterion is not None:  # one row re-rendered: its headings are not redrawn
        return list(rows.values())
    return by_group(list(rows.values()))


def by_group(rows: list[ReviewRow]) -> list[ReviewRow]:
    """The rows as each checklist reads, each carrying the group headings that open before
    it (annotation.headings). One query."""
    return in_reading_order(rows, criterion_of=lambda row: row.criterion)
