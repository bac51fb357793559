"""The warm-up: every kept figure a page reads, computed in the background before its first
reader (evaluation.kept.cold is the rule that keeps a cold figure out of a request; this is
what makes the first reader find it warm).

Queued (`queue`) by `migrate` (post_migrate: a migration, or a deploy that changes a
figure's version, runs it), by each start of the web server (config/gunicorn.py), by the
seeders (bench.seed_scale) and by `manage.py warm_figures`. Run by the warm-up task
(evaluation.analytics.tasks.warm_figures), per dataset, in two tiers:

- **at once**, what the pages open on: the newest run of each panel (its run scores,
  analytics figures, judge stability and verdict counts: the run page's progress,
  runs.overview) and every run's scores (the score trend and the answer page's run cards
  read them all), when cold (`cold_groups`: figures behind labels are left to their
  readers). Not computed here but queued as the runs' own refreshes
  (evaluation.kept.refresh): one marker per run and group, so a reader arriving meanwhile
  queues no second count, several workers share the runs, and a failure backs off as any
  refresh's does. Then the agreement counts of the agreement page's default run (computed
  here, under its fill lock), and the dataset's own figures (`dataset_groups`: the
  labelling and disagreement queues over every run, the cross-evaluation figures, the
  agreement counts without a run when the dataset has none): computed here under the
  dataset's refresh marker (`recompute_dataset`), the one its readers take, so a reader
  meanwhile queues no second count and a failure backs off;
- **paced**, the older runs' other figures (`pace`): one figure at a time, newest run
  first, each step queueing the next after `refresh.spacing` of what it took (the pause
  after labels: FIGURES_REFRESH_PAUSE times as long). At the month preset that is thirty
  analytics counts of 14 s that nobody has asked for yet; counted back to back, they held
  a core (and a PostgreSQL backend beside it) for minutes while the first readers after a
  seed or a deploy waited on the other. A reader who opens an older run meanwhile queues
  its refresh at once (the cold rule): pacing delays only what nobody is waiting for. One
  chain per dataset: its marker (PACED_GROUP) is held across the pauses.

Cheap when everything is warm: one indexed read per figure, nothing counted. Safe to run
twice or on several hosts at once (what it keeps is keyed by state; the refreshes are
single-flight, and so is the paced chain).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import AnonymousUser

from annotation.models import Dataset
from evaluation import task_names
from evaluation.agreement import kept as agreement_kept
from evaluation.agreement import selectors as agreement
from evaluation.analytics import figures, recount
from evaluation.cross_evaluation import counted as cross_evaluation
from evaluation.cross_evaluation.sources import Source
from evaluation.kept import cold, readers, refresh
from evaluation.review import selectors as review
from evaluation.runs import overview, scores, stability
from evaluation.runs.models import Run
from evaluation.runs.selectors import runs_of_system_answers

logger = logging.getLogger(__name__)

# The dataset's marker of the paced chain over its older runs: one chain at a time.
PACED_GROUP = "warm-up-paced"


@dataclass
class Warmed:
    """What one warm-up did: refreshes queued per (run, group), datasets whose agreement
    and queues it computed, datasets whose paced chain over the older runs it started, and
    what failed (dataset, error kind: logged in full)."""

    queued: list[tuple[int, str]] = field(default_factory=list)
    datasets: list[int] = field(default_factory=list)
    paced: list[int] = field(default_factory=list)
    failed: list[tuple[int, str]] = field(default_factory=list)


def runs_to_warm(dataset: Dataset) -> list[Run]:
    """The dataset's ended runs of system answers, newest first: the ones pages show first.
    Cross-evaluation runs have no scores page or analytics of their own; archived runs
    serve what was kept when they were archived (evaluation.archive)."""
    found = Run.objects.filter(dataset=dataset, status__in=Run.ENDED, archived_at=None).exclude(
        kind=Run.Kind.CROSS_EVALUATION
    )
    return list(found.select_related("dataset").order_by("-created_at", "-pk"))


def newest_of_each_panel(runs: list[Run]) -> tuple[list[Run], list[Run]]:
    """`runs` (newest first) split into the newest run of each panel, which the pages open
    on, and the others."""
    newest: dict[int | None, Run] = {}
    for run in runs:
        newest.setdefault(run.panel_id, run)
    first = {run.pk for run in newest.values()}
    return list(newest.values()), [run for run in runs if run.pk not in first]


# Each refresh group a run's pages read, and whether something is kept that they serve.
SERVED = {
    scores.REFRESH_GROUP: scores.scores_served,
    refresh.DEFAULT: figures.default_served,
    stability.REFRESH_GROUP: stability.stability_kept,
    overview.REFRESH_GROUP: overview.counts_kept,
}


def cold_groups(run: Run) -> list[str]:
    """The run's refresh groups whose readers would get the placeholder: nothing kept for
    the run's current state, nor for an earlier state that they would serve meanwhile.

    Figures kept for an earlier state (the scores before an adjudication, the analytics
    before a label) are not warmed here: their readers serve them marked updating and queue
    their refresh, spaced while labels come. Nightly runs grade the same answers, so a day
    of labels leaves every hot run's analytics behind; recounting them all at each start
    of the web server was 30 recounts of 14 s at the month preset, for runs nobody opened.
    What makes a figure cold is what the warm-up is for: a seed, a migration or a deploy
    that changes a figure's version, a flush."""
    return [group for group in SERVED if is_cold(run, group)]


