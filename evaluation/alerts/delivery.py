"""Sending a regression's email and webhook: each at most once, the webhook retried.

`services.check_run` records each regression as an `AlertEvent` whose email and webhook
are `pending` (when the alert has addresses, a URL) and queues `evaluation.send_alert`,
which calls `deliver`. Every send is claimed first, by one conditional UPDATE of its state
(pending or retrying → sending), so whatever delivers the task twice (a redelivery after a
worker died, a second check of the run, a retry beside the message it replaced) sends
nothing twice:

- The email is tried once; an SMTP error is recorded on the event, not retried.
- The webhook is tried up to ALERT_WEBHOOK_RETRY_ATTEMPTS times. A 2xx answer: delivered.
  No connection, a timeout, a name that did not resolve, 408, 429 or 5xx: tried again
  after a growing random wait (transient.backoff with ALERT_WEBHOOK_RETRY_BASE_DELAY and
  _MAX_DELAY). Anything else (a redirect, another 4xx, a host no longer allowed, no
  secret): failed at once, as trying again would fail the same way. Every attempt is
  logged on the event, where the Alerts page shows it.

The webhook is a JSON POST; its header `X-Workbench-Signature: sha256=<hex>` is the
HMAC-SHA256 of the exact body bytes with the shared secret (from the environment variable
the alert names), so the receiver can check it came from here and was not changed:

    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    hmac.compare_digest(expected, header.removeprefix("sha256="))

`X-Workbench-Event` holds the event's id, the same on every attempt: a receiver that took
a POST but answered too late (a timeout, retried) can tell the retry from a new regression.

A send whose worker died during it is the one case where nobody knows whether it went: it
stays `sending`. A delivery of the task that finds a send `sending` comes back once the send
is LOST_AFTER old and, if it is still `sending`, records it failed with "outcome unknown"
rather than risk sending it twice.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import os
from dataclasses import dataclass

from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone

from evaluation.alerts import webhooks
from evaluation.alerts.forms import SECRET_PREFIX, secret_variable_allowed
from evaluation.alerts.models import AlertEvent
from evaluation.transient import backoff

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Workbench-Signature"
EVENT_HEADER = "X-Workbench-Event"
WEBHOOK_TIMEOUT = 10.0
USER_AGENT = "checklist-workbench-alerts"
# Longer than any send can take (a POST times out after WEBHOOK_TIMEOUT per address): a send
# still `sending` after this lost its worker.
LOST_AFTER = dt.timedelta(minutes=5)
LOST = "outcome unknown: the worker stopped while sending; not sent again"
LOG_KEPT = 50  # attempts kept in the event's log (ALERT_WEBHOOK_RETRY_ATTEMPTS raised high)

Delivery = AlertEvent.Delivery


@dataclass(frozen=True)
class Attempt:
    """One webhook POST: the HTTP status (None without an answer), what went wrong ("" when
    the receiver took it) and whether another attempt may do better."""

    status: int | None
    error: str
    retry: bool = False

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def deliver(*, event_id: int) -> float | None:
    """Send the event's email and its webhook's next attempt, whichever are due. Returns the
    seconds until something is due again here (the webhook's next attempt; a send another
    delivery holds, to see how it ended), or None when nothing is left to do."""
    event = AlertEvent.objects.select_related("alert").filter(pk=event_id).first()
    if event is None:  # deleted with its alert or dataset
        return None
    now = timezone.now()
    waits = []
    if event.email_state == Delivery.PENDING:
        _email(event, now)
    elif event.email_state == Delivery.SENDING:
        waits.append(_held(event, "email", event.emailed_at, now))
    if event.webhook_state in (Delivery.PENDING, Delivery.RETRYING):
        waits.append(_webhook(event, now))
    elif event.webhook_state == Delivery.SENDING:
        waits.append(_held(event, "webhook", event.webhook_attempted_at, now))
    return min((w for w in waits if w is not None), default=None)


def _held(
    event: AlertEvent, channel: str, since: dt.datetime | None, now: dt.datetime
) -> float | None:
    """A send another delivery claimed at `since`: the seconds until it counts as lost, or
    None once it does, recorded failed ("outcome unknown") and never sent again."""
    if since is not None and now - since < LOST_AFTER:
        return (since + LOST_AFTER - now).total_seconds()
    logger.warning("Alert event %s: the %s's worker stopped while sending it", event.pk, channel)
    lost = AlertEvent.objects.filter(pk=event.pk, **{f"{channel}_state": Delivery.SENDING})
    if channel == "email":
        lost.update(email_state=Delivery.FAILED, email_error=LOST)
    else:
        lost.filter(webhook_attempts=event.webhook_attempts).update(
            webhook_state=Delivery.FAILED, webhook_error=LOST, webhook_status=None
        )
    return None


def _email(event: AlertEvent, now: dt.datetime) -> None:
    claimed = AlertEvent.objects.filter(pk=event.pk, email_state=Delivery.PENDING).update(
        email_state=Delivery.SENDING, emailed_at=now
    )
    if not claimed:
        return  # another delivery of the task has it
    try:
        send_email(event)
    except Exception as error:  # SMTP, network, a bad address: recorded for the admin
        logger.warning("Alert event %s: the email failed: %s", event.pk, error)
        AlertEvent.objects.filter(pk=event.pk).update(
            email_state=Delivery.FAILED, email_error=(str(error) or type(error).__name__)[:300]
        )
        return
    AlertEvent.objects.filter(pk=event.pk).update(email_state=Delivery.DELIVERED)


def _webhook(event: AlertEvent, now: dt.datetime) -> float | None:
    if event.webhook_retry_at is not None and event.webhook_retry_at > now:
        # A second message of the task, early: the attempt is due later, come back then.
        return (event.webhook_retry_at - now).total_seconds()
    number = event.webhook_attempts + 1
    claimed = AlertEvent.objects.filter(
        pk=event.pk, webhook_state=event.webhook_state, webhook_attempts=event.webhook_attempts
    ).update(
        webhook_state=Delivery.SENDING, webhook_attempts=number, webhook_attempted_at=now,
        webhook_retry_at=None,
    )  # fmt: skip
    if not claimed:
        return None  # another delivery of the task took this attempt
    attempt = post_webhook(event)
    limit = max(1, settings.ALERT_WEBHOOK_RETRY_ATTEMPTS)
    entry = {"at": now.isoformat(), "status": attempt.status, "error": attempt.error}
    fields: dict[str, object] = {
        "webhook_status": attempt.status,
        "webhook_error": attempt.error,
        "webhook_log": [*event.webhook_log, entry][-LOG_KEPT:],
    }
    wait = None
    if attempt.delivered:
        fields |= {"webhook_state": Delivery.DELIVERED, "webhook_delivered_at": timezone.now()}
    elif attempt.retry and number < limit:
        wait = backoff(
            number - 1,
            base=settings.ALERT_WEBHOOK_RETRY_BASE_DELAY,
            cap=settings.ALERT_WEBHOOK_RETRY_MAX_DELAY,
        )
        retry_at = timezone.now() + dt.timedelta(seconds=wait)
        fields |= {"webhook_state": Delivery.RETRYING, "webhook_retry_at": retry_at}
        logger.info(
            "Alert event %s: webhook attempt %s of %s failed (%s); next in %.0f s",
            event.pk, number, limit, attempt.error, wait,
        )  # fmt: skip
    else:
        fields["webhook_state"] = Delivery.FAILED
        logger.warning(
            "Alert event %s: webhook failed after %s attempt(s): %s",
            event.pk,
            number,
            attempt.error,
        )
    AlertEvent.objects.filter(
        pk=event.pk, webhook_state=Delivery.SENDING, webhook_attempts=number
    ).update(**fields)
    return wait


def send_email(event: AlertEvent) -> None:
    """The email to the alert's addresses (Django's EMAIL_* settings); raises on failure."""
    recipients = [line.strip() for line in event.alert.emails.splitlines() if line.strip()]
    if not recipients:
        return
    p = event.payload
    subject = f"Regression: {p['system']} dropped {-p['difference']:.1%} on {p['dataset']}"
    canary = ""
    if p["event"] == "judge-changed":
        subject = f"Judge changed? {', '.join(p['canary']['changed'])} on {p['dataset']}"
        canary = (
            f"The judge canary found {', '.join(p['canary']['changed'])} agreeing with the "
            "human labels less than last time: the score change below may be the judge's, "
            "not the system's.\n\n"
        )
    send_mail(
        subject=subject,
        message=(
            f"{canary}{p['system']} scored {p['after']:.1%} in run {p['run']['name']} against "
            f"{p['before']:.1%} in run {p['previous']['name']} "
            f"({p['queries']} queries in both; sign test p = {p['sign_p']}).\n\n"
            f"Comparison: {p['comparison_url']}\n"
        ),
        from_email=None,
        recipient_list=recipients,
    )


def post_webhook(event: AlertEvent) -> Attempt:
    """One signed POST of the event to its alert's webhook. The URL is checked again here
    (webhooks.check): DNS can change after the alert was saved."""
    alert = event.alert
    allowed = alert.secret_env and secret_variable_allowed(alert.secret_env)
    secret = os.environ.get(alert.secret_env, "") if allowed else ""
    if alert.secret_env and not allowed:  # saved before the prefix rule (or in the admin)
        return Attempt(
            None, f"${alert.secret_env} may not hold a webhook secret: use {SECRET_PREFIX}*"
        )
    if not secret:
        return Attempt(
            None, f"no secret in ${alert.secret_env}" if alert.secret_env else "no secret set"
        )
    body = json.dumps(event.payload, sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: sign(body, secret),
        # http.client sends none (urllib did); some firewalls refuse requests without one.
        "User-Agent": USER_AGENT,
    }
    if event.pk is not None:
        headers[EVENT_HEADER] = str(event.pk)
    try:
        status = webhooks.post(alert.webhook_url, body, headers, timeout=WEBHOOK_TIMEOUT)
    except webhooks.Unresolved as unresolved:  # DNS may answer on the next try
        return Attempt(None, f"not sent: {unresolved}"[:300], retry=True)
    except webhooks.WebhookRefused as refused:
        return Attempt(None, f"not sent: {refused}"[:300])
    except OSError as error:  # refused, reset, timed out
        return Attempt(None, (str(error) or type(error).__name__)[:300], retry=True)
    if 200 <= status < 300:
        return Attempt(status, "")
    if 300 <= status < 400:
        return Attempt(status, f"HTTP {status}: redirects are not followed")
    # 408 and 429 say "later"; a 5xx is the receiver's own trouble. Other 4xx would repeat.
    return Attempt(status, f"HTTP {status}", retry=status in (408, 429) or status >= 500)
