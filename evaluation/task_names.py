"""Every task's name, written once: the tasks modules register under these names and
services and receivers queue by them (`signature`). Services and receivers never import a
tasks module, so task code can import them freely (no import cycle)."""

from __future__ import annotations

from collections.abc import Iterable

from celery import current_app
from celery.canvas import Signature

# One answer × one judge of a run (evaluation.runs.tasks, queued by evaluation.runs.queue).
JUDGE_TASK = "evaluation.judge_answer"
# A run's analytics figures when it ends, and again when a reader finds them stale
# (evaluation.analytics.tasks, queued by its receivers and evaluation.kept.refresh).
WARM_TASK = "evaluation.warm_analytics"
REFRESH_TASK = "evaluation.refresh_analytics"
# A dataset's kept figures that belong to no run (the review queues, the cross-evaluation
# figures, the agreement counts without a run), queued by the first reader who found them
# cold (evaluation.kept.refresh, evaluation.kept.dataset_groups).
DATASET_REFRESH_TASK = "evaluation.refresh_dataset_figures"
# Every kept figure of every dataset (or one), before their first reader: queued by
# migrate, the web server's start and the seeders (evaluation.analytics.warmup).
WARM_FIGURES_TASK = "evaluation.warm_figures"
# The warm-up's paced steps over the older runs, each queueing the next after a pause.
WARM_OLDER_RUNS_TASK = "evaluation.warm_older_runs"
# The regression alerts of a run that ended (evaluation.alerts.tasks and receivers).
CHECK_REGRESSIONS_TASK = "evaluation.check_regressions"
# The email and webhook of one regression found, the webhook retried (evaluation.alerts).
SEND_ALERT_TASK = "evaluation.send_alert"
# A schedule's run, sent by celery beat (evaluation.schedules.tasks and services).
SCHEDULED_RUN_TASK = "evaluation.scheduled_run"
# Beat's heartbeat, sent every SCHEDULER_HEARTBEAT seconds (config/celery.py registers it,
# evaluation.schedules.tasks runs it); also the name of its periodic task, the row that
# evaluation.schedules.beat reads.
SCHEDULER_HEARTBEAT_TASK = "evaluation.scheduler_heartbeat"
# The formality advice on a criterion's wording (evaluation.formality).
CHECK_FORMALITY_TASK = "evaluation.check_formality"
# An LLM's draft of a perfect answer (evaluation.cross_evaluation).
DRAFT_TASK = "evaluation.draft_perfect_answer"
# Writing a dataset export, and deleting a dataset in batches (evaluation.datasets.tasks;
# the purge is queued by annotation.services.datasets, which never imports evaluation.datasets).
# The export's name still says evaluation.data, the package's name before issue 39: a name
# is what a queued message carries, so an export queued across that upgrade still runs.
EXPORT_TASK = "evaluation.data.export_dataset"
PURGE_TASK = "evaluation.purge_dataset"
# A panel's pairwise judging of a session (evaluation.pairwise.tasks, queued by its views).
PAIRWISE_JUDGE_TASK = "evaluation.pairwise_judge"
# The health probe /healthz sends (config.tasks, config.health).
PING_TASK = "evaluation.ping"


def signature(name: str, args: Iterable = ()) -> Signature:
    """The task `name` with `args`, ready for `apply_async`. With CELERY_TASK_ALWAYS_EAGER
    (the test suite's eager fixtures, a demo without a worker) the tasks modules are
    imported first: a web process imports them only when a worker would (Celery's
    autodiscovery is lazy), and a task unknown to the app goes to the broker by
    `send_task`, which never runs eagerly; the message would wait there for a worker of
    another process, or for ever."""
    if current_app.conf.task_always_eager and name not in current_app.tasks:
        current_app.loader.import_default_modules()
    return current_app.signature(name, args=tuple(args))
