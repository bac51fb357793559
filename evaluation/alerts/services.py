"""Regression alerts: when a run ends, compare each system's score with the dataset's
previous ended run holding that system; a drop of at least the alert's threshold is
recorded once (`AlertEvent`) and sent by email and by a signed webhook: the sending, its
signature and its retries are in delivery.py, run by the task `evaluation.send_alert`.

Each event carries its evidence (evaluation.alerts.evidence): item by item on the criteria
unchanged between the runs, the paired test and the judge's own noise floor, and the
criteria and queries that went from pass to fail. A drop past the threshold in runs that
measured the judge's noise, and that is not beyond it (the paired test does not tell it
from chance, or the judge's flip rate explains it), is recorded as "within the judge's
noise" and not sent; without a measure of the noise the drop is sent, with its evidence.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.urls import reverse

from config import site
from evaluation import task_names
from evaluation.agreement import canary
from evaluation.alerts.evidence import regression_evidence
from evaluation.alerts.models import AlertEvent, RegressionAlert
from evaluation.analytics import selectors as sel
from evaluation.analytics import summaries
from evaluation.runs.canary import canary_of
from evaluation.runs.models import Run

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from annotation.models import Dataset

logger = logging.getLogger(__name__)

Delivery = AlertEvent.Delivery
# An event whose drop no criterion explains beyond the judge's measured noise: kept, not sent.
WITHIN_NOISE = "within-noise"
# An event of a run whose judge canary named a changed judge: sent, saying so.
JUDGE_CHANGED = "judge-changed"


# What a dataset's admin sets on an alert (evaluation.alerts.forms.AlertForm checks them).
ALERT_FIELDS = frozenset({"system", "threshold", "emails", "webhook_url", "secret_env", "active"})


@transaction.atomic
def alert_save(
    *,
    dataset: Dataset,
    alert: RegressionAlert | None = None,
    by: AbstractBaseUser | None = None,
    **fields: object,
) -> RegressionAlert:
    """Create (alert=None, set by `by`) or change one of the dataset's regression alerts.
    The values are the form's, already checked (addresses, the webhook's host, the secret's
    variable name)."""
    unknown = set(fields) - ALERT_FIELDS
    if unknown:
        raise TypeError(f"Not an alert field: {', '.join(sorted(unknown))}")
    if alert is None:
        alert = RegressionAlert(dataset=dataset, created_by=by)
    elif alert.dataset_id != dataset.pk:
        raise ValueError("The alert belongs to another dataset.")
    for field, value in fields.items():
        setattr(alert, field, value)
    alert.save()
    return alert


@transaction.atomic
def alert_delete(*, alert: RegressionAlert) -> None:
    """Delete the alert with what it found (its events go by cascade)."""
    alert.delete()


def previous_run(run: Run, system_id: int) -> Run | None:
    """The dataset's latest run that ended before this one and graded this system (a judge
    canary or a stability pass checks another run: never one)."""
    return (
        Run.objects.filter(dataset=run.dataset_id, status__in=Run.FINISHED)
        .not_checks()
        .exclude(kind=Run.Kind.CROSS_EVALUATION)
        .exclude(pk=run.pk)
        .filter(finished_at__lte=run.finished_at, verdicts__answer__system=system_id)
        .order_by("-finished_at", "-pk")
        .distinct()
        .first()
    )


def check_run(run: Run, *, base_url: str = "") -> list[AlertEvent]:
    """Find this run's regressions for every active alert of its dataset, record each once
    and queue its sending. Safe to call twice: an event already recorded is not recorded,
    nor sent, again. Returns the events this call recorded.

    A judge canary (evaluation.agreement.canary) is measured when it ends, then the run it
    checks is checked. A run whose canary is still running waits for it; one whose canary
    named a changed judge raises "judge-changed" events instead of regressions."""
    if run.canary_for_id is not None:
        if run.status in Run.FINISHED:
            canary.record(run)
        checked = Run.objects.select_related("dataset").get(pk=run.canary_for_id)
        return check_run(checked, base_url=base_url)
    if run.status not in Run.FINISHED or run.kind == Run.Kind.CROSS_EVALUATION:
        return []
    if run.stability_for_id is not None:
        return []  # a stability pass measures its run's judge; it is no system's run
    if run.canaries.filter(status__in=(Run.Status.PENDING, Run.Status.RUNNING)).exists():
        return []  # its end checks this run
    alerts = list(RegressionAlert.objects.filter(dataset=run.dataset_id, active=True))
    if not alerts:
        return []
    checked_by = canary_of(run)
    ended = checked_by is not None and checked_by.status in Run.FINISHED
    if ended and not checked_by.canary_result:
        # Ended, but its own check (which measures it) has not run yet: measure it here, or
        # this run would be judged without it. Measuring twice keeps the same figures.
        canary.record(checked_by)
    changed = checked_by.canary_result.get("changed") if checked_by is not None else None
    data = sel.load_run(run, parts=())  # the per-query scores only
    systems = dict(summaries.systems_of(data))
    base_url = base_url or site.site_url()
    events = []
    loaded: dict[int, summaries.RunData] = {}
    for alert in alerts:
        for system_id, name in systems.items():
            if alert.system_id is not None and alert.system_id != system_id:
                continue
            previous = previous_run(run, system_id)
            if previous is None:
                continue
            if previous.pk not in loaded:
                loaded[previous.pk] = sel.load_run(previous, parts=())
            comparison = summaries.compare_runs(
                loaded[previous.pk], data, system_a=system_id, system_b=system_id
            )
            t = comparison.test
            if t.difference is None or (t.difference > -alert.threshold and not changed):
                continue
            url = reverse("analytics-compare", args=[run.dataset_id])
            url += f"?a={previous.pk}&b={run.pk}&system_a={system_id}&system_b={system_id}"
            evidence = _linked(regression_evidence(previous, run, system_id), base_url)
            # Within the noise only where the judge's noise was measured: without it, a drop
            # past the threshold is sent as before, its evidence (the paired test) attached.
            noise = evidence["noise_measured"] and not evidence["beyond_noise"] and not changed
            payload = {
                "event": JUDGE_CHANGED if changed else WITHIN_NOISE if noise else "regression",
                "dataset": run.dataset.name,
                "dataset_id": run.dataset_id,
                "system": name,
                "system_id": system_id,
                "run": {"id": run.pk, "name": str(run)},
                "previous": {"id": previous.pk, "name": str(previous)},
                "before": t.mean_a,
                "after": t.mean_b,
                "difference": t.difference,
                "threshold": alert.threshold,
                "queries": t.n,
                "sign_p": t.sign_p,
                "bootstrap_p": t.bootstrap_p,
                "comparison_url": f"{base_url}{url}",
                "evidence": evidence,
            }
            if changed:
                payload["canary"] = _canary_payload(checked_by, base_url)
            send = not noise
            asked = {
                "email_state": Delivery.PENDING if send and alert.emails.strip() else Delivery.NONE,
                "webhook_state": Delivery.PENDING if send and alert.webhook_url else Delivery.NONE,
            }
            try:
                with transaction.atomic():
                    event = AlertEvent.objects.create(
                        alert=alert, run=run, previous=previous, system_id=system_id,
                        before=t.mean_a, after=t.mean_b, difference=t.difference,
                        sign_p=t.sign_p, bootstrap_p=t.bootstrap_p, payload=payload, **asked,
                    )  # fmt: skip
            except IntegrityError:
                continue  # recorded by an earlier delivery of this task: queued below
            events.append(event)
    _queue_pending(run)
    return events


def _canary_payload(checked_by: Run, base_url: str) -> dict:
    """What the canary found: the judges changed, each judge's agreement now and before."""
    result = checked_by.canary_result
    before = result.get("previous_judges") or {}
    return {
        "run": {"id": checked_by.pk, "name": str(checked_by)},
        "run_url": f"{base_url}{reverse('run-detail', args=[checked_by.pk])}",
        "changed": result["changed"],
        "judges": {
            name: {"now": figure, "before": before.get(name)}
            for name, figure in result["judges"].items()
        },
    }


def _linked(evidence: dict, base_url: str) -> dict:
    """The evidence's queries and criteria with the pages that show them."""
    for row in (*evidence["queries"], *evidence["criteria"]):
        row["url"] = f"{base_url}{reverse('query-detail', args=[row['query_id']])}"
    return evidence


def _queue_pending(run: Run) -> None:
    """Queue the sending of every event of the run still waiting for its first send: the
    ones just recorded, and on a redelivery of the check those an earlier delivery recorded
    but may have died before queuing. A second message for an event sends nothing twice
    (delivery.py claims every send)."""
    pending = AlertEvent.objects.filter(run=run).filter(
        Q(email_state=Delivery.PENDING) | Q(webhook_state=Delivery.PENDING)
    )
    for event_id in pending.values_list("pk", flat=True):
        signature = task_names.signature(task_names.SEND_ALERT_TASK, (event_id,))
        transaction.on_commit(partial(signature.apply_async))
