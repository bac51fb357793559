"""The audit history in the admin: one read-only list of every change, filterable by model
and person, beside the per-object "History" pages (SimpleHistoryAdmin); and the dataset
role changes, read-only too."""

from __future__ import annotations

from django.contrib import admin

from audit.models import AUDITED, RoleChange


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class HistoryAdmin(ReadOnlyAdmin):
    list_display = ["history_date", "history_type", "history_user", "history_object_id"]
    list_filter = ["history_type", "history_date"]
    date_hierarchy = "history_date"

    def history_object_id(self, record) -> int:
        return record.id


for model in AUDITED:
    admin.site.register(model.history.model, HistoryAdmin)


@admin.register(RoleChange)
class RoleChangeAdmin(ReadOnlyAdmin):
    list_display = [
        "changed_at",
        "dataset_name",
        "username",
        "before",
        "after",
        "changed_by",
        "via",
    ]
    list_filter = ["via", "changed_at"]
    search_fields = ["dataset_name", "username"]
    date_hierarchy = "changed_at"
    list_select_related = ["changed_by"]
