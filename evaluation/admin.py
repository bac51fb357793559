from __future__ import annotations

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from evaluation.models import (
    Answer,
    FormalityAdvice,
    Judge,
    Panel,
    PanelMember,
    Run,
    System,
    Verdict,
)


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


@admin.register(Judge)
class JudgeAdmin(SimpleHistoryAdmin):
    list_display = ["name", "model", "base_url", "api_key_env", "is_formality_judge"]
    list_filter = ["is_formality_judge"]


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

    list_display = ["__str__", "dataset", "panel", "status", "expected", "started_at"]
    list_filter = ["status", "dataset"]
    readonly_fields = ["status", "expected", "started_at", "finished_at", "created_by"]


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ["run", "answer", "criterion", "judge", "sample", "outcome", "cache_hit"]
    list_filter = ["outcome", "cache_hit", "judge"]
    raw_id_fields = ["run", "answer", "criterion"]

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # verdicts are evidence: traced, never edited by hand