def is_cold(run: Run, group: str) -> bool:
    """Whether the run's readers of `group` would get the placeholder (`cold_groups`)."""
    return not SERVED[group](run)


def dataset_groups(dataset: Dataset, *, with_agreement: bool) -> list[str]:
    """The refresh groups of the dataset's own figures that the pages read first: the
    labelling and disagreement queues over every run, the cross-evaluation figures of the
    latest runs (the page's default source) and, `with_agreement` (the dataset has no run
    for the agreement page to default to), the agreement counts without a run."""
    found = [
        review.refresh_group(readers.LABELLING_QUEUE, None),
        review.refresh_group(readers.DISAGREEMENT_QUEUE, None),
        cross_evaluation.refresh_group(Source("latest")),
    ]
    return [*found, agreement_kept.REFRESH_GROUP] if with_agreement else found


def recompute_dataset(dataset: Dataset, group: str) -> bool:
    """Count the dataset's figure of `group` for the current state, if it is not kept (the
    dataset refresh task's work, and the warm-up's): counted here whatever the cold rule
    says (`cold.counting`), then the dataset's marker released, or kept as a failure. The
    caller holds the marker (a reader's `refresh.ensure`, the warm-up's `refresh.claim`)."""
    try:
        with cold.counting():
            _count_dataset(dataset, group)
    except Exception as error:
        logger.exception("Refresh of dataset %s's figures (%s) failed", dataset.pk, group)
        failure = refresh.fail(dataset.pk, None, group, error)
        logger.warning(
            "Refresh of dataset %s's figures (%s): %d failed tries in a row, next at %s",
            dataset.pk, group, failure.tries, failure.retry_at.isoformat(),
        )  # fmt: skip
        return False
    refresh.release(dataset.pk, None, group)
    return True


def _count_dataset(dataset: Dataset, group: str) -> None:
    """What the readers of `group` would have counted: the same selectors, under counting."""
    if group == agreement_kept.REFRESH_GROUP:
        agreement_kept.keep_cells(dataset, None)
        return
    if (queue := review.queue_of_group(group)) is not None:
        kind, perfect, run_id = queue
        run = None
        if run_id is not None:
            run = Run.objects.select_related("panel").filter(pk=run_id, dataset=dataset).first()
            if run is None:  # gone since the reader queued it: nothing to order
                return
        if kind == readers.LABELLING_QUEUE.kind:
            review.labelling_queue(dataset, AnonymousUser(), run=run, perfect=perfect)
        else:
            review.disagreement_queue(dataset, AnonymousUser(), run=run)
        return
    if (source := cross_evaluation.source_of_group(group)) is not None:
        cross_evaluation.figures(dataset, source)
        return
    raise ValueError(f"No figure of a dataset has the refresh group {group!r}.")


