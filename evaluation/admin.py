from __future__ import annotations

from django.contrib import admin

from evaluation.models import Answer, FormalityAdvice, Judge, System


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
class JudgeAdmin(admin.ModelAdmin):
    list_display = ["name", "model", "base_url", "api_key_env", "is_formality_judge"]
    list_filter = ["is_formality_judge"]


@admin.register(FormalityAdvice)
class FormalityAdviceAdmin(admin.ModelAdmin):
    list_display = ["criterion", "status", "specific", "deterministic", "self_contained", "yes_no"]
    list_filter = ["status"]
    raw_id_fields = ["criterion"]
    readonly_fields = ["raw_output", "error"]
