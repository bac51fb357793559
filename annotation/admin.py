from __future__ import annotations

from django.contrib import admin
from guardian.admin import GuardedModelAdmin

from annotation.models import Checklist, Criterion, Dataset, Query


@admin.register(Dataset)
class DatasetAdmin(GuardedModelAdmin):
    """Object permissions (dataset members) are managed from the "Object permissions" page."""

    list_display = ["name", "experts_per_query", "show_submitted_checklists", "created_at"]
    search_fields = ["name"]


@admin.register(Query)
class QueryAdmin(admin.ModelAdmin):
    list_display = ["id", "dataset", "query_date", "category", "status"]
    list_filter = ["dataset", "status", "category"]
    search_fields = ["text"]


class CriterionInline(admin.TabularInline):
    model = Criterion
    extra = 0


@admin.register(Checklist)
class ChecklistAdmin(admin.ModelAdmin):
    list_display = ["id", "query", "author", "status", "updated_at"]
    list_filter = ["status", "query__dataset"]
    raw_id_fields = ["query"]
    inlines = [CriterionInline]
