"""A run's analytics figures kept between requests (issue 12, item 10: each page in 500 ms
at 200,000 labelled items).

Computing the figures means reading one row per item and drawing a few hundred bootstrap
intervals: seconds at 200,000 items. So they are computed once per state of what they
depend on and kept in the figure cache (`evaluation.kept.figures`, one database row per
part), in parts:

- `page(run, edges)`: what the analytics page and API show (system scores by group,
  judge-only / human-only / PPI++ scores, panel options, saturated queries, the
  complexity curve with the human line); `bucket_rows(run, key)`: each bucket's 500
  lowest (answer, checklist) rows, for the drill-down;
- `queries(run)`: each system's per-query scores, for run comparison and the dataset
  export's saturated queries (regression alerts still compute theirs, in the worker);
- `health(run)`: criterion health, flagged first (and `health_page`: the first rows per
  flag, for the page).

The key's state (`state`) holds the run's state (status, attempt, finish time: what moves
whenever its verdicts may have changed), the dataset's review revision (every label,
adjudication, criterion, category or name change bumps it), the states of the dataset's
cross-evaluation runs (the human line) and the bucket edges. A change to any of them makes
a new key. Each row keeps the state it was computed for (`_wrap`), and when.

Requests never compute (`served`, stale-while-revalidate): the part kept for the current
state is served fresh; else the part kept for an earlier state (same bucket edges) is
served marked updating, with its time and review revision; else nothing (a "computing"
placeholder). Either way one refresh per run and group is queued in Celery
(`evaluation.kept.refresh`: a single-flight marker; the task is `refresh_group`: every
default part from one load, `warm`, or the page and bucket rows of custom edges). The page
polls `is_fresh` and reloads once the fresh part is kept. `warm(run)` also runs when a run
ends (a task queued by `run_ended`), so the first reader usually finds the figures. The
compute-if-missing readers (`page`, `queries`, `health`, …) remain for the worker, the
dataset export (its own read-only snapshot) and tests.

The figures are the selectors' own (`evaluation.analytics.selectors`), rebuilt from JSON
into the same dataclasses: a cached page shows exactly what a computed one does
(tests/evaluation/analytics/test_figures.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Case, Q, Value, When
from django.utils import timezone

from evaluation.analytics import selectors as sel
from evaluation.analytics import summaries
from evaluation.kept import figures as kept_figures
from evaluation.kept import readers, refresh
from evaluation.kept.readers import State
from evaluation.metrics import analytics as am
from evaluation.metrics.agreement import Agreement, Kappa
from evaluation.metrics.calibration import PanelOption
from evaluation.metrics.overlap import Interval
from evaluation.runs import scores
from evaluation.runs.models import Run
from evaluation.runs.selectors import choose_run, runs_of_system_answers

VERSION = 8  # bump when what is stored changes shape or meaning (8: a query counts once)
BUCKET_ROWS = 500  # rows kept per bucket for the drill-down


# -- the parts, as JSON and back -------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    items: int
    adjudicated: int
    labelled: int
    cells: list[summaries.Cell]
    calibrated: list[summaries.Calibrated]
    panels: list[PanelOption]
    judges: list[summaries.JudgeAgreement]  # each judge and the panel vs people, by kind, source
    saturated: list[int]
    curve: summaries.ComplexityCurve
    # PPI++'s scale: "items" (every checklist scored by its share, no penalty) or "answers"
    # (each answer's value under its checklists' strategies: summaries.calibrated_scores).
    scale: str = "items"

    @property
    def ppi_labelled(self) -> int:
        """Labelled items PPI++ used, over every system (fewer than `labelled` when the
        least-certain draw leaves some out)."""
        return sum(c.ppi.labelled for c in self.calibrated)


@dataclass(frozen=True)
class Queries:
    systems: list[tuple[int, str]]
    # system id (None: every system) -> query -> (score, an answer id to link to)
    scores: dict[int | None, dict[int, tuple[float, int]]]

    def of(self, system_id: int | None) -> dict[int, tuple[float, int]]:
        return self.scores.get(system_id, {})


def _estimate(d: dict) -> am.Estimate:
    return am.Estimate(**d)


def _bucket(d: dict) -> am.Bucket:
    return am.Bucket(d["low"], d["high"])


def _panel_json(o: PanelOption) -> dict:
    return {
        "judges": list(o.judges),
        "method": o.method,
        "n": o.agreement.n,
        "agree": o.agreement.agree,
        "percent": o.agreement.percent,
        "kappa": asdict(o.agreement.kappa),
        "undecided": o.undecided,
        "cost": None if o.cost is None else str(o.cost),
    }


def _panel(d: dict) -> PanelOption:
    # The confusion matrix is not kept: no page or API answer shows it.
    agreement = Agreement(d["n"], d["agree"], d["percent"], Kappa(**d["kappa"]), None)
    cost = None if d["cost"] is None else Decimal(d["cost"])
    return PanelOption(tuple(d["judges"]), d["method"], agreement, d["undecided"], cost)


def _calibrated(d: dict) -> summaries.Calibrated:
    return summaries.Calibrated(
        d["system_id"],
        d["system"],
        _estimate(d["judge_only"]),
        _estimate(d["human_only"]),
        am.PPIEstimate(**d["ppi"]),
        d["labels_for_5_points"],
    )


def page_json(data: summaries.RunData, human: Interval) -> dict:
    cells = summaries.system_scores(data)
    curve = sel.complexity_curve(data, cells, human=human)
    labelled = summaries.calibration_items(data)  # one read for the panels and the judges
    return {
        "items": data.item_count,
        "adjudicated": data.adjudicated,
        "labelled": data.labelled,
        "systems": [list(s) for s in summaries.systems_of(data)],
        "cells": [[c.system_id, c.system, c.group, c.value, c.estimate.as_dict()] for c in cells],
        "calibrated": [c.as_dict() for c in sel.calibrated_scores(data)],
        "panels": [_panel_json(o) for o in sel.panel_calibration(data, labelled)],
        "judges": [
            [a.rater, a.group, a.value, a.agreement.n, a.agreement.agree, a.agreement.percent,
             asdict(a.agreement.kappa)]
            for a in summaries.judge_agreement(data, labelled)
        ],
        "saturated": summaries.saturated(data),
        "buckets": [{"low": b.low, "high": b.high} for b in data.buckets],
        "checklists": curve.checklists,
        "human": asdict(human),
        "scale": "items" if data.answer_values is None else "answers",
    }  # fmt: skip


def page_from_json(d: dict) -> Page:
    cells = [summaries.Cell(s, name, g, v, _estimate(e)) for s, name, g, v, e in d["cells"]]
    buckets = tuple(_bucket(b) for b in d["buckets"])
    found = {(c.system_id, c.value): c for c in cells if c.group == "bucket"}
    systems = sorted((name, system_id) for system_id, name in d["systems"])
    empty = am.Estimate(None, None, None, 0, 0, "")
    lines = tuple(
        summaries.CurveLine(
            system_id,
            name,
            tuple(
                summaries.CurvePoint(b, found[system_id, b.key].estimate
                               if (system_id, b.key) in found else empty)
                for b in buckets
            ),
        )
        for name, system_id in systems
    )  # fmt: skip
    curve = summaries.ComplexityCurve(buckets, lines, Interval(**d["human"]), d["checklists"])
    return Page(
        d["items"],
        d["adjudicated"],
        d["labelled"],
        cells,
        [_calibrated(c) for c in d["calibrated"]],
        [_panel(o) for o in d["panels"]],
        [
            summaries.JudgeAgreement(
                rater, group, value, Agreement(n, agree, pct, Kappa(**k), None)
            )
            for rater, group, value, n, agree, pct, k in d["judges"]
        ],
        d["saturated"],
        curve,
        d.get("scale", "items"),
    )


def buckets_json(data: summaries.RunData) -> dict[str, list[list]]:
    """Each bucket's BUCKET_ROWS lowest (answer, checklist) rows, for the drill-down."""
    return {
        key: [
            [
                r.answer_id,
                r.query_id,
                r.system,
                r.checklist_id,
                r.criteria,
                r.passed,
                r.decided,
                r.value,
            ]
            for r in rows
        ]
        for key, rows in summaries.every_bucket_rows(data, limit=BUCKET_ROWS).items()
    }


