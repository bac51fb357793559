"""The audit history in the admin: one read-only list of every change, filterable by model
and person, beside the per-object "History" pages (SimpleHistoryAdmin)."""

from __future__ import annotations

from django.contrib import admin

from audit.models import AUDITED


class HistoryAdmin(admin.ModelAdmin):
    list_display = ["history_date", "history_type", "history_user", "history_object_id"]
    list_filter = ["history_type", "history_date"]
    date_hierarchy = "history_date"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def history_object_id(self, record) -> int:
        return record.id


for model in AUDITED:
    admin.site.register(model.history.model, HistoryAdmin)
