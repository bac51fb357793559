"""Regression alerts: when a run ends, compare each system's score with the dataset's
previous ended run holding that system; a drop of at least the alert's threshold is
recorded once (`AlertEvent`) and sent by email and by a signed webhook.

The webhook is a JSON POST; its header `X-Workbench-Signature: sha256=<hex>` is the
HMAC-SHA256 of the exact body bytes with the shared secret (from the environment variable
the alert names), so the receiver can check it came from here and was not changed:

    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    hmac.compare_digest(expected, header.removeprefix("sha256="))
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.urls import reverse

from evaluation.alerts import webhooks
from evaluation.alerts.forms import SECRET_PREFIX, secret_variable_allowed
from evaluation.alerts.models import AlertEvent, RegressionAlert
from evaluation.analytics import selectors as sel
from evaluation.analytics import summaries
from evaluation.models import Run

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from annotation.models import Dataset

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Workbench-Signature"
WEBHOOK_TIMEOUT = 10.0
USER_AGENT = "checklist-workbench-alerts"


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


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def previous_run(run: Run, system_id: int) -> Run | None:
    """The dataset's latest run that ended before this one and graded this system."""
    return (
        Run.objects.filter(dataset=run.dataset_id, status__in=Run.FINISHED)
        .exclude(kind=Run.Kind.CROSS_EVALUATION)
        .exclude(pk=run.pk)
        .filter(finished_at__lte=run.finished_at, verdicts__answer__system=system_id)
        .order_by("-finished_at", "-pk")
        .distinct()
        .first()
    )


@dataclass(frozen=True)
class Delivery:
    emailed: bool
    status: int | None
    error: str


def _post(url: str, body: bytes, secret: str) -> tuple[int | None, str]:
    """The webhook's HTTP status and what went wrong ("" when it took the POST). The URL is
    checked again here (webhooks.check): DNS can change after the alert was saved."""
    headers = {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: sign(body, secret),
        # http.client sends none (urllib did); some firewalls refuse requests without one.
        "User-Agent": USER_AGENT,
    }
    try:
        status = webhooks.post(url, body, headers, timeout=WEBHOOK_TIMEOUT)
    except webhooks.WebhookRefused as refused:
        return None, f"not sent: {refused}"[:300]
    except OSError as error:
        return None, str(error)[:300]
    if 300 <= status < 400:
        return status, f"HTTP {status}: redirects are not followed"
    return status, "" if status < 300 else f"HTTP {status}"


def deliver(event: AlertEvent) -> Delivery:
    alert = event.alert
    body = json.dumps(event.payload, sort_keys=True).encode()
    emailed = False
    recipients = [line.strip() for line in alert.emails.splitlines() if line.strip()]
    if recipients:
        p = event.payload
        send_mail(
            subject=f"Regression: {p['system']} dropped {-p['difference']:.1%} on {p['dataset']}",
            message=(
                f"{p['system']} scored {p['after']:.1%} in run {p['run']['name']} against "
                f"{p['before']:.1%} in run {p['previous']['name']} "
                f"({p['queries']} queries in both; sign test p = {p['sign_p']}).\n\n"
                f"Comparison: {p['comparison_url']}\n"
            ),
            from_email=None,
            recipient_list=recipients,
        )
        emailed = True
    status, error = None, ""
    if alert.webhook_url:
        allowed = alert.secret_env and secret_variable_allowed(alert.secret_env)
        secret = os.environ.get(alert.secret_env, "") if allowed else ""
        if alert.secret_env and not allowed:  # saved before the prefix rule (or in the admin)
            error = f"${alert.secret_env} may not hold a webhook secret: use {SECRET_PREFIX}*"
        elif not secret:
            error = f"no secret in ${alert.secret_env}" if alert.secret_env else "no secret set"
        else:
            status, error = _post(alert.webhook_url, body, secret)
    return Delivery(emailed, status, error)


def check_run(run: Run, *, base_url: str = "") -> list[AlertEvent]:
    """Find this run's regressions for every active alert of its dataset, record and send
    each once. Safe to call twice: an event already recorded is not sent again."""
    if run.status not in Run.FINISHED or run.kind == Run.Kind.CROSS_EVALUATION:
        return []
    alerts = list(RegressionAlert.objects.filter(dataset=run.dataset_id, active=True))
    if not alerts:
        return []
    data = sel.load_run(run, parts=())  # the per-query scores only
    systems = dict(summaries.systems_of(data))
    base_url = base_url or getattr(settings, "SITE_URL", "")
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
            if t.difference is None or t.difference > -alert.threshold:
                continue
            url = reverse("analytics-compare", args=[run.dataset_id])
            url += f"?a={previous.pk}&b={run.pk}&system_a={system_id}&system_b={system_id}"
            payload = {
                "event": "regression",
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
            }
            try:
                with transaction.atomic():
                    event = AlertEvent.objects.create(
                        alert=alert, run=run, previous=previous, system_id=system_id,
                        before=t.mean_a, after=t.mean_b, difference=t.difference,
                        sign_p=t.sign_p, bootstrap_p=t.bootstrap_p, payload=payload,
                    )  # fmt: skip
            except IntegrityError:
                continue  # recorded (and sent) by an earlier delivery of this task
            delivery = deliver(event)
            AlertEvent.objects.filter(pk=event.pk).update(
                emailed=delivery.emailed,
                webhook_status=delivery.status,
                webhook_error=delivery.error,
            )
            events.append(event)
    return events