def queries_json(data: summaries.RunData) -> dict:
    systems = summaries.systems_of(data)
    scores = {"all": summaries.query_scores(data, None)}
    scores.update({str(s): summaries.query_scores(data, s) for s, _ in systems})
    return {
        "systems": [list(s) for s in systems],
        "scores": {k: [[q, s, a] for q, (s, a) in v.items()] for k, v in scores.items()},
    }


def queries_from_json(d: dict) -> Queries:
    return Queries(
        [(s, name) for s, name in d["systems"]],
        {
            (None if k == "all" else int(k)): {q: (s, a) for q, s, a in rows}
            for k, rows in d["scores"].items()
        },
    )


HEALTH_FIELDS = ("passed", "failed", "split", "judged", "compared", "disagreed",
                 "systems_passing", "systems")  # fmt: skip


def health_json(data: summaries.RunData) -> list[list]:
    """Flagged first (the selectors' order): [criterion, flags, counts...] per criterion."""
    return [
        [h.criterion, list(h.flags), *(getattr(h.items, f) for f in HEALTH_FIELDS)]
        for h in summaries.criterion_health(data)
    ]


def health_from_json(rows: list[list]) -> list[am.CriterionHealth]:
    out = []
    for criterion, flags, *counts in rows:
        items = am.CriterionItems(criterion, *counts)
        decided = items.passed + items.failed
        out.append(
            am.CriterionHealth(
                criterion,
                tuple(flags),
                items.passed / decided if decided else None,
                items.split / items.judged if items.judged else None,
                items.disagreed / items.compared if items.compared else None,
                items,
            )
        )
    return out


