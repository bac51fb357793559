from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db import models
from simple_history.admin import SimpleHistoryAdmin

from evaluation.alerts import webhooks
from evaluation.alerts.models import AlertEvent, RegressionAlert
from evaluation.answers.models import Answer, System
from evaluation.archive import services as archive
from evaluation.formality.models import FormalityAdvice
from evaluation.judges.models import Judge, Panel, PanelMember
from evaluation.judging.keys import base_url_problem, shown_url
from evaluation.runs.models import Run, Verdict


@admin.register(System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "created_at"]
    search_fields = ["name", "version"]


@admin.register(Answer)
class AnswerAdmin(admin.ModelAdmin):
    list_display = ["id", "system", "query", "run_label", "created_at"]
    list_filter = ["system", "query__dataset"]
    raw_id_fields = ["query"]
    search_fields = ["external_id", "text"]


class JudgeAdminForm(forms.ModelForm):
    """The base URL is checked here as on the Judges page (keys.base_url_problem); the
    admin gives the model and fields."""

    def clean_base_url(self) -> str:
        url = self.cleaned_data["base_url"]
        if problem := base_url_problem(url):
            raise forms.ValidationError(problem)
        return url


@admin.register(Judge)
class JudgeAdmin(SimpleHistoryAdmin):
    form = JudgeAdminForm
    list_display = ["name", "model", "shown_base_url", "api_key_env", "is_formality_judge"]
    list_filter = ["is_formality_judge"]
    # A judge's endpoint is https unless typed otherwise; the explicit scheme also silences
    # Django 5's RemovedInDjango60Warning about URLField's changing default.
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    @admin.display(description="Base URL", ordering="base_url")
    def shown_base_url(self, judge: Judge) -> str:
        return shown_url(judge.base_url)


@admin.register(FormalityAdvice)
class FormalityAdviceAdmin(admin.ModelAdmin):
    list_display = ["criterion", "status", "specific", "deterministic", "self_contained", "yes_no"]
    list_filter = ["status"]
    raw_id_fields = ["criterion"]
    readonly_fields = ["raw_output", "error"]


class PanelMemberInline(admin.TabularInline):
    model = PanelMember
    extra = 1


@admin.register(Panel)
class PanelAdmin(SimpleHistoryAdmin):
    list_display = ["name", "method", "threshold"]
    inlines = [PanelMemberInline]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """Start, cancel and resume runs from the dataset's Runs page: it queues the work."""

    list_display = [
        "__str__", "dataset", "panel", "status", "expected", "started_at", "archived_at",
    ]  # fmt: skip
    list_filter = ["status", "dataset"]
    readonly_fields = [
        "status", "expected", "started_at", "finished_at", "created_by", "archived_at",
    ]  # fmt: skip
    actions = ["archive_runs", "restore_runs"]

    @admin.action(description="Archive the selected runs' verdicts (Parquet)")
    def archive_runs(self, request, queryset) -> None:
        """Each run on its own (evaluation.archive.services): one refused says why, the
        others go on. Slow for big runs (seconds per million verdicts): `manage.py
        archive_runs` is the way for many."""
        self._each(request, queryset, archive.archive_run, "archived", by=request.user)

    @admin.action(description="Restore the selected archived runs' verdicts")
    def restore_runs(self, request, queryset) -> None:
        self._each(request, queryset, archive.restore_run, "restored")

    def _each(self, request, queryset, act, done: str, **kwargs) -> None:
        for run in queryset.order_by("pk"):
            try:
                act(run, **kwargs)
            except archive.ArchiveError as error:
                self.message_user(request, str(error), messages.ERROR)
            else:
                self.message_user(request, f"Run {run.pk} {done}.", messages.SUCCESS)


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ["run", "answer", "criterion", "judge", "sample", "outcome", "cache_hit"]
    list_filter = ["outcome", "cache_hit", "judge"]
    raw_id_fields = ["run", "answer", "criterion"]

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # verdicts are evidence: traced, never edited by hand


class RegressionAlertAdminForm(forms.ModelForm):
    """The webhook's address is checked here as on the Alerts page (webhooks.problem)."""

    # Webhooks are https: say so now rather than inherit Django 6's changing default.
    webhook_url = forms.URLField(
        required=False, max_length=200, assume_scheme="https", help_text="Receives a JSON POST."
    )

    class Meta:
        model = RegressionAlert
        fields = ("dataset", "system", "threshold", "emails", "webhook_url", "secret_env",
                  "active", "created_by")  # fmt: skip

    def clean_webhook_url(self) -> str:
        url = self.cleaned_data["webhook_url"]
        if url and (problem := webhooks.problem(url)):
            raise forms.ValidationError(problem)
        return url


# Dataset admins set alerts on the dataset's Alerts page; this is the site-wide view.
@admin.register(RegressionAlert)
class RegressionAlertAdmin(admin.ModelAdmin):
    form = RegressionAlertAdminForm
    list_display = ("dataset", "system", "threshold", "webhook_url", "secret_env", "active")
    list_filter = ("active",)
    raw_id_fields = ("dataset", "system", "created_by")


@admin.register(AlertEvent)
class AlertEventAdmin(admin.ModelAdmin):
    list_display = (
        "run", "previous", "system", "difference", "email_state", "webhook_state",
        "webhook_attempts", "webhook_status",
    )  # fmt: skip
    list_filter = ("email_state", "webhook_state")
    readonly_fields = [f.name for f in AlertEvent._meta.fields]
