"""A run's judge stability: the items (answer, criterion) one judge graded several times in
the run (a panel member's samples), read as flip rates per criterion and a test–retest κ
(evaluation.metrics.stability). A run with a finished stability pass
(evaluation.runs.stability_pass: a sample of its items graded k times by one judge) is
measured on the pass's verdicts instead (`measured_on`): every reader below goes through it.

The verdicts are counted in the database, one row per repeated item; the figure is kept
(evaluation.kept) under the run's state. Pages and the API read it through `served`, which
never counts it in the request (evaluation.kept.cold): a figure not kept yet is counted by
the refresh task of group REFRESH_GROUP, and the reader shows a placeholder meanwhile, or
the figure of the run's earlier state marked updating.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from django.db import connection

from annotation.models import Criterion
from evaluation.kept import cold, readers
from evaluation.kept import figures as kept_figures
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
# The refresh group (evaluation.kept.refresh) that counts the figure in the background.
REFRESH_GROUP = "stability"


def _repeated_items(run: Run) -> list[stability.RepeatedItem]:
    with connection.cursor() as cursor:
        cursor.execute(_REPEATED_SQL, [run.pk])
        return [
            stability.RepeatedItem(criterion, judge, int(p), int(f))
            for criterion, judge, p, f in cursor.fetchall()
        ]


def measured_on(run: Run) -> Run:
    """The run whose repeated calls measure this run's judge stability: its latest stability
    pass that finished, else the run itself (its panel members' samples). One query, none
    for a pass or a canary (they have no pass)."""
    if run.stability_for_id is not None or run.canary_for_id is not None:
        return run
    return run.stability_passes.filter(status__in=Run.FINISHED).order_by("-pk").first() or run


def _state(run: Run) -> readers.State:
    return readers.state(run.dataset_id, readers.JUDGE_STABILITY, run=run,
                         facts=readers.run_facts(run))  # fmt: skip


def run_stability(run: Run) -> dict:
    """The run's stability figures (metrics.stability.Stability.as_dict), kept for the
    run's state (its verdicts change only while it runs or is resumed); counted and kept
    here when they are not: for the refresh task, never for a request (`served`). Those of
    its stability pass when it has one (`measured_on`)."""
    run = measured_on(run)
    return remembered(_state(run), lambda: _counted(run))


def _counted(run: Run) -> dict:
    return stability.stability(_repeated_items(run)).as_dict()


def stability_kept(run: Run) -> bool:
    """The figure is kept for the run's current state (the warm-up asks; two queries)."""
    state = _state(measured_on(run))
    return kept_figures.slot(state).filter(key=state.key).exists()


@dataclass(frozen=True)
class Served(cold.Served):
    """The kept figure as a request gets it (evaluation.kept.cold.Served), and the run
    whose verdicts it counts (`measured_on`): the run itself, or its stability pass."""

    source: Run | None = None

    @property
    def from_pass(self) -> bool:
        return self.source is not None and self.source.stability_for_id is not None


def served(run: Run, *, source: Run | None = None) -> Served:
    """The run's stability figures for a page or the API, never counted here but where
    the cold rule says so (evaluation.kept.cold: the test suite, a read-only export):
    kept for the run's state, else the earlier state's marked updating, else a
    placeholder, a refresh being queued either way (once for every reader). Those of its
    finished stability pass when it has one (`measured_on`, or `source` when the caller
    has found it already); the answer's `source` says which run."""
    source = source or measured_on(run)
    found = _served(source)
    return Served(**{f.name: getattr(found, f.name) for f in fields(found)}, source=source)


def _served(run: Run) -> cold.Served:
    state = _state(run)
    if run.archived_at is not None:
        # Its verdicts are in a Parquet file (evaluation.archive) and a recount would find
        # none: the figure kept when it was archived is current for good.
        return replace(cold.latest(state), fresh=True)
    return cold.served(state, REFRESH_GROUP, lambda: _counted(run))


def stability_shown(found: dict | None) -> dict | None:
    """A page's stability section from the served figures: the figures, and the most
    unstable criteria with their text and whether they are surely unstable; None when
    there are none yet or no judge graded an item twice in the run."""
    if not found or not found["items"]:
        return None
    rows = found["criteria"][:SHOWN]
    texts = dict(
        Criterion.objects.filter(pk__in=[r["criterion_id"] for r in rows]).values_list("pk", "text")
    )
    criteria = [
        {**r, "text": texts.get(r["criterion_id"], ""), "unstable": is_unstable(r)} for r in rows
    ]
    return {**found, "criteria": criteria, "more": len(found["criteria"]) - len(rows)}


def by_criterion(found: dict | None) -> dict[int, dict]:
    """Each criterion's kept row (with `unstable`), by criterion id: for a page that lists
    criteria of its own (criterion health)."""
    rows = (found or {}).get("criteria", [])
    return {r["criterion_id"]: {**r, "unstable": is_unstable(r)} for r in rows}


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