# -- the cache ----------------------------------------------------------------------------------


def state(run: Run, edges: tuple[int, ...] = am.DEFAULT_EDGES) -> State:
    """Everything the figures depend on. Two queries (three when the dataset is not loaded):
    the run's own state, the review revision, the cross-evaluation runs (the human line),
    and under the "least certain" label policy the finished runs too, whose votes make the
    labelling queue's draw that PPI++ undoes (evaluation.review.sampling). Kept in the
    run's slots (`_kept_state`)."""
    dataset = run.dataset
    weighted = dataset.label_policy == "uncertain"
    counted = Q(kind=Run.Kind.CROSS_EVALUATION) | (Q(status=Run.Status.DONE) if weighted else Q())
    others = (
        Run.objects.filter(counted, dataset_id=run.dataset_id)
        .order_by("pk")
        .only("pk", "status", "attempt", "finished_at", "snapshot")
    )
    # The dataset's strategy and undecided setting score every checklist that has none of
    # its own: a change of either is a new state (a checklist's own moves the counters).
    facts = [
        f"v{VERSION}", f"{dataset.label_policy}.{dataset.label_share!r}", edges,
        f"{dataset.scoring}.{dataset.undecided}.{dataset.blend_weight!r}",
    ]  # fmt: skip
    return readers.state(run.dataset_id, readers.ANALYTICS, run=run, runs=others, facts=facts)


def _slots(edges: tuple[int, ...]) -> dict[str, str]:
    """Each part's slot among the run's kept figures: the page and the bucket rows of
    custom edges have their own (one set of custom edges at a time)."""
    custom = "" if edges == am.DEFAULT_EDGES else "-edges"
    return {
        "page": f"page{custom}",
        "buckets": f"buckets{custom}",
        "queries": "queries",
        "health": "health",
        "health-top": "health-top",
    }


def _kept_state(run: Run, part: str, edges: tuple[int, ...]) -> State:
    return state(run, edges).for_part(_slots(edges)[part])


HEALTH_FLAGS = ("never passed", "always passed", "split", "disagrees")
HEALTH_SHOWN = 200  # rows of the criterion-health page, per flag


def health_top(rows: list[list]) -> dict[str, dict]:
    """The criterion-health page's rows: for no flag and for each flag, how many criteria
    and the first HEALTH_SHOWN (reading 40,000 kept rows per request would cost seconds)."""
    out = {}
    for flag in ("", *HEALTH_FLAGS):
        chosen = [r for r in rows if flag in r[1]] if flag else rows
        out[flag] = {"total": len(chosen), "rows": chosen[:HEALTH_SHOWN]}
    return out


def _compute(part: str, data: summaries.RunData) -> Any:
    if part == "page":
        return page_json(data, sel.dataset_mean_overlap(data.run.dataset))
    if part == "queries":
        return queries_json(data)
    if part == "buckets":
        return buckets_json(data)
    if part == "health-top":
        return health_top(health_json(data))
    return health_json(data)


