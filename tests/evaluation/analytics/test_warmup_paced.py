"""The warm-up paces the older runs (issue 44, item 1: no cold view in a request, and no
warm-up that takes the cores from the first readers after a seed or a deploy). The newest
run of each panel and every run's scores are queued at once; the older runs' other
figures are counted one at a time, each step queueing the next after the spacing of what
it took, under one chain per dataset. With a real worker: every cold figure counted once,
the paced ones at least the spacing apart. Failure paths: a broker out of reach leaves no
chain marker; a chain already running is not doubled; a figure a reader's refresh holds
is left to it."""

from __future__ import annotations

import itertools
import re
import uuid
from datetime import datetime, timedelta

import pytest
from celery.canvas import Signature
from django.utils import timezone

from bench.data_io.generate import generate
from evaluation import task_names
from evaluation.analytics import warmup
from evaluation.kept import refresh
from evaluation.kept.models import KeptFigure, KeptRefresh
from evaluation.runs import scores
from evaluation.runs.models import Run
from tests.support.beat import wait_for
from tests.support.nights import next_night

# The groups a cold run has, newest run first: its scores, analytics, stability, counts.
ALL_GROUPS = 4


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_user("paced-admin", password="x-9-long-pw")


@pytest.fixture
def three_nights(admin) -> list[Run]:
    """Three nightly runs of one panel, oldest first, nothing of theirs kept."""
    dataset = generate("Paced", queries=3, systems=2, criteria=4, judges=2, admin=admin)
    first = Run.objects.filter(dataset=dataset).exclude(kind=Run.Kind.CROSS_EVALUATION).get()
    Run.objects.filter(pk=first.pk).update(finished_at=timezone.now() - timedelta(days=10))
    first = Run.objects.select_related("dataset").get(pk=first.pk)
    nights = [first, next_night(first, 1), next_night(first, 2)]
    KeptFigure.objects.filter(dataset=dataset).delete()
    return nights


def fresh(run: Run) -> Run:
    return Run.objects.select_related("dataset").get(pk=run.pk)


def recorded_broker(monkeypatch) -> list[tuple[str, tuple, float | None]]:
    """What the warm-up queues (task, args, countdown), kept here instead of sent."""
    sent = []
    monkeypatch.setattr(
        Signature, "apply_async",
        lambda self, *a, **k: sent.append((self.task, self.args, k.get("countdown"))),
    )  # fmt: skip
    return sent


def test_the_newest_run_and_every_runs_scores_are_queued_and_the_rest_is_paced(
    three_nights, monkeypatch
):
    oldest, middle, newest = three_nights
    sent = recorded_broker(monkeypatch)
    warmed = warmup.warm(newest.dataset_id)

    refreshes = [(args[0], args[1]) for task, args, _ in sent if task == task_names.REFRESH_TASK]
    assert len(warmup.cold_groups(fresh(newest))) == ALL_GROUPS
    assert sorted(refreshes) == sorted(
        [(newest.pk, group) for group in warmup.cold_groups(fresh(newest))]
        + [(middle.pk, scores.REFRESH_GROUP), (oldest.pk, scores.REFRESH_GROUP)]
    )
    assert warmed.queued == refreshes
    # One paced chain, started at once, its marker held so that no second chain starts.
    steps = [(args, wait) for task, args, wait in sent if task == task_names.WARM_OLDER_RUNS_TASK]
    assert steps == [((newest.dataset_id,), 0.0)] and warmed.paced == [newest.dataset_id]
    assert KeptRefresh.objects.filter(run=None, group=warmup.PACED_GROUP).count() == 1

    # A second warm-up (another host's start, a migrate) starts no second chain and queues
    # no refresh a marker already holds.
    sent.clear()
    again = warmup.warm(newest.dataset_id)
    assert again.paced == [] and again.queued == [] and sent == []


def test_a_step_counts_one_figure_of_the_newest_older_run_and_queues_the_next_after_a_pause(
    three_nights, monkeypatch, settings
):
    oldest, middle, newest = three_nights
    settings.FIGURES_REFRESH_SPACING, settings.FIGURES_REFRESH_PAUSE = 5, 4
    for run in three_nights:  # what the queued refreshes of the first tier count
        scores.keep_scores(fresh(run))
    before = {run.pk: warmup.cold_groups(fresh(run)) for run in (oldest, middle)}
    assert all(len(groups) == ALL_GROUPS - 1 for groups in before.values())
    assert refresh.claim(newest.dataset_id, None, warmup.PACED_GROUP)
    sent = recorded_broker(monkeypatch)

    assert warmup.pace(newest.dataset) is True
    # The middle run (the newest of the older ones) lost one cold group; the oldest none.
    assert len(warmup.cold_groups(fresh(middle))) == ALL_GROUPS - 2
    assert warmup.cold_groups(fresh(oldest)) == before[oldest.pk]
    [(task, args, wait)] = sent
    assert task == task_names.WARM_OLDER_RUNS_TASK and args == (newest.dataset_id,)
    assert wait >= 5  # the spacing (a step this small takes far less than 5 / 4 s)
    # The marker is held across the pause: live until well after the refresh timeout.
    marker = KeptRefresh.objects.get(run=None, group=warmup.PACED_GROUP)
    assert marker.claimed_at > timezone.now() + timedelta(seconds=4)
    assert not refresh.claim(newest.dataset_id, None, warmup.PACED_GROUP)


