"""What the pages of a dataset's settings forms (schedules, alerts) share: the form's data
and the status of the page that shows it."""

from __future__ import annotations

from django.forms import BaseForm
from django.http import HttpRequest, QueryDict


def posted(request: HttpRequest) -> QueryDict | None:
    """The form's data on a POST, None (an unbound form) otherwise."""
    # Not `request.POST or None`: an empty POST is a submitted form with errors, not a GET.
    return request.POST if request.method == "POST" else None


def form_status(form: BaseForm) -> int:
    """400 for a submitted form with errors (so that clients and tests see the refusal), else
    200."""
    return 400 if form.is_bound and form.errors else 200