# Each row keeps the state it was computed for (its digest, the same for every part) and
# its bucket edges, so that a reader who finds the figures of an earlier state can serve
# them saying which (stale-while-revalidate, `served`), if they are of the same edges.
def _wrap(state_: State, edges: tuple[int, ...], figures: Any, took: float = 0.0) -> dict:
    """The row's JSON: the figures, the state and bucket edges they were computed for, and
    how long the count of their group took (what the next refresh's spacing scales with:
    evaluation.kept.refresh.spacing)."""
    return {
        "v": VERSION, "state": state_.digest, "edges": list(edges), "figures": figures,
        "took": round(took, 3),
    }  # fmt: skip


def _store(
    state_: State, figures: Any, edges: tuple[int, ...] = am.DEFAULT_EDGES, took: float = 0.0
) -> None:
    kept_figures.store(state_, _wrap(state_, edges, figures, took))


@dataclass(frozen=True)
class Served:
    """A part as a request serves it: `figures` (None: never computed, being computed), and
    whether they are `fresh` (computed for the current state) or of an earlier state (the
    page says so and polls until the refresh queued in Celery has kept the fresh ones)."""

    figures: Any
    fresh: bool
    computed_at: datetime | None = None
    state: str = ""  # the digest of the state they were computed for
    revision: int | None = None  # the dataset's review revision the figures reflect
    # The refresh's last try failed and the next waits (refresh.fail): the page and the
    # API say so instead of "being computed".
    failure: refresh.Failure | None = None
    took: float = 0.0  # seconds the count of these figures took (0: not recorded)

    @property
    def updating(self) -> bool:
        return not self.fresh

    def facts(self) -> dict:
        """What the API answers carry about the state of the figures."""
        return {
            **refresh.facts(
                updating=self.updating, computed_at=self.computed_at, failure=self.failure
            ),
            "review_revision": self.revision,
        }

    def retry_after(self) -> int:
        """Seconds a client should wait before asking again (refresh.retry_after)."""
        return refresh.retry_after(self.failure)

    def with_figures(self, figures: Any) -> Served:
        return replace(self, figures=figures)


def _read(
    state_: State, *, edges: tuple[int, ...] = am.DEFAULT_EDGES, figures: bool = True
) -> Served:
    """The row kept for `state_` (fresh), else the latest kept in its slot for an earlier
    state with the same bucket edges (stale), else nothing. One query; `figures` False
    reads only the row's edges and time (the poll)."""
    rows = (
        kept_figures.slot(state_)
        .filter(cells__v=VERSION)
        .order_by(Case(When(key=state_.key, then=Value(0)), default=Value(1)), "-computed_at")
    )
    if not figures:
        polled = rows.values_list("key", "computed_at", "revision", "cells__edges", "cells__took")
        found = polled.first()
        if found is None or found[3] != list(edges):
            return Served(None, False)
        key, computed_at, revision, _, took = found
        return Served(None, key == state_.key, computed_at, revision=revision, took=took or 0.0)
    found = rows.values_list("key", "computed_at", "revision", "cells").first()
    if found is None:
        return Served(None, False)
    found_key, computed_at, revision, cells = found
    if cells["edges"] != list(edges):
        return Served(None, False)  # kept for other bucket edges: not these figures
    return Served(
        cells["figures"], found_key == state_.key, computed_at, cells["state"], revision,
        took=cells.get("took", 0.0),
    )  # fmt: skip


def _group(part: str, edges: tuple[int, ...]) -> str:
    return refresh.group_for(edges if part in ("page", "buckets") else am.DEFAULT_EDGES)


def _revalidate(run: Run, group: str, spaced: Served | None = None) -> bool:
    """Queue the group's refresh (once for every reader; when `spaced` gives the figures
    served, no sooner than the refresh spacing after they were computed, which grows with
    how long their count took); True when its figures have been computed meanwhile (an
    eager Celery runs the task inside the call)."""
    after, took = (spaced.computed_at, spaced.took) if spaced is not None else (None, 0.0)
    ensured = refresh.ensure(run.dataset_id, run.pk, group, after=after, took=took)
    return ensured and refresh.eager()


def _spaced_from(found: Served, state_: State) -> Served | None:
    """What the spacing of a refresh counts from (`refresh.ensure`'s `after` and `took`):
    the served figures when labels moved them (their review revision is behind), so that
    a team labelling without pause costs one refresh per spacing; None when the revision
    is the same, so that what else moved them (a cross-evaluation or a run that ended, a
    new label policy: one event, not a stream) refreshes them at once."""
    if found.revision is not None and found.revision == state_.revision:
        return None
    return found


