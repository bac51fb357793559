"""The emails people receive about their access: an invitation, and a notice that an
existing account was given a role. Plain text, through Django's email backend."""

from __future__ import annotations

import logging
import smtplib
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from accounts.models import Invitation
    from annotation.models import Dataset

logger = logging.getLogger(__name__)


class NotSent(Exception):
    """The email backend refused or could not reach the mail server."""


def absolute(path: str) -> str:
    # SITE_URL, not the request's Host header: a link in an email must point at this site
    # whatever host a request came in under.
    return settings.SITE_URL.rstrip("/") + path


def _one_line(text: str) -> str:
    # A dataset name is free text: a newline in a subject would be a header injection, and
    # Django refuses it with an exception.
    return " ".join(text.split())


def _send(subject: str, template: str, context: dict, to: str) -> None:
    body = render_to_string(template, context)
    try:
        send_mail(_one_line(subject), body, None, [to])
    except (smtplib.SMTPException, OSError) as exc:
        logger.exception("Could not send %r to %s", subject, to)
        raise NotSent(type(exc).__name__) from exc


def send_invitation(*, invitation: Invitation, key: str) -> None:
    """Raises NotSent; the caller rolls the invitation back, so no link exists unsent."""
    context = {
        "invitation": invitation,
        "dataset": invitation.dataset,
        "inviter": invitation.invited_by,
        "link": absolute(reverse("invitation-accept", args=[key])),
    }
    subject = f"You are invited to {invitation.dataset.name} on Checklist Workbench"
    _send(subject, "accounts/email/invitation.txt", context, invitation.email)


def send_role_granted(*, dataset: Dataset, user: AbstractBaseUser, role: str, by) -> bool:
    """Best effort: the role is granted whether or not the notice goes. False if not sent."""
    context = {
        "dataset": dataset,
        "user": user,
        "role": role,
        "inviter": by,
        "link": absolute(reverse("dataset-detail", args=[dataset.pk])),
    }
    try:
        subject = f"You now have access to {dataset.name}"
        _send(subject, "accounts/email/role_granted.txt", context, user.email)
    except NotSent:
        return False
    return True