def warm_dataset(dataset: Dataset, into: Warmed, *, paced: bool = True) -> None:
    newest, older = newest_of_each_panel(runs_to_warm(dataset))
    if not paced:  # every run at once (manage.py warm_figures --unpaced: a quiet window)
        newest, older = newest + older, []
    for run in newest:
        for group in cold_groups(run):
            if refresh.ensure(dataset.pk, run.pk, group):
                into.queued.append((run.pk, group))
    for run in older:
        if is_cold(run, scores.REFRESH_GROUP) and refresh.ensure(
            dataset.pk, run.pk, scores.REFRESH_GROUP
        ):
            into.queued.append((run.pk, scores.REFRESH_GROUP))
    # The pages every reviewer opens first: the agreement page (its default run) and the
    # dataset's own figures (the queues over every run, cross-evaluation). The run's
    # agreement counts are kept under their fill lock; the dataset's figures under its
    # refresh markers (taken here unless a reader's refresh already holds one).
    default = agreement.default_run(dataset, runs_of_system_answers(dataset))
    if default is not None:
        agreement_kept.keep_cells(dataset, default)
    for group in dataset_groups(dataset, with_agreement=default is None):
        if refresh.claim(dataset.pk, None, group):
            recompute_dataset(dataset, group)
    into.datasets.append(dataset.pk)
    if any(cold_groups(run) for run in older) and start_pacing(dataset):
        into.paced.append(dataset.pk)


def start_pacing(dataset: Dataset) -> bool:
    """Queue the first paced step over the dataset's older runs, unless a chain holds its
    marker already; False then, or when the broker cannot take it (the next warm-up
    tries again; readers queue what they open)."""
    if not refresh.claim(dataset.pk, None, PACED_GROUP):
        return False
    return _queue_step(dataset, 0.0)


def pace(dataset: Dataset) -> bool:
    """One paced step (the task evaluation.analytics.tasks.warm_older_runs): count the next
    cold figure of the older runs, then queue the next step after `refresh.spacing` of
    what this one took, holding the chain's marker across the pause. True when a next
    step is queued; False when nothing was left (the marker goes). With an eager Celery (a
    demo without a worker) the steps run one after the other here, without pauses."""
    while (took := count_next_older(dataset)) is not None:
        if not refresh.eager():
            wait = refresh.spacing(took)
            refresh.hold(dataset.pk, None, PACED_GROUP, wait)
            return _queue_step(dataset, wait)
    refresh.release(dataset.pk, None, PACED_GROUP)
    return False


def count_next_older(dataset: Dataset) -> float | None:
    """Count the first cold figure of the older runs (newest run first) whose marker is
    free (a reader's refresh may hold one: its own task counts it); the seconds it took,
    or None when none is left."""
    _newest, older = newest_of_each_panel(runs_to_warm(dataset))
    for run in older:
        for group in cold_groups(run):
            if not refresh.claim(dataset.pk, run.pk, group):
                continue
            if not is_cold(run, group):  # kept by the refresh that held it meanwhile
                refresh.release(dataset.pk, run.pk, group)
                continue
            started = time.monotonic()
            recount.recount_run(run, group)
            return time.monotonic() - started
    return None


def _queue_step(dataset: Dataset, wait: float) -> bool:
    try:
        signature = task_names.signature(task_names.WARM_OLDER_RUNS_TASK, (dataset.pk,))
        signature.apply_async(countdown=wait)
    except Exception:
        logger.exception("Could not queue the paced warm-up of dataset %s", dataset.pk)
        refresh.release(dataset.pk, None, PACED_GROUP)
        return False
    return True


def warm(dataset_id: int | None = None, *, paced: bool = True) -> Warmed:
    """Warm one dataset's figures, or every dataset's (newest first). A dataset that fails
    is logged and left for its readers' refreshes; the others are still warmed. Not
    `paced`: every run's cold figures queued at once, none left to the paced steps."""
    warmed = Warmed()
    datasets = Dataset.objects.order_by("-pk")
    if dataset_id is not None:
        datasets = datasets.filter(pk=dataset_id)
    for dataset in datasets:
        try:
            warm_dataset(dataset, warmed, paced=paced)
        except Exception as error:
            logger.exception("Warm-up of dataset %s failed", dataset.pk)
            warmed.failed.append((dataset.pk, type(error).__name__))
    return warmed


def queue(
    dataset_id: int | None = None, *, why: str, asked: bool = False, paced: bool = True
) -> bool:
    """Queue the warm-up task; False (logged) when the broker cannot take it: a start-up or
    a migration never fails for it, and readers then queue their own refreshes. Also False
    when settings.FIGURES_WARM_UP is off (the test suite), unless someone `asked` for it
    (manage.py warm_figures)."""
    if not (asked or settings.FIGURES_WARM_UP):
        return False
    try:
        task_names.signature(task_names.WARM_FIGURES_TASK, (dataset_id, paced)).apply_async()
    except Exception:
        logger.exception("Could not queue the warm-up of kept figures (%s)", why)
        return False
    logger.info("Warm-up of kept figures queued (%s)", why)
    return True
