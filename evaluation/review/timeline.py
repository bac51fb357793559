"""What the review page adds to an answer's trajectory (evaluation.answers.trajectory): the
outcomes of the trajectory checks that decided some of its criteria in the shown run."""

from __future__ import annotations

from evaluation.answers.trajectory import CheckRow
from evaluation.checks.models import CriterionCheck
from evaluation.review.answer_rows import ReviewRow


def timeline_checks(rows: list[ReviewRow]) -> list[CheckRow]:
    """The criteria decided by a trajectory check, with the run's vote (one query)."""
    checks = {
        c.criterion_id: c
        for c in CriterionCheck.objects.filter(
            criterion_id__in=[r.criterion.pk for r in rows]
        ).exclude(kind="")
    }
    out = []
    for row in rows:
        check = checks.get(row.criterion.pk)
        if check is None:
            continue
        vote = row.votes[0] if row.votes else None
        out.append(
            CheckRow(
                row.criterion.text,
                check.get_kind_display().split(":")[0],
                vote.outcome if vote else "",
                vote.rationale if vote else "",
            )
        )
    return out
