"""Dataset admins set regression alerts in pages (issue 12, point 8): add, change, delete,
with clear errors, never another dataset's alert, and the webhook secret never in the app
(only the name of a variable that judges' and the project's secrets cannot be)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.alerts import delivery
from evaluation.alerts.models import AlertEvent, RegressionAlert
from tests.factories import AnswerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def example_hooks(settings):
    """Webhooks on example.com hosts allowed as they are: they resolve nowhere here, and a
    host off the list must resolve to a public address (test_webhook_hosts.py)."""
    settings.ALERT_WEBHOOK_ALLOWED_HOSTS = [".example.com"]


def test_an_admin_adds_changes_and_deletes_an_alert(
    owner_client, owner, dataset, query, example_hooks
):
    system = AnswerFactory(query=query).system
    page = owner_client.get(reverse("dataset-alerts", args=[dataset.pk]))
    assert page.status_code == 200 and system.name in page.content.decode()
    response = owner_client.post(
        reverse("dataset-alerts", args=[dataset.pk]),
        {
            "system": system.pk, "threshold": "0.1", "emails": " a@example.com \n\nb@example.com",
            "webhook_url": "https://hooks.example.com/x", "secret_env": "ALERT_SECRET_NIGHTLY",
            "active": "on",
        },
    )  # fmt: skip
    assert response.status_code == 302
    alert = RegressionAlert.objects.get(dataset=dataset)
    assert (alert.system, alert.threshold, alert.emails, alert.created_by) == (
        system, 0.1, "a@example.com\nb@example.com", owner
    )  # fmt: skip
    edit = reverse("alert-edit", args=[dataset.pk, alert.pk])
    assert owner_client.post(
        edit, {"threshold": "0.2", "emails": "a@example.com", "active": "on"}
    ).status_code == 302  # fmt: skip
    alert.refresh_from_db()
    assert (alert.system, alert.threshold, alert.webhook_url) == (None, 0.2, "")
    delete = reverse("alert-delete", args=[dataset.pk, alert.pk])
    assert owner_client.post(delete).status_code == 302
    assert not RegressionAlert.objects.exists()


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"threshold": "0", "emails": "a@example.com"}, "threshold", "between 0 and 1"),
        ({"threshold": "0.1", "emails": "a@example.com\nnot-an-address"}, "emails", "Line 2"),
        ({"threshold": "0.1", "webhook_url": "https://h.example.com/", "secret_env": "SECRET_KEY"},
         "secret_env", "ALERT_SECRET_"),
        ({"threshold": "0.1", "webhook_url": "https://h.example.com/"}, "secret_env", "needs"),
        ({"threshold": "0.1", "webhook_url": "ftp://h.example.com/", "secret_env":
          "ALERT_SECRET_X"}, "webhook_url", ""),
        ({"threshold": "0.1"}, "__all__", "email addresses, a webhook, or both"),
    ],
)  # fmt: skip
def test_bad_settings_are_refused_naming_the_field(
    owner_client, dataset, data, field, message, example_hooks
):
    response = owner_client.post(reverse("dataset-alerts", args=[dataset.pk]), data)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert field in errors and message in " ".join(errors[field])
    assert not RegressionAlert.objects.exists()


def test_another_datasets_alert_is_not_found(owner_client, owner, dataset):
    from annotation import services

    other = services.dataset_create(name="Other", by=owner)
    alert = RegressionAlert.objects.create(dataset=other, emails="a@example.com")
    assert owner_client.get(reverse("alert-edit", args=[dataset.pk, alert.pk])).status_code == 404
    response = owner_client.post(reverse("alert-delete", args=[dataset.pk, alert.pk]))
    assert response.status_code == 404 and RegressionAlert.objects.filter(pk=alert.pk).exists()


def test_a_secret_variable_outside_the_prefix_is_never_read(dataset, monkeypatch):
    """An alert saved in the admin naming SECRET_KEY must not sign with the project's key."""
    monkeypatch.setenv("SECRET_KEY", "the project's own secret")
    alert = RegressionAlert(
        dataset=dataset, webhook_url="http://127.0.0.1:9/", secret_env="SECRET_KEY"
    )
    event = AlertEvent(alert=alert, payload={"x": 1})
    attempt = delivery.post_webhook(event)
    assert attempt.status is None and "may not hold a webhook secret" in attempt.error
    assert not attempt.retry


def test_the_pages_show_the_shared_form_and_row_buttons(owner_client, dataset):
    """The list and edit pages share their form card and row buttons (includes): each still
    shows its own form id, button words and the alert's own Edit and Delete addresses; an
    empty POST is a submitted form with errors (400), not a GET."""
    alert = RegressionAlert.objects.create(dataset=dataset, emails="a@example.com")
    page = owner_client.get(reverse("dataset-alerts", args=[dataset.pk])).content.decode()
    assert 'id="alert-form"' in page and "Add an alert</h2>" in page
    assert '<button type="submit" class="primary">Add alert</button>' in page
    assert f'href="{reverse("alert-edit", args=[dataset.pk, alert.pk])}"' in page
    assert f'action="{reverse("alert-delete", args=[dataset.pk, alert.pk])}"' in page
    edit = owner_client.get(reverse("alert-edit", args=[dataset.pk, alert.pk])).content.decode()
    assert (
        'id="alert-form"' in edit and '<button type="submit" class="primary">Save</button>' in edit
    )
    assert "<h2>" not in edit.split('id="alert-form"')[0].rsplit('<section class="card">', 1)[1]
    assert owner_client.post(reverse("dataset-alerts", args=[dataset.pk])).status_code == 400