def test_a_figure_a_readers_refresh_holds_is_left_to_it(three_nights, monkeypatch):
    oldest, middle, newest = three_nights
    for run in three_nights:
        scores.keep_scores(fresh(run))
    held = warmup.cold_groups(fresh(middle))
    for group in held:  # a reader opened the middle run: its refreshes are queued
        assert refresh.claim(middle.dataset_id, middle.pk, group)
    recorded_broker(monkeypatch)

    assert warmup.pace(newest.dataset) is True
    assert warmup.cold_groups(fresh(middle)) == held  # not counted twice
    assert len(warmup.cold_groups(fresh(oldest))) == ALL_GROUPS - 2


def test_a_figure_kept_between_the_look_and_the_claim_is_not_counted_again(
    three_nights, monkeypatch
):
    """The race of a reader's refresh ending just as a step looks: the step found the
    middle run's scores cold, then their refresh kept them and let go of the marker before
    the step took it. The step lets the marker go too and counts the next figure."""
    _oldest, middle, newest = three_nights
    take = refresh.claim

    def kept_meanwhile(dataset_id, run_id, group):
        if (run_id, group) == (middle.pk, scores.REFRESH_GROUP):
            scores.keep_scores(fresh(middle))  # the reader's refresh, just ended
        return take(dataset_id, run_id, group)

    monkeypatch.setattr(refresh, "claim", kept_meanwhile)
    recorded_broker(monkeypatch)
    counted = []
    monkeypatch.setattr(
        warmup.recount, "recount_run", lambda run, group: counted.append((run.pk, group))
    )
    assert warmup.pace(newest.dataset) is True
    assert counted == [(middle.pk, warmup.cold_groups(fresh(middle))[0])]
    assert counted[0][1] != scores.REFRESH_GROUP
    assert not KeptRefresh.objects.filter(run_id=middle.pk, group=scores.REFRESH_GROUP).exists()


def test_when_nothing_is_left_the_chain_ends_and_its_marker_goes(three_nights, monkeypatch):
    _oldest, _middle, newest = three_nights
    assert refresh.claim(newest.dataset_id, None, warmup.PACED_GROUP)
    sent = recorded_broker(monkeypatch)
    while warmup.pace(newest.dataset):  # each step's next, run here
        pass
    # Every cold figure of the two older runs (their scores too: no first tier held them),
    # one per step; the newest run's left to the first tier.
    assert len(sent) == 2 * ALL_GROUPS
    assert [warmup.cold_groups(fresh(run)) for run in three_nights[:2]] == [[], []]
    assert len(warmup.cold_groups(fresh(newest))) == ALL_GROUPS
    assert not KeptRefresh.objects.filter(dataset_id=newest.dataset_id).exists()


def test_a_broker_out_of_reach_leaves_no_chain_marker(three_nights, monkeypatch):
    newest = three_nights[-1]

    def unreachable(self, *args, **kwargs):
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(Signature, "apply_async", unreachable)
    warmed = warmup.warm(newest.dataset_id)
    assert warmed.paced == [] and warmed.queued == []
    # Nothing holds a marker: the next warm-up, or a reader, starts again.
    assert not KeptRefresh.objects.filter(dataset_id=newest.dataset_id).exists()


def test_unpaced_every_runs_figures_are_queued_at_once(three_nights, monkeypatch):
    sent = recorded_broker(monkeypatch)
    warmed = warmup.warm(three_nights[-1].dataset_id, paced=False)
    assert len(warmed.queued) == 3 * ALL_GROUPS and warmed.paced == []
    assert all(task == task_names.REFRESH_TASK for task, _args, _wait in sent)


def test_with_an_eager_celery_the_steps_run_one_after_the_other(three_nights, eager_refresh):
    warmed = warmup.warm(three_nights[-1].dataset_id)
    assert warmed.paced == [three_nights[-1].dataset_id]
    assert all(warmup.cold_groups(fresh(run)) == [] for run in three_nights)
    assert not KeptRefresh.objects.filter(dataset_id=three_nights[-1].dataset_id).exists()