def served(run: Run, part: str, edges: tuple[int, ...] = am.DEFAULT_EDGES) -> Served:
    """The part for a request: never computed here. Fresh when kept for the current state;
    else the figures of an earlier state (or none yet), a refresh being queued."""
    edges = tuple(edges)
    state_ = _kept_state(run, part, edges)
    found = _read(state_, edges=edges)
    if run.archived_at is not None:
        return _archived(found)
    if not found.fresh and _revalidate(run, _group(part, edges), _spaced_from(found, state_)):
        found = _read(state_, edges=edges)
    return _with_failure(found, [(run, _group(part, edges))])


def _archived(found: Served) -> Served:
    """An archived run's figures: the latest kept (when it was archived, or before), served
    as current, never refreshed: its verdicts are in a Parquet file, and a recount would
    find none (evaluation.archive). None kept (custom bucket edges never asked before): the
    page says so until the run is restored."""
    return replace(found, fresh=found.figures is not None)


def _with_failure(found: Served, refreshes: list[tuple[Run, str]]) -> Served:
    """`found`, with the failure of a refresh (run, group) that would freshen it, if any
    (a query per refresh, only when the figures are not fresh)."""
    if found.fresh:
        return found
    for run, group in refreshes:
        failed = refresh.failure(run.dataset_id, run.pk, group)
        if failed is not None:
            return replace(found, failure=failed)
    return found


def is_fresh(run: Run, part: str, edges: tuple[int, ...] = am.DEFAULT_EDGES) -> bool:
    """For the page's poll: are the part's figures kept for the current state? Reads no
    figures; queues a refresh when none is queued (the state moved again meanwhile, or the
    last refresh failed)."""
    edges = tuple(edges)
    state_ = _kept_state(run, part, edges)
    found = _read(state_, edges=edges, figures=False)
    if found.fresh:
        return True
    if run.archived_at is not None:
        return found.computed_at is not None  # kept when archived: its figures for good
    return _revalidate(run, _group(part, edges), _spaced_from(found, state_))


def default_kept(run: Run) -> bool:
    """Every part of the default group kept for the run's current state: what the warm-up
    asks before queueing the run's refresh (evaluation.analytics.warmup). Reads no figure
    and queues nothing: one query per part."""
    edges = am.DEFAULT_EDGES
    return all(
        _read(_kept_state(run, part, edges), edges=edges, figures=False).fresh
        for part in _slots(edges)
    )


def default_served(run: Run) -> bool:
    """Every part of the default group kept for the run's current state or an earlier one
    (its readers serve that one, marked updating, and queue the refresh): what the warm-up
    asks. One query per part."""
    edges = am.DEFAULT_EDGES
    return all(
        _read(_kept_state(run, part, edges), edges=edges, figures=False).computed_at is not None
        for part in _slots(edges)
    )


def _part(run: Run, part: str, edges: tuple[int, ...] = am.DEFAULT_EDGES) -> Any:
    """The part for the current state, computed here when it is not kept: for the worker
    and the dataset export, never for a request (`served`)."""
    edges = tuple(edges)
    state_ = _kept_state(run, part, edges)
    found = kept_figures.kept(state_)
    if found is not None:
        return found["figures"]
    value = _compute(part, sel.load_run(run, edges=edges, parts=_NEEDS.get(part, ())))
    _store(state_, value, edges)
    return value


# What each part needs loaded besides the scores (a miss of one part loads no more).
_NEEDS = {"page": (sel.LABELLED,), "health": (sel.HEALTH,), "health-top": (sel.HEALTH,)}


def kept(run: Run, part: str, edges: tuple[int, ...] = am.DEFAULT_EDGES) -> Any | None:
    """The part as kept for the run's current state, or None: never computed here."""
    edges = tuple(edges)
    found = kept_figures.kept(_kept_state(run, part, edges))
    return None if found is None else found["figures"]


def saturated_state(run: Run) -> State:
    """What the saturated queries are computed from: the run's query scores (its verdicts
    and method, adjudications, criteria: the `scores` counter), never a human label, so
    that the query list, which marks them, does not queue a refresh after every label."""
    return readers.state(run.dataset_id, readers.SATURATED, run=run, facts=[f"v{VERSION}"])


