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

from config import site as site_address

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from accounts.models import Invitation
    from annotation.models import Dataset

logger = logging.getLogger(__name__)


# Where the configured email backend puts a message, in words for the members page: an admin
# trying invitations on a development machine must not have to guess (issue 40).
DELIVERY = {
    "django.core.mail.backends.console.EmailBackend": "printed on the web server's console "
    "(the terminal it runs in), not sent",
    "django.core.mail.backends.locmem.EmailBackend": "kept in memory (a test run), not sent",
    "django.core.mail.backends.dummy.EmailBackend": "thrown away (the dummy backend), not sent",
}


def delivery() -> str:
    """Where this site's emails go, for someone testing invitations; empty when they are
    really sent (SMTP), which needs no explanation."""
    backend = settings.EMAIL_BACKEND
    if backend == "django.core.mail.backends.filebased.EmailBackend":
        return (
            f"written as files to {settings.EMAIL_FILE_PATH} on the server (one file per "
            "message, named by the time it was written), not sent"
        )
    if backend == "django.core.mail.backends.smtp.EmailBackend":
        return ""
    return DELIVERY.get(backend, f"handed to {backend}")


class NotSent(Exception):
    """The email backend refused or could not reach the mail server."""


def absolute(path: str, site: str = "") -> str:
    """`site` (the inviter's address, config.site.site_url of their request) + path; without
    it, config.site's choice (SITE_URL, or the development server's default address)."""
    return (site or site_address.site_url()).rstrip("/") + path


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


def send_invitation(*, invitation: Invitation, key: str, site: str = "") -> None:
    """Raises NotSent; the caller rolls the invitation back, so no link exists unsent."""
    context = {
        "invitation": invitation,
        "dataset": invitation.dataset,
        "inviter": invitation.invited_by,
        "link": absolute(reverse("invitation-accept", args=[key]), site),
    }
    subject = f"You are invited to {invitation.dataset.name} on Checklist Workbench"
    _send(subject, "accounts/email/invitation.txt", context, invitation.email)


def send_role_granted(
    *, dataset: Dataset, user: AbstractBaseUser, role: str, by, site: str = ""
) -> bool:
    """Best effort: the role is granted whether or not the notice goes. False if not sent."""
    context = {
        "dataset": dataset,
        "user": user,
        "role": role,
        "inviter": by,
        "link": absolute(reverse("dataset-detail", args=[dataset.pk]), site),
    }
    try:
        subject = f"You now have access to {dataset.name}"
        _send(subject, "accounts/email/role_granted.txt", context, user.email)
    except NotSent:
        return False
    return True
