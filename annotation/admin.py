from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from guardian.admin import GuardedModelAdmin
from simple_history.admin import SimpleHistoryAdmin

from annotation import scoring, services
from annotation.models import (
    Checklist,
    ChecklistEvent,
    Citation,
    Criterion,
    Dataset,
    DomainTag,
    Guideline,
    Query,
    QueryCategory,
    SourceType,
)

BACKGROUND_DELETE = (
    "Deleted datasets are hidden at once; a worker deletes their rows in the background."
)


class DatasetAdminForm(forms.ModelForm):
    """A strategy is checked against the dataset's criteria as on the settings page
    (annotation.scoring)."""

    class Meta:
        model = Dataset
        fields = "__all__"  # noqa: DJ007 (the admin's own field list decides)

    def clean(self) -> dict:
        cleaned = super().clean()
        if cleaned.get("scoring"):
            scoring.validate_dataset_scoring(self.instance, cleaned["scoring"])
        return cleaned


@admin.register(Dataset)
class DatasetAdmin(GuardedModelAdmin):
    """Object permissions (dataset members) are managed from the "Object permissions" page."""

    form = DatasetAdminForm

    list_display = [
        "name", "guideline", "experts_per_query", "show_submitted_checklists", "deleting_since"
    ]  # fmt: skip
    list_filter = [("deleting_since", admin.EmptyFieldListFilter)]
    readonly_fields = ["deleting_since", "deletion_progress_at"]
    search_fields = ["name"]

    # Deleting goes the API's way (annotation.services.dataset_delete): mark, hide, and let
    # a worker delete the rows in batches. Django's own delete would collect every row of
    # the dataset in the request, twice (the confirmation page lists them all), and time
    # out on a big dataset exactly as the API did.
    def get_deleted_objects(self, objs, request):
        names = [f"{obj} (deleted in the background by a worker)" for obj in objs]
        return names, {Dataset._meta.verbose_name_plural: len(names)}, set(), []

    def delete_model(self, request, obj: Dataset) -> None:
        services.dataset_delete(dataset=obj)
        self.message_user(request, BACKGROUND_DELETE, messages.INFO)

    def delete_queryset(self, request, queryset) -> None:
        for dataset in queryset:
            services.dataset_delete(dataset=dataset)
        self.message_user(request, BACKGROUND_DELETE, messages.INFO)


@admin.register(QueryCategory)
class QueryCategoryAdmin(admin.ModelAdmin):
    list_display = ["name", "position"]
    list_editable = ["position"]


@admin.register(DomainTag)
class DomainTagAdmin(admin.ModelAdmin):
    search_fields = ["name"]


@admin.register(SourceType)
class SourceTypeAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "is_banned"]
    list_filter = ["is_banned"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(Guideline)
class GuidelineAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "created_at"]


@admin.register(Query)
class QueryAdmin(admin.ModelAdmin):
    list_display = ["id", "dataset", "query_date", "category", "status"]
    list_filter = ["dataset", "status", "category"]
    search_fields = ["text"]
    filter_horizontal = ["tags", "assigned_experts"]


class CriterionFormSet(forms.BaseInlineFormSet):
    """Every criterion's weight against the checklist's strategy as the page leaves it (its
    own, else its dataset's; annotation.scoring): a change of either is checked here."""

    def clean(self) -> None:
        super().clean()
        checklist = self.instance
        if checklist.pk is None:
            return
        strategy = scoring.strategy_of(checklist.query.dataset.scoring, checklist.scoring)
        weights = [
            (f"criterion {form.cleaned_data.get('position') or n + 1}", form.cleaned_data["weight"])
            for n, form in enumerate(self.forms)
            if form.cleaned_data.get("weight") is not None
        ]
        try:
            scoring.validate_scoring(strategy, weights, field="weight")
        except scoring.ScoringRefused as exc:
            raise forms.ValidationError(f"{exc.criterion}: {exc.problem}") from exc


class CriterionInline(admin.TabularInline):
    model = Criterion
    formset = CriterionFormSet
    extra = 0
    fields = ["position", "text", "kind", "weight", "is_core", "scoring_enabled", "archived_at"]
    readonly_fields = ["archived_at"]
    # Deleting here would bypass annotation.services.criterion_delete, which archives a
    # criterion that carries reviewers' work instead.
    can_delete = False


class ChecklistEventInline(admin.TabularInline):
    model = ChecklistEvent
    extra = 0
    fields = ["at", "actor", "action", "detail"]
    readonly_fields = fields
    can_delete = False


@admin.register(Checklist)
class ChecklistAdmin(SimpleHistoryAdmin):
    list_display = ["id", "query", "author", "status", "updated_at"]
    list_filter = ["status", "query__dataset"]
    raw_id_fields = ["query"]
    inlines = [CriterionInline, ChecklistEventInline]


@admin.register(Citation)
class CitationAdmin(admin.ModelAdmin):
    list_display = ["title", "source_type", "published_on"]
    raw_id_fields = ["criterion"]