def saturated_among(dataset, query_ids) -> set[int]:
    """Of these queries (a page of the query list), those the latest analysable run's kept
    analytics figures mark saturated. Served as the analytics page is: the list of an
    earlier state while a refresh runs (an adjudication, a criterion changed), so that the
    marks do not vanish meanwhile; nothing when none was ever kept. The query list never
    computes a run's figures, which at a million votes takes a minute."""
    run = choose_run(dataset, None, runs_of_system_answers(dataset), or_newest=True)
    if run is None or not query_ids:
        return set()
    state_ = saturated_state(run)
    found = _read(state_)
    if not found.fresh and _worth_refreshing(found) and _revalidate(run, refresh.DEFAULT):
        found = _read(state_)
    return set(found.figures) & set(query_ids) if found.figures else set()


# The too-easy marks are a hint, and refreshing them is refreshing the whole analytics (7 s
# of a core at the full preset): after an adjudication the query list shows the marks kept
# before it until they are this old (or the analytics page, a run's end, refreshes them).
SATURATED_MAX_AGE = timedelta(minutes=10)


def _worth_refreshing(found: Served) -> bool:
    return found.computed_at is None or found.computed_at < timezone.now() - SATURATED_MAX_AGE


def page(run: Run, edges: tuple[int, ...] = am.DEFAULT_EDGES) -> Page:
    return page_from_json(_part(run, "page", edges))


def served_page(run: Run, edges: tuple[int, ...] = am.DEFAULT_EDGES) -> Served:
    """`served` with the figures as a Page (None while never computed)."""
    found = served(run, "page", edges)
    return found if found.figures is None else found.with_figures(page_from_json(found.figures))


def bucket_rows(run: Run, key: str, edges: tuple[int, ...] = am.DEFAULT_EDGES) -> list:
    """One bucket's drill-down rows (`selectors.bucket_rows`), kept apart from the page so
    that the page does not read them."""
    return [summaries.BucketRow(*r) for r in _part(run, "buckets", edges).get(key, [])]


def served_bucket_rows(run: Run, key: str, edges: tuple[int, ...] = am.DEFAULT_EDGES) -> Served:
    found = served(run, "buckets", edges)
    rows = (found.figures or {}).get(key, [])
    return found.with_figures([summaries.BucketRow(*r) for r in rows])


def queries(run: Run) -> Queries:
    return queries_from_json(_part(run, "queries"))


def health(run: Run) -> list[am.CriterionHealth]:
    return health_from_json(_part(run, "health"))


def health_page(run: Run, flag: str = "") -> tuple[int, list[am.CriterionHealth]]:
    """(criteria with `flag`, the first HEALTH_SHOWN of them); every criterion without a
    flag. An unknown flag: none."""
    top = _part(run, "health-top").get(flag, {"total": 0, "rows": []})
    return top["total"], health_from_json(top["rows"])


def served_health_page(run: Run, flag: str = "") -> Served:
    """`health_page` as served: figures (total, rows)."""
    found = served(run, "health-top")
    top = (found.figures or {}).get(flag, {"total": 0, "rows": []})
    return found.with_figures((top["total"], health_from_json(top["rows"])))


def health_rows(run: Run) -> list[list]:
    """Every criterion's kept row (`health_json`)."""
    return _part(run, "health")


HEALTH_CHUNK = 1000  # kept rows per chunk of the API's criterion-health list


