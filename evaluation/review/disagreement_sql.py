"""The disagreement queue as one SQL statement: every item the chosen runs judged, with its
facts and its sort key (review.order), up to the columns of a queued row. The fill writes
it whole (review.kept.write_disagreements: INSERT ... SELECT), and a label's move reads it
narrowed to one item (`item_row`, review.moves), so the two never disagree on an item.
"""

from __future__ import annotations

from django.db import connection

from evaluation.metrics import votes_sql
from evaluation.review import order
from evaluation.runs.models import Run, Verdict

# Every (answer, criterion) the chosen run of its answer judged, with its vote counts, its
# human labels counted and whether it was adjudicated; only the disagreeing ones are queued,
# each with its sort key (review.order: split first, the most even split first, then the
# most contradicting human labels; then answer, criterion in page order). The chosen run of
# an answer is the highest-ranked run that judged it (`rank`: the caller's order). {answer},
# {item} and {criterion} narrow it to one item (`item_row`): the chosen run is
# still the answer's, over all its criteria.
#
# In two parts: the judges' side (`_JUDGED`: the votes, which labels never move) and the
# humans' (`_LABELLED`: labels and adjudications, read from `{chosen}`). The whole fill
# may count the first into a temporary table before it holds the review counters
# (`judged_sql`, review.kept), so that labels wait only for the second.
_JUDGED = """
item AS (
  SELECT v.run_id, v.answer_id, v.criterion_id,
         sum(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END) AS p,
         sum(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END) AS f,
         sum(CASE WHEN v.outcome IN ('unparseable', 'error') THEN 1 ELSE 0 END) AS i,
         {rank} AS run_rank
  FROM evaluation_verdict v WHERE v.run_id IN ({runs}){answer}
  GROUP BY v.run_id, v.answer_id, v.criterion_id
),
chosen AS (
  SELECT item.*, {outcome} AS outcome,
         max(run_rank) OVER (PARTITION BY answer_id) AS best
  FROM item
)
"""
_LABELLED = """
lab AS (
  SELECT l.answer_id, l.criterion_id,
         sum(CASE WHEN l.label = 'pass' THEN 1 ELSE 0 END) AS lp,
         sum(CASE WHEN l.label = 'fail' THEN 1 ELSE 0 END) AS lf
  FROM evaluation_humanlabel l
  JOIN evaluation_answer a ON a.id = l.answer_id
  JOIN annotation_query q ON q.id = a.query_id
  WHERE q.dataset_id = %(dataset)s{item}
  GROUP BY l.answer_id, l.criterion_id
),
facts AS (
  SELECT x.answer_id, x.criterion_id, x.run_id, x.outcome, x.p, x.f, x.i,
         coalesce(lab.lp, 0) AS lp, coalesce(lab.lf, 0) AS lf,
         CASE WHEN d.id IS NULL THEN 0 ELSE 1 END AS adjudicated,
         CASE WHEN x.p > 0 AND x.f > 0 THEN 1 ELSE 0 END AS split,
         CASE x.outcome WHEN 'pass' THEN coalesce(lab.lf, 0)
                        WHEN 'fail' THEN coalesce(lab.lp, 0) ELSE 0 END AS contradicting,
         c.checklist_id, c.position
  FROM {chosen} x
  JOIN annotation_criterion c ON c.id = x.criterion_id
  LEFT JOIN lab ON lab.answer_id = x.answer_id AND lab.criterion_id = x.criterion_id
  LEFT JOIN evaluation_adjudication d
    ON d.answer_id = x.answer_id AND d.criterion_id = x.criterion_id
  WHERE x.run_rank = x.best{criterion}
)
"""
_SORT_KEY = order.disagreement_key_sql(
    split="split", passes="p", fails="f", contradicting="contradicting", answer="answer_id",
    checklist="checklist_id", position="position", criterion="criterion_id",
)  # fmt: skip
# The columns of a queued item, in KeptQueueRow's order below.
QUEUED = (
    f"{_SORT_KEY}, adjudicated = 1, answer_id, criterion_id, run_id, outcome, p, f, i, lp, lf, "
    "0 FROM facts WHERE split = 1 OR contradicting > 0"
)
ROW_FIELDS = (
    "sort_key", "adjudicated", "answer_id", "criterion_id", "run_id", "outcome", "passes",
    "fails", "invalid", "human_pass", "human_fail", "labels",
)  # fmt: skip


