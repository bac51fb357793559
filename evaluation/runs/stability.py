"""A run's judge stability: the items (answer, criterion) one judge graded several times in
the run (a panel member's samples), read as flip rates per criterion and a test–retest κ
(evaluation.metrics.stability).

The verdicts are counted in the database, one row per repeated item; an ended run's figure
is kept (evaluation.kept) under the run's state, so the run page reads one row.
"""

from __future__ import annotations

from django.db import connection

from annotation.models import Criterion
from evaluation.kept import readers
from evaluation.kept.figures import remembered
from evaluation.metrics import stability
from evaluation.runs.models import Run

# Valid verdicts per (answer, criterion, judge) graded two times or more: an invalid vote
# (unparseable, error) is no rating (docs/metrics.md#judge-stability).
_REPEATED_SQL = """
SELECT v.criterion_id, v.judge_id,
       sum(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END),
       sum(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END)
FROM evaluation_verdict v
WHERE v.run_id = %s AND v.outcome IN ('pass', 'fail')
GROUP BY v.answer_id, v.criterion_id, v.judge_id
HAVING count(*) >= 2
"""

# The criteria a run page names, the most unstable first.
SHOWN = 20


def _repeated_items(run: Run) -> list[stability.RepeatedItem]:
    with connection.cursor() as cursor:
        cursor.execute(_REPEATED_SQL, [run.pk])
        return [
            stability.RepeatedItem(criterion, judge, int(p), int(f))
            for criterion, judge, p, f in cursor.fetchall()
        ]


def run_stability(run: Run) -> dict:
    """The run's stability figures (metrics.stability.Stability.as_dict), kept for the
    run's state: its verdicts change only while it runs or is resumed."""
    state = readers.state(run.dataset_id, readers.JUDGE_STABILITY, run=run,
                          facts=readers.run_facts(run))  # fmt: skip
    return remembered(state, lambda: stability.stability(_repeated_items(run)).as_dict())


def stability_shown(run: Run) -> dict | None:
    """The run page's stability section: the figures, and the most unstable criteria with
    their text and whether they are surely unstable; None when no judge graded an item
    twice in the run."""
    found = run_stability(run)
    if not found["items"]:
        return None
    rows = found["criteria"][:SHOWN]
    texts = dict(
        Criterion.objects.filter(pk__in=[r["criterion_id"] for r in rows]).values_list("pk", "text")
    )
    criteria = [
        {**r, "text": texts.get(r["criterion_id"], ""), "unstable": is_unstable(r)} for r in rows
    ]
    return {**found, "criteria": criteria, "more": len(found["criteria"]) - len(rows)}


def is_unstable(row: dict) -> bool:
    """A kept criterion row surely above the flip-rate floor (metrics.stability.unstable)."""
    flips = row["flips"]
    return stability.unstable(
        stability.CriterionStability(
            row["criterion_id"],
            stability.Rate(flips["count"], flips["items"], flips["rate"], flips["low"],
                           flips["high"]),
        )
    )  # fmt: skip