REFRESHED = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO \S+ Refreshed run (\d+) \((\S+)\)", re.M
)


def refreshed(log: str) -> list[tuple[datetime, int, str]]:
    """(time, run, group) of each refresh a worker's log says it counted."""
    return [
        (datetime.strptime(at, "%Y-%m-%d %H:%M:%S,%f"), int(run), group)
        for at, run, group in REFRESHED.findall(log)
    ]


def all_warm(nights: list[Run]) -> bool:
    """No run has a cold figure, and no refresh or chain marker of their dataset is left."""
    return all(warmup.cold_groups(fresh(run)) == [] for run in nights) and not (
        KeptRefresh.objects.filter(dataset_id=nights[-1].dataset_id).exists()
    )


@pytest.mark.worker
def test_a_real_worker_warms_everything_once_and_the_older_runs_spaced(three_nights, start_worker):
    """The whole warm-up on a real worker of two threads, with a spacing of 2 s: every cold
    figure counted exactly once, and the older runs' analytics, stability and counts each
    at least 2 s after the one before (unpaced, two threads count them in about a second)."""
    oldest, middle, newest = three_nights
    queue = f"paced-{uuid.uuid4().hex[:8]}"
    worker = start_worker(queue=queue, concurrency=2, env={"FIGURES_REFRESH_SPACING": "2"})
    signature = Signature(task_names.WARM_FIGURES_TASK, args=(newest.dataset_id, True))
    signature.apply_async(queue=queue)
    wait_for(
        lambda: all_warm(three_nights),
        90, lambda: "warm-up never finished:\n" + worker.log()[-3000:],
    )  # fmt: skip

    found = refreshed(worker.log())
    counted = [(run, group) for _at, run, group in found]
    assert len(counted) == len(set(counted)) == 3 * ALL_GROUPS, worker.log()[-3000:]
    paced = sorted(
        at for at, run, group in found
        if run in (oldest.pk, middle.pk) and group != scores.REFRESH_GROUP
    )  # fmt: skip
    assert len(paced) == 2 * (ALL_GROUPS - 1)
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(paced)]
    assert min(gaps) >= 2.0, gaps


STEP_RECEIVED = re.compile(r"Task evaluation\.warm_older_runs\[\S+\] received")


@pytest.mark.worker
def test_a_worker_killed_while_it_holds_the_next_step_leaves_the_chain_to_the_next_worker(
    three_nights, start_worker, settings
):
    """SIGKILL while the worker holds the chain's next step (queued with its countdown,
    not acknowledged): the step is not lost with the worker. Redis hands it to the next
    worker after CELERY_VISIBILITY (an hour by default; 1 s here: kombu looks for such
    messages when a worker starts, then every 100 s), and the chain goes on
    from where it stood: every cold figure kept, none counted twice, no marker left."""
    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        # The embedded transport hands a message over by moving its file: a killed worker
        # loses what it held (decision 0001). The chain's marker then runs out and the next
        # warm-up starts it again (docs/operations.md).
        pytest.skip("redelivery after a killed worker is Redis's")
    oldest, middle, newest = three_nights
    queue = f"paced-kill-{uuid.uuid4().hex[:8]}"
    first = start_worker(queue=queue, concurrency=2, env={"FIGURES_REFRESH_SPACING": "10"})
    Signature(task_names.WARM_FIGURES_TASK, args=(newest.dataset_id, True)).apply_async(queue=queue)
    # The first paced step counted one figure and queued the next, which the worker now
    # holds until its countdown runs out.
    wait_for(
        lambda: len(STEP_RECEIVED.findall(first.log())) == 2
        and warmup.cold_groups(fresh(newest)) == [],
        60, lambda: "the chain never queued its second step:\n" + first.log()[-3000:],
    )  # fmt: skip
    first.kill()
    assert any(warmup.cold_groups(fresh(run)) for run in (oldest, middle))

    second = start_worker(
        queue=queue, concurrency=2,
        env={"FIGURES_REFRESH_SPACING": "1", "CELERY_VISIBILITY": "1"},
    )  # fmt: skip
    wait_for(
        lambda: all_warm(three_nights),
        120, lambda: "the chain never finished:\n" + second.log()[-3000:],
    )  # fmt: skip
    counted = [(run, group) for _at, run, group in refreshed(first.log() + second.log())]
    assert len(counted) == len(set(counted)) == 3 * ALL_GROUPS, second.log()[-3000:]