def facts_sql(ranked: list[Run], *, one_item: bool, judged: str | None = None) -> str:
    """The facts of every judged item of the ranked runs (or of `%(answer)s`·
    `%(criterion)s` alone), up to the list of queued columns. `judged`: a table holding
    `judged_sql`'s rows for the same runs, read instead of counting the votes here."""
    labelled = _LABELLED.format(
        chosen=judged or "chosen",
        item=" AND l.answer_id = %(answer)s AND l.criterion_id = %(criterion)s" if one_item else "",
        criterion=" AND x.criterion_id = %(criterion)s" if one_item else "",
    )  # fmt: skip
    if judged is not None:
        return f"WITH {labelled}"
    return f"WITH {_judged(ranked, one_item=one_item)}, {labelled}"


def judged_sql(ranked: list[Run]) -> str:
    """The judges' side of every item of the ranked runs, in its answer's chosen run: what
    `facts_sql(..., judged=table)` reads from a table (no parameter: it does not depend on
    the dataset's labels)."""
    judged = _judged(ranked, one_item=False)  # only integers and our own expressions
    return f"WITH {judged} SELECT * FROM chosen WHERE run_rank = best"  # noqa: S608


def _judged(ranked: list[Run], *, one_item: bool) -> str:
    rank = (
        "CASE v.run_id " + " ".join(f"WHEN {r.pk} THEN {n}" for n, r in enumerate(ranked)) + " END"
    )
    methods = " ".join(
        f"WHEN {r.pk} THEN {votes_sql.panel_outcome(r.panel_method, r.panel_threshold, 'p', 'f')}"
        for r in ranked
    )
    return _JUDGED.format(
        rank=rank, outcome=f"CASE run_id {methods} END",
        runs=", ".join(str(r.pk) for r in ranked),
        answer=" AND v.answer_id = %(answer)s" if one_item else "",
    )  # fmt: skip  # only integers and our own expressions go into the text


def item_row(dataset_id: int, ranked: list[Run], answer_id: int, criterion_id: int) -> dict | None:
    """The queue row of one item as the fill would write it now (KeptQueueRow's fields),
    or None when it is not queued (its judges agree and no human contradicts them): the
    same statement as the fill, narrowed to the item and to the answer's chosen run
    (review.moves). Narrowed to the one run, its plan and its reads do not grow with the
    runs ranked: over 30 nightly runs the statement read the answer's 3,600 verdicts and
    took 12 ms to plan, in every label's transaction."""
    chosen = chosen_run(ranked, answer_id)
    if chosen is None:  # no ranked run judged the answer: nothing of it is queued
        return None
    sql = f"{facts_sql([chosen], one_item=True)} SELECT {QUEUED}"
    with connection.cursor() as cursor:
        cursor.execute(sql, {"dataset": dataset_id, "answer": answer_id, "criterion": criterion_id})
        found = cursor.fetchone()
    if found is None:
        return None
    row = dict(zip(ROW_FIELDS, found, strict=True))
    row["adjudicated"] = bool(row["adjudicated"])
    return row


def chosen_run(ranked: list[Run], answer_id: int) -> Run | None:
    """The fill's chosen run of an answer: the highest-ranked run that judged it (`best`
    in the statement above). Probed from the highest rank down, one indexed EXISTS each:
    one probe when the newest run judged the answer, as nightly runs do."""
    for run in reversed(ranked):
        if Verdict.objects.filter(run_id=run.pk, answer_id=answer_id).exists():
            return run
    return None
