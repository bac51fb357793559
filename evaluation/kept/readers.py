"""What each kept figure reads, and the one function that builds the state it is kept
under (`state`).

A figure declares the review counters it reads (`Figure.reads`); its state is those
counters' values, the state of every run it reads (`run_state`: what moves whenever a run's
verdicts may change) and the facts its caller adds (the label policy, the bucket edges,
...). A figure kept under one state is never served under another: the state is hashed
into the row's key (`State.key`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from evaluation.kept.counters import Counter, Counters, counters

if TYPE_CHECKING:
    from evaluation.runs.models import Run


@dataclass(frozen=True)
class Figure:
    """A kind of kept figure and the review counters it reads."""

    kind: str
    reads: tuple[Counter, ...] = ()


# Human labels, adjudications and what groups them.
AGREEMENT = Figure("agreement", (Counter.NUMBER,))
# The queues also list every system answer, new ones included.
LABELLING_QUEUE = Figure("labelling-queue", (Counter.NUMBER, Counter.ANSWERS))
DISAGREEMENT_QUEUE = Figure("disagreement-queue", (Counter.NUMBER, Counter.ANSWERS))
# Verdicts, adjudications and criteria; never a human label.
SCORE_COUNTS = Figure("score-counts", (Counter.SCORES,))
RUN_SCORES = Figure("run-scores", (Counter.SCORES,))
# Perfect answers, their labels and adjudications, criteria and queries.
CROSS_EVALUATION = Figure("cross-evaluation", (Counter.CROSS_EVALUATION,))
# The same, counted from reviewers' labels of perfect answers (source "human").
CROSS_EVALUATION_FROM_LABELS = Figure(
    "cross-evaluation", (Counter.CROSS_EVALUATION, Counter.PERFECT_LABELS)
)
ANALYTICS = Figure("analytics", (Counter.NUMBER,))
# The queries every system answers fully (the query list's marks): query scores only.
SATURATED = Figure("saturated-queries", (Counter.SCORES,))
# Verdicts only: the runs' states say when they move. Each graded answer's uncertainty,
# from its vote splits (the labelling queue's order and the analytics' sampling design).
QUEUE_UNCERTAINTY = Figure("queue-uncertainty")
PROGRESS = Figure("progress")
# An ended run's counts over its verdicts, in one row: what its page and progress API show
# (runs.overview); PROGRESS, TOKENS and ERRORS are a running run's, per live window.
RUN_COUNTS = Figure("run-counts")
TOKENS = Figure("tokens")
ERRORS = Figure("errors")
VERDICT_TOKENS = Figure("verdict-tokens")
# A run's repeated calls of one judge on one item (judge stability): verdicts only.
JUDGE_STABILITY = Figure("judge-stability")
# Which finished run the agreement pages open on (agreement.selectors.default_run), in the
# dataset's slot: the runs' states and the labelled answers are in its facts; verdicts gone
# with a criterion, and adjudications, move SCORES. Labels do not move it.
AGREEMENT_DEFAULT_RUN = Figure("agreement-default-run", (Counter.SCORES,))


def run_state(run: Run) -> str:
    """What moves whenever a run's verdicts may have changed: a run's verdicts are written
    while it runs, and again only when it is resumed, retried or imported again, which
    change its status, attempt or finish time; and the method that counts its votes."""
    finished = run.finished_at.isoformat() if run.finished_at else ""
    return (
        f"{run.pk}.{run.status}.{run.attempt}.{finished}.{run.panel_method}.{run.panel_threshold!r}"
    )


@dataclass(frozen=True)
class Basis:
    """Where a figure is kept (its slot: dataset, kind, run, part) and what it is computed
    from, but the review counters. `cacheable` is False while a run it reads may still
    write verdicts without its state moving: such a figure is computed for one request."""

    dataset_id: int
    figure: Figure
    run_id: int | None
    part: str
    text: str
    cacheable: bool

    @property
    def slot(self) -> str:
        """Names the slot (kind, run, part): what `kept_key` and the fill lock hash."""
        return f"{self.figure.kind}\n{self.run_id}\n{self.part}"

    @property
    def digest(self) -> str:
        """Names what the figure is computed from, the counters left out: the same for
        every part of one state, and across states that differ in counters only."""
        return hashlib.sha256(self.text.encode()).hexdigest()


@dataclass(frozen=True)
class State:
    """A figure's basis and the values of the counters it reads: everything it was
    computed from."""

    basis: Basis
    counters: tuple[int, ...]

    @property
    def dataset_id(self) -> int:
        return self.basis.dataset_id

    @property
    def cacheable(self) -> bool:
        return self.basis.cacheable

    @property
    def revision(self) -> int | None:
        """The first counter the figure reads (the review revision, for most)."""
        return self.counters[0] if self.counters else None

    @property
    def text(self) -> str:
        reads = self.basis.figure.reads
        values = (f"{c}={v}" for c, v in zip(reads, self.counters, strict=True))
        return "|".join([*values, self.basis.text])

    @property
    def digest(self) -> str:
        """Names the state, whatever the part."""
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def key(self) -> str:
        return self.key_of("")

    def key_of(self, piece: str) -> str:
        """The key of one of several rows kept for this state in its slot ("": the row)."""
        return kept_key(self.basis, self.text, piece)

    def for_part(self, part: str) -> State:
        """The same state in another slot of the same figure and run."""
        return replace(self, basis=replace(self.basis, part=part))


# How long the figures of a running run may be served after they were counted.
LIVE_SECONDS = 5


def live_window(now: float | None = None) -> str:
    """A fact for the state of a figure that reads a running run, whose verdicts arrive
    without its state moving: the current window of LIVE_SECONDS. Kept under it, the
    figure is counted at most once per window for every reader (a running run's page and
    progress), instead of at every request; a figure served while updating (run scores)
    may be older, as its refresh spacing says."""
    return f"live:{int((time.time() if now is None else now) // LIVE_SECONDS)}"


def run_facts(run: Run) -> list[str]:
    """The facts a figure counted over one run's verdicts adds to its state: none for an
    ended run (its state moves when they change), the live window for a running one."""
    return [] if run.ended else [live_window()]


def kept_key(basis_: Basis, text: str, piece: str = "") -> str:
    """The key of a row kept in the slot of `basis_` for the state whose text was `text`
    (`State.text`): how a reader finds the pieces of an earlier state it serves while a
    fresh one is computed (runs.scores)."""
    return hashlib.sha256(f"{basis_.slot}\n{piece}\n{text}".encode()).hexdigest()


def basis(
    dataset_id: int,
    figure: Figure,
    *,
    run: Run | None = None,
    runs: Iterable[Run] = (),
    part: str = "",
    facts: Iterable[object] = (),
) -> Basis:
    """A figure's basis (no query): kept in the slot of `run` (None: the dataset's) and
    `part`, computed from `run` and `runs` (in the order given: it may matter) and `facts`
    (their `str`)."""
    read = [r for r in (run, *runs) if r is not None]
    text = "|".join([*(run_state(r) for r in read), *(str(f) for f in facts)])
    return Basis(
        dataset_id, figure, run.pk if run is not None else None, part, text,
        cacheable=all(r.ended for r in read),
    )  # fmt: skip


def state_of(basis_: Basis, at: Counters | None = None) -> State:
    """The state of a basis at the counters `at`, or at the dataset's counters now (one
    query, none for a figure that reads no counter)."""
    reads = basis_.figure.reads
    if reads and at is None:
        at = counters(basis_.dataset_id)
    return State(basis_, tuple(at[c] for c in reads) if reads else ())


def state(
    dataset_id: int,
    figure: Figure,
    *,
    run: Run | None = None,
    runs: Iterable[Run] = (),
    part: str = "",
    facts: Iterable[object] = (),
    at: Counters | None = None,
) -> State:
    """Everything a figure is computed from, to keep it under (`basis`, then `state_of`):
    one query for the counters it reads, none when it reads none or `at` gives them."""
    return state_of(basis(dataset_id, figure, run=run, runs=runs, part=part, facts=facts), at)
