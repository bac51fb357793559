from __future__ import annotations

from django.contrib import admin

from evaluation.models import Answer, System


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
