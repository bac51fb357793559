"""A dataset's cross-evaluation figures counted in the database and kept in the figure cache:
the mean overlap with its interval, the histogram, the shared core and long tail, and one
row per query. The dataset page (and the analytics reference line) read this instead of
loading every checklist, criterion and verdict (`selectors.dataset_overlap`, kept for the
API's cells and the CSV export).

One statement derives the verdict on every (perfect answer, criterion) exactly as
`selectors._outcomes` does (the chosen run per query, votes counted with that run's method
by `evaluation.metrics.votes_sql`, an adjudication deciding; or reviewers' majority label), then
counts pass / fail / undecided per ordered pair of checklists of a query and per
criterion over the other experts' perfect answers. From those counts the figures are
computed by the same functions as before (`metrics.overlap`), so they are identical
(tests/evaluation/cross_evaluation/test_counted.py compares both paths).

Cached under everything they depend on: the source, every cross-evaluation run's state
(a running run is never cached), the dataset's review revision less the labels and
adjudications of system answers, which no figure here reads (criteria, queries, perfect
answers' adjudications: the `cross_evaluation` counter; their labels, read by the source
"human" only: the `perfect_labels` counter) and a fingerprint of the submitted checklists
and perfect answers (count, ids, last change).

Never counted in a reader's request when cold (evaluation.kept.cold): the reader queues the
dataset's refresh of the source (`refresh_group`) and is served the figures of an earlier
state, marked updating, or the placeholder (`placeholder`: every figure empty).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import Count, Max, Sum

from annotation.models import Checklist, Dataset
from evaluation.answers.models import Answer
from evaluation.cross_evaluation.sources import Source, UnknownSource, cross_evaluation_runs
from evaluation.kept import cold, readers
from evaluation.metrics import overlap as om
from evaluation.metrics import votes_sql
from evaluation.runs.models import Run

SHOWN = 50  # criteria of the shared core and of the long tail listed on the page
PAGE = 50  # queries per page

# The submitted checklists of the dataset (cl), their perfect answers (pa: cq is the
# checklist's query, aq the answer's), their active scored criteria (crit).
_BASE = """
cl AS (
  SELECT c.id, c.query_id FROM annotation_checklist c
  JOIN annotation_query q ON q.id = c.query_id
  WHERE q.dataset_id = %(dataset)s AND c.status = 'submitted'
),
pa AS (
  SELECT a.id AS answer_id, a.checklist_id, cl.query_id AS cq, a.query_id AS aq, a.updated_at
  FROM evaluation_answer a JOIN cl ON cl.id = a.checklist_id
),
crit AS (
  SELECT k.id, k.checklist_id FROM annotation_criterion k JOIN cl ON cl.id = k.checklist_id
  WHERE k.archived_at IS NULL AND k.scoring_enabled
)"""

# The run chosen per query (by the answer's query, as selectors._outcomes).
_CHOSEN_LATEST = """
graded AS (
  SELECT DISTINCT pa.aq AS query_id, v.run_id FROM evaluation_verdict v
  JOIN pa ON pa.answer_id = v.answer_id
  JOIN evaluation_run r ON r.id = v.run_id
  WHERE r.dataset_id = %(dataset)s AND r.kind = 'cross_evaluation' AND v.run_id IN ({runs})
),
chosen AS (
  SELECT query_id, run_id FROM (
    SELECT g.query_id, g.run_id,
           row_number() OVER (PARTITION BY g.query_id ORDER BY r.created_at DESC, r.id DESC) AS n
    FROM graded g JOIN evaluation_run r ON r.id = g.run_id
  ) ranked WHERE n = 1
)"""

_CHOSEN_RUN = """
chosen AS (SELECT DISTINCT pa.aq AS query_id, %(run)s AS run_id FROM pa)"""

# Votes per item of the chosen run (counted from the index on (run, answer, criterion)
# INCLUDE (outcome, judge): {runs} lists the dataset's cross-evaluation runs), the verdict,
# and items decided by an adjudication alone; the newest vote per perfect answer (u).
_RUN_OUTCOMES = """
iv AS (
  SELECT v.answer_id, v.criterion_id, v.run_id,
         sum(CASE WHEN v.outcome = 'pass' THEN 1 ELSE 0 END) AS p,
         sum(CASE WHEN v.outcome = 'fail' THEN 1 ELSE 0 END) AS f
  FROM evaluation_verdict v
  JOIN pa ON pa.answer_id = v.answer_id
  JOIN chosen ch ON ch.query_id = pa.aq AND ch.run_id = v.run_id
  WHERE v.run_id IN ({runs})
  GROUP BY v.answer_id, v.criterion_id, v.run_id
),
u AS (
  SELECT v.answer_id, max(v.updated_at) AS u
  FROM evaluation_verdict v
  JOIN pa ON pa.answer_id = v.answer_id
  JOIN chosen ch ON ch.query_id = pa.aq AND ch.run_id = v.run_id
  WHERE v.run_id IN ({runs})
  GROUP BY v.answer_id
),
oc AS (
  SELECT iv.answer_id, iv.criterion_id, coalesce(d.label, {panel}) AS outcome
  FROM iv LEFT JOIN evaluation_adjudication d
    ON d.answer_id = iv.answer_id AND d.criterion_id = iv.criterion_id
  UNION ALL
  SELECT d.answer_id, d.criterion_id, d.label FROM evaluation_adjudication d
  JOIN pa ON pa.answer_id = d.answer_id
  WHERE NOT EXISTS (
    SELECT 1 FROM iv WHERE iv.answer_id = d.answer_id AND iv.criterion_id = d.criterion_id
  )
)"""

_HUMAN_OUTCOMES = """
hl AS (
  SELECT h.answer_id, h.criterion_id,
         sum(CASE WHEN h.label = 'pass' THEN 1 ELSE 0 END) AS p,
         sum(CASE WHEN h.label = 'fail' THEN 1 ELSE 0 END) AS f
  FROM evaluation_humanlabel h JOIN pa ON pa.answer_id = h.answer_id
  GROUP BY h.answer_id, h.criterion_id
),
oc AS (
  SELECT hl.answer_id, hl.criterion_id,
         coalesce(d.label, {majority}, 'undecided') AS outcome
  FROM hl LEFT JOIN evaluation_adjudication d
    ON d.answer_id = hl.answer_id AND d.criterion_id = hl.criterion_id
  UNION ALL
  SELECT d.answer_id, d.criterion_id, d.label FROM evaluation_adjudication d
  JOIN pa ON pa.answer_id = d.answer_id
  WHERE NOT EXISTS (
    SELECT 1 FROM hl WHERE hl.answer_id = d.answer_id AND hl.criterion_id = d.criterion_id
  )
)"""

# Decided verdicts counted per (A's checklist, B) and per (criterion of B, B) over the other
# experts' perfect answers of the query; criteria per checklist (nk); perfect answers of
# the other experts of each checklist's query (nb). Then the rows:
# ('p', query, A, B, total, passed, failed) per cell of a matrix (A has a perfect answer;
# B any submitted checklist of the query, with or without criteria);
# ('c', criterion, B, 0, others, passed, failed) per criterion decided at least once by the
# other experts' perfect answers; ('q', query, checklists, perfect answers, 0, 0, 0).
_COUNTS = """,
decided AS (
  SELECT pa.checklist_id AS a, pa.cq, k.id AS criterion_id, k.checklist_id AS b,
         CASE WHEN oc.outcome = 'pass' THEN 1 ELSE 0 END AS p,
         CASE WHEN oc.outcome = 'fail' THEN 1 ELSE 0 END AS f
  FROM oc JOIN pa ON pa.answer_id = oc.answer_id
  JOIN crit k ON k.id = oc.criterion_id
  WHERE oc.outcome IN ('pass', 'fail')
),
cells AS (SELECT a, b, sum(p) AS p, sum(f) AS f FROM decided GROUP BY a, b),
nk AS (SELECT checklist_id, count(*) AS n FROM crit GROUP BY checklist_id),
nb AS (
  SELECT b.id, b.query_id, count(pa.answer_id) AS n FROM cl b
  JOIN pa ON pa.cq = b.query_id AND pa.checklist_id <> b.id GROUP BY b.id, b.query_id
)
SELECT 'p', pa.cq, pa.checklist_id, b.id, coalesce(nk.n, 0), coalesce(c.p, 0), coalesce(c.f, 0)
FROM pa JOIN cl b ON b.query_id = pa.cq
LEFT JOIN nk ON nk.checklist_id = b.id
LEFT JOIN cells c ON c.a = pa.checklist_id AND c.b = b.id
UNION ALL
SELECT 'c', d.criterion_id, d.b, 0, nb.n, sum(d.p), sum(d.f)
FROM decided d JOIN nb ON nb.id = d.b AND nb.query_id = d.cq
WHERE d.a <> d.b
GROUP BY d.criterion_id, d.b, nb.n
UNION ALL
SELECT 'q', cl.query_id, count(cl.id), count(pa.answer_id), 0, 0, 0
FROM cl LEFT JOIN pa ON pa.checklist_id = cl.id
GROUP BY cl.query_id
"""

# ('r', query, run, 0, 0, 0, 0) per query's run; ('s', checklist, 1, ...) per perfect answer
# edited after its newest verdict in that run.
_RUNS = """
UNION ALL
SELECT 'r', query_id, run_id, 0, 0, 0, 0 FROM chosen
UNION ALL
SELECT 's', pa.checklist_id, 1, 0, 0, 0, 0 FROM pa JOIN u ON u.answer_id = pa.answer_id
WHERE pa.updated_at > u.u
"""


def _panel_case(runs: list[Run]) -> str:
    """The chosen run's verdict from iv.p and iv.f, with each run's own method (ids and
    the rules' constants are ours: no user text reaches the statement)."""
    if not runs:
        return "'undecided'"
    cases = " ".join(
        f"WHEN {int(run.pk)} THEN "
        f"{votes_sql.panel_outcome(run.panel_method, run.panel_threshold, 'iv.p', 'iv.f')}"
        for run in runs
    )
    return f"CASE iv.run_id {cases} ELSE 'undecided' END"


def _statement(source: Source, runs: list[Run]) -> str:
    if source.kind == "human":
        majority = votes_sql.majority_label("hl.p", "hl.f")
        return f"WITH {_BASE}, {_HUMAN_OUTCOMES.format(majority=majority)} {_COUNTS}"
    chosen = _CHOSEN_LATEST if source.kind == "latest" else _CHOSEN_RUN
    ids = ", ".join(str(int(run.pk)) for run in runs) or "NULL"
    outcomes = _RUN_OUTCOMES.format(panel=_panel_case(runs), runs=ids)
    chosen = chosen.format(runs=ids)
    return f"WITH {_BASE}, {chosen}, {outcomes} {_COUNTS} {_RUNS}"


def _rows(dataset: Dataset, source: Source) -> Iterator[tuple]:
    """The statement's rows, one at a time: at the full preset they are 360,000 (one per
    criterion and other checklist), and a list of them all took a web worker past 400 MB."""
    runs = list(cross_evaluation_runs(dataset))
    if source.kind == "run" and source.run_id not in {r.pk for r in runs}:
        raise UnknownSource(f"Run {source.run_id} is not a cross-evaluation of this dataset.")
    sql = _statement(source, runs)
    params = {"dataset": dataset.pk, "run": source.run_id}
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute(sql, params)
            yield from cursor
            return
        # As the agreement counts (evaluation.agreement.cells): the CTEs' sizes are not
        # estimated, and nested loops over them take minutes; hash joins take a second.
        with transaction.atomic():
            cursor.execute("SET LOCAL enable_nestloop = off")
            cursor.execute("SET LOCAL work_mem = '64MB'")
            # The misestimated sizes make the plan look costly enough for JIT compilation,
            # which takes longer than the statement itself.
            cursor.execute("SET LOCAL jit = off")
            cursor.execute(sql, params)
            yield from cursor


def compute(dataset: Dataset, source: Source) -> dict:
    """The figures as JSON (what the cache keeps)."""
    return _shaped(_rows(dataset, source))


def placeholder() -> dict:
    """The figures of nothing counted yet: what a reader gets while they are counted in the
    background (no mean, no interval, empty histogram and lists)."""
    return _shaped(())


def _shaped(found: Iterable[tuple]) -> dict:
    pairs: dict[int, list[om.PairOverlap]] = defaultdict(list)
    coverage: list[om.CriterionCoverage] = []
    sizes: dict[int, tuple[int, int]] = {}
    run_of: dict[int, int] = {}
    stale: set[int] = set()
    for kind, key, a, b, total, passed, failed in found:
        if kind == "p":
            passed, failed = int(passed), int(failed)
            pair = om.PairOverlap(a, b, passed, failed, int(total) - passed - failed)
            pairs[key].append(pair)
        elif kind == "c":
            passed, failed = int(passed), int(failed)
            coverage.append(
                om.CriterionCoverage(key, a, passed, passed + failed, int(total) - passed - failed)
            )
        elif kind == "q":
            sizes[key] = (int(a), int(b))
        elif kind == "r":
            run_of[key] = a
        else:
            stale.add(key)
    stale_queries = _stale_queries(stale)
    ordered = {q: [p for p in pairs.get(q, ()) if not p.is_self] for q in sorted(sizes)}
    interval = om.mean_overlap(ordered)
    core, tail = om.core_and_tail(coverage)
    queries = []
    for query_id, (n_checklists, n_answers) in sorted(sizes.items()):
        mean = om.mean_overlap({query_id: ordered[query_id]})
        queries.append(
            [query_id, n_checklists, n_answers, mean.n_pairs, len(ordered[query_id]),
             mean.mean, run_of.get(query_id), query_id in stale_queries]
        )  # fmt: skip
    values = [p.overlap for q in ordered.values() for p in q if p.overlap is not None]
    return {
        "interval": [interval.mean, interval.low, interval.high, interval.n_pairs,
                     interval.n_queries, interval.method],
        "histogram": [[b.low, b.high, b.count] for b in om.histogram(values)],
        "core": [_coverage_json(c) for c in core[:SHOWN]],
        "core_count": len(core),
        "tail": [_coverage_json(c) for c in tail[:SHOWN]],
        "tail_count": len(tail),
        "queries": queries,
    }  # fmt: skip


def _coverage_json(c: om.CriterionCoverage) -> list:
    return [c.criterion, c.checklist, c.covered, c.decided, c.undecided]


def _stale_queries(checklists: set[int]) -> set[int]:
    if not checklists:
        return set()
    return set(Checklist.objects.filter(pk__in=checklists).values_list("query_id", flat=True))


def _state(dataset: Dataset, source: Source) -> readers.State | None:
    """Everything the figures depend on, or None while a cross-evaluation runs."""
    runs = list(cross_evaluation_runs(dataset))
    if any(not run.ended for run in runs):
        return None
    checklists = Checklist.objects.filter(
        query__dataset=dataset, status=Checklist.Status.SUBMITTED
    ).aggregate(n=Count("id"), ids=Sum("id"), last=Max("updated_at"))
    answers = Answer.objects.filter(
        checklist__query__dataset=dataset, checklist__status=Checklist.Status.SUBMITTED
    ).aggregate(n=Count("id"), ids=Sum("id"), last=Max("updated_at"))
    figure = (
        readers.CROSS_EVALUATION_FROM_LABELS if source.kind == "human" else readers.CROSS_EVALUATION
    )
    return readers.state(
        dataset.pk, figure, runs=runs,
        part=f"{source.kind}-{source.run_id or 0}",
        facts=[*checklists.values(), *answers.values()],
    )  # fmt: skip


def refresh_group(source: Source) -> str:
    """The dataset's refresh group that counts the figures of `source` in the background
    ("cross-evaluation.latest", "cross-evaluation.run:12"; `source_of_group` reads it)."""
    return f"{readers.CROSS_EVALUATION.kind}.{source}"


def source_of_group(group: str) -> Source | None:
    """The source of a cross-evaluation refresh group; None for another group."""
    kind, dot, rest = group.partition(".")
    if kind != readers.CROSS_EVALUATION.kind or not dot:
        return None
    return Source.parse(rest)


def served(dataset: Dataset, source: Source) -> tuple[dict, cold.Served | None]:
    """The figures as a page gets them: compute(), kept while nothing it depends on has
    changed; cold, under the rule (evaluation.kept.cold.served): an earlier state's, or the
    placeholder, with their refresh queued. The second item says which (None while a
    cross-evaluation runs: then counted for this request, as always)."""
    state = _state(dataset, source)
    if state is None:
        return compute(dataset, source), None
    found = cold.served(state, refresh_group(source), lambda: compute(dataset, source))
    return (found.figures if found.figures is not None else placeholder()), found


def figures(dataset: Dataset, source: Source) -> dict:
    """The figures alone (`served`): the placeholder's while they are counted."""
    return served(dataset, source)[0]


@dataclass(frozen=True)
class QueryRow:
    query_id: int
    checklists: int
    answers: int
    n_pairs: int  # pairs with a decided overlap
    pairs: int  # ordered pairs A ≠ B with a perfect answer
    mean: float | None
    run_id: int | None
    stale: bool


def interval_of(data: dict) -> om.Interval:
    return om.Interval(*data["interval"])


def histogram_of(data: dict) -> list[om.Bin]:
    return [om.Bin(*b) for b in data["histogram"]]


def coverage_of(rows: list[list]) -> list[om.CriterionCoverage]:
    return [om.CriterionCoverage(*row) for row in rows]


def query_page(data: dict, after: int | None) -> tuple[list[QueryRow], int | None]:
    """The queries after `after` (a query id; keyset), and the key of the next page."""
    size = PAGE
    rows = [QueryRow(*row) for row in data["queries"] if after is None or row[0] > after]
    page = rows[:size]
    return page, (page[-1].query_id if len(rows) > size else None)