def health_slice(
    run: Run, flag: str, start: int, stop: int, *, again: bool = True, cut: bool = False
) -> tuple[Served, int, list[list]]:
    """(how the rows are served, criteria with `flag`, every criterion for "", and their
    kept rows start:stop), in the selectors' order, for the API's pages. The rows are kept
    in chunks of HEALTH_CHUNK per flag (`warm` cuts them), so a page reads one chunk (a few
    dozen kB), not the 40,000 rows of a large run (seconds). Never computed here: chunks of
    an earlier state are served while a refresh is queued (`served`); none yet: nothing.
    `flag` must be "" or one of HEALTH_FLAGS. A refresh that keeps new chunks between the
    head's read and a later chunk's makes the page read again once, from the new head
    (`cut`), rather than answer it short."""
    if flag and flag not in HEALTH_FLAGS:
        raise ValueError(f"unknown flag {flag!r}")
    state_ = state(run)
    head = _read(_chunk(state_, flag, 0))  # holds the total
    if not head.fresh and again and _revalidate(run, refresh.DEFAULT, _spaced_from(head, state_)):
        return health_slice(run, flag, start, stop, again=False)
    head = _with_failure(head, [(run, refresh.DEFAULT)])
    if head.figures is None:
        return head, 0, []
    total, rows = head.figures["total"], []
    last = min(max(start, stop - 1), total - 1) // HEALTH_CHUNK
    for index in range(start // HEALTH_CHUNK, last + 1):
        chunk = head if index == 0 else _read(_chunk(state_, flag, index))
        if chunk.state != head.state:  # cut for another state: not these rows
            if cut:  # a second refresh in between: the rows read so far
                break
            return health_slice(run, flag, start, stop, again=False, cut=True)
        first = index * HEALTH_CHUNK
        rows += chunk.figures["rows"][max(0, start - first) : max(0, stop - first)]
    return head.with_figures(None), total, rows


def _chunk(state_: State, flag: str, index: int) -> State:
    return state_.for_part(f"health-chunk-{flag or 'all'}-{index}")


def _health_chunks(state_: State, every: list[list]) -> Iterator[tuple[State, dict]]:
    """Each flag's rows cut in chunks of HEALTH_CHUNK, with the state each is kept under."""
    for flag in ("", *HEALTH_FLAGS):
        chosen = [r for r in every if flag in r[1]] if flag else every
        for n in range(0, max(len(chosen), 1), HEALTH_CHUNK):
            chunk = {"total": len(chosen), "rows": chosen[n : n + HEALTH_CHUNK]}
            yield _chunk(state_, flag, n // HEALTH_CHUNK), chunk


def warm(run: Run) -> None:
    """Compute and keep every part for the default buckets from one load of the run (when
    a run ends, and as the refresh of the default group)."""
    edges = am.DEFAULT_EDGES
    started = time.monotonic()
    state_ = state(run, edges)
    data = sel.load_run(run, edges=edges)
    health_rows_ = health_json(data)
    computed = {
        "page": _compute("page", data),
        "buckets": _compute("buckets", data),
        "queries": _compute("queries", data),
        "health": health_rows_,
        "health-top": health_top(health_rows_),
    }
    took = time.monotonic() - started
    parts = [(state_.for_part(slot), computed[part]) for part, slot in _slots(edges).items()]
    parts += _health_chunks(state_, health_rows_)
    saturated = saturated_state(run)
    # One transaction: a reader finds every part of the new state or none of it.
    kept_figures.store_all(
        [(s, _wrap(s, edges, figures, took)) for s, figures in parts]
        + [(saturated, _wrap(saturated, edges, computed["page"]["saturated"]))]
    )


def warm_edges(run: Run, edges: tuple[int, ...]) -> None:
    """Compute and keep the page and bucket rows for custom bucket edges, from one load."""
    started = time.monotonic()
    state_ = state(run, edges)
    data = sel.load_run(run, edges=edges, parts=(sel.LABELLED,))
    slots = _slots(edges)
    page, buckets = _compute("page", data), _compute("buckets", data)
    took = time.monotonic() - started
    _store(state_.for_part(slots["page"]), page, edges, took)
    _store(state_.for_part(slots["buckets"]), buckets, edges, took)


def refresh_group(run: Run, group: str) -> None:
    """The refresh task's work (`evaluation.kept.refresh`)."""
    if group == refresh.DEFAULT:
        warm(run)
    else:
        warm_edges(run, refresh.edges_of(group))


def compare(
    a: Queries, b: Queries, *, system_a: int | None, system_b: int | None,
    resamples: int = am.BOOTSTRAP_RESAMPLES,
) -> summaries.Comparison:  # fmt: skip
    """`selectors.compare_runs` from the two runs' kept per-query scores (`queries`)."""
    return summaries.compare_scores(
        a.of(system_a), b.of(system_b),
        dict(a.systems).get(system_a, "every system") if system_a else "every system",
        dict(b.systems).get(system_b, "every system") if system_b else "every system",
        resamples=resamples,
    )  # fmt: skip


def _pair(state_a: State, state_b: State, system_a: int | None, system_b: int | None) -> State:
    """What a comparison is computed from: both runs' states. Kept in run a's slot of the
    pair of runs and systems, at run a's review revision."""
    part = f"compare-{state_b.basis.run_id}-{system_a or 'all'}-{system_b or 'all'}"
    text = f"{state_a.text}||{state_b.text}"
    return replace(state_a, basis=replace(state_a.basis, part=part, text=text))


def _comparison_json(a: Queries, b: Queries, system_a: int | None, system_b: int | None) -> dict:
    c = compare(a, b, system_a=system_a, system_b=system_b)
    return {
        "systems_a": [list(x) for x in a.systems],
        "systems_b": [list(x) for x in b.systems],
        "systems": [c.system_a, c.system_b],
        "test": c.test.as_dict(),
        "deltas": [[d.query_id, d.a, d.b, d.answer_a, d.answer_b] for d in c.deltas],
    }


def _comparison_from_json(kept_: dict) -> Compared:
    found = summaries.Comparison(
        kept_["systems"][0],
        kept_["systems"][1],
        am.PairedComparison(**kept_["test"]),
        [summaries.QueryDelta(*d) for d in kept_["deltas"]],
    )
    return (
        found,
        [(s, name) for s, name in kept_["systems_a"]],
        [(s, name) for s, name in kept_["systems_b"]],
    )


Compared = tuple[summaries.Comparison, list[tuple[int, str]], list[tuple[int, str]]]


def comparison(run_a: Run, run_b: Run, *, system_a: int | None, system_b: int | None) -> Compared:
    """`compare` of two runs' kept per-query scores, with each run's systems, itself kept
    per pair of runs (their states) and systems: the paired bootstrap over every query is
    drawn once, not on every view of the comparison page (hundreds of milliseconds at 2,000
    queries), and a view reads one row, not both runs' per-query scores. Computes what is
    not kept: for the worker and tests; requests use `served_comparison`."""
    pair = _pair(state(run_a), state(run_b), system_a, system_b)
    kept_ = kept_figures.kept(pair)
    if kept_ is None:
        value = _comparison_json(queries(run_a), queries(run_b), system_a, system_b)
        _store(pair, value)
        return _comparison_from_json(value)
    return _comparison_from_json(kept_["figures"])


def served_comparison(
    run_a: Run, run_b: Run, *, system_a: int | None, system_b: int | None, again: bool = True
) -> Served:
    """`comparison` for a request (figures: Compared, or None). Kept for the pair's
    current states: served. Else, when both runs' per-query scores are kept fresh, the
    paired bootstrap (about 0.2 s at 2,000 queries) is drawn here and kept. Else the
    comparison of earlier states (or none) is served, marked updating, and the stale runs'
    refresh is queued; once their scores are kept, the next reader draws it."""
    state_a, state_b = state(run_a), state(run_b)
    pair = _pair(state_a, state_b, system_a, system_b)
    found = _read(pair)
    if not found.fresh:
        kept_a = kept_figures.kept(state_a.for_part(_slots(am.DEFAULT_EDGES)["queries"]))
        kept_b = kept_figures.kept(state_b.for_part(_slots(am.DEFAULT_EDGES)["queries"]))
        if kept_a is not None and kept_b is not None:
            value = _comparison_json(
                queries_from_json(kept_a["figures"]), queries_from_json(kept_b["figures"]),
                system_a, system_b,
            )  # fmt: skip
            _store(pair, value)
            found = Served(value, True, timezone.now(), pair.digest, pair.revision)
        else:
            stale = [(r, refresh.DEFAULT)
                     for r, k in ((run_a, kept_a), (run_b, kept_b)) if k is None]  # fmt: skip
            ran = [_revalidate(r, group) for r, group in stale]
            if again and ran and all(ran):  # eager: the scores are kept now
                return served_comparison(
                    run_a, run_b, system_a=system_a, system_b=system_b, again=False
                )
            found = _with_failure(found, stale)
    if found.figures is None:
        return found
    return found.with_figures(_comparison_from_json(found.figures))


def comparison_is_fresh(run_a: Run, run_b: Run) -> bool:
    """For the comparison page's poll: are both runs' per-query scores kept fresh (the
    comparison is then drawn by the next view)? Queues what is missing."""
    fresh = [is_fresh(run_a, "queries"), is_fresh(run_b, "queries")]
    return all(fresh)


def overall_undecided(
    run: Run, cells: list[summaries.Cell]
) -> list[tuple[summaries.Cell, int | None]]:
    """Each system's overall score cell with its undecided criteria (issue 41: a score shows
    how much of it is missing), as the analytics page and API show them: from the run's
    kept scores, never counted in the request; None until they are kept."""
    kept = scores.kept_undecided(run)
    return [(c, None if kept is None else kept.get(c.system, 0)) for c in cells if c.group == "all"]
