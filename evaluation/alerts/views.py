"""Regression alerts of a dataset, set by its admins in pages (they were only in the
Django admin): the alerts, what each found and sent, a form to add or change one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation import roles
from annotation.access import access_dataset
from config.form_pages import form_status, posted
from evaluation.alerts import services
from evaluation.alerts.forms import AlertForm
from evaluation.alerts.models import AlertEvent, RegressionAlert

RECENT_EVENTS = 20


@require_http_methods(["GET", "POST"])
@login_required
def dataset_alerts(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_dataset(request.user, pk, roles.CHANGE)
    form = AlertForm(posted(request), dataset=dataset)
    if request.method == "POST" and form.is_valid():
        services.alert_save(dataset=dataset, by=request.user, **form.cleaned_data)
        messages.success(request, "Alert added: it is checked each time a run ends.")
        return redirect("dataset-alerts", pk=dataset.pk)
    alerts = RegressionAlert.objects.filter(dataset=dataset).select_related("system")
    events = (
        AlertEvent.objects.filter(alert__dataset=dataset)
        .select_related("run", "previous", "system")
        .order_by("-created_at", "-pk")[:RECENT_EVENTS]
    )
    context = {"dataset": dataset, "form": form, "alerts": alerts, "events": events}
    return render(
        request, "evaluation/alerts/dataset_alerts.html", context, status=form_status(form)
    )


@require_http_methods(["GET", "POST"])
@login_required
def alert_edit(request: HttpRequest, pk: int, alert_pk: int) -> HttpResponse:
    dataset = access_dataset(request.user, pk, roles.CHANGE)
    alert = get_object_or_404(RegressionAlert, pk=alert_pk, dataset=dataset)
    form = AlertForm(posted(request), instance=alert, dataset=dataset)
    if request.method == "POST" and form.is_valid():
        services.alert_save(dataset=dataset, alert=alert, **form.cleaned_data)
        messages.success(request, "Alert saved.")
        return redirect("dataset-alerts", pk=dataset.pk)
    context = {"dataset": dataset, "form": form, "alert": alert}
    return render(request, "evaluation/alerts/alert_form.html", context, status=form_status(form))


@require_POST
@login_required
def alert_delete(request: HttpRequest, pk: int, alert_pk: int) -> HttpResponse:
    dataset = access_dataset(request.user, pk, roles.CHANGE)
    services.alert_delete(alert=get_object_or_404(RegressionAlert, pk=alert_pk, dataset=dataset))
    messages.success(request, "Alert deleted, with what it had found.")
    return redirect("dataset-alerts", pk=dataset.pk)
