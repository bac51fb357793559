from __future__ import annotations

from decimal import Decimal

from django import forms
from django.contrib.auth import get_user_model

from annotation.models import (
    Citation,
    Criterion,
    CriterionGroup,
    Dataset,
    Query,
    QueryCategory,
    SourceType,
    query_dimensions_problem,
)
from annotation.services.datasets import DATASET_SETTINGS
from annotation.validation import RULES
from config import limits


class DatasetForm(forms.ModelForm):
    class Meta:
        model = Dataset
        fields = list(DATASET_SETTINGS)

    # The scoring settings (issue 23) are optional on the form: a form that leaves them out
    # (an older page, a script) keeps the dataset's current ones.
    _KEEP = ("scoring", "undecided", "blend_weight")

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        for name in self._KEEP:
            self.fields[name].required = False

    def clean(self) -> dict:
        cleaned = super().clean()
        for name in self._KEEP:
            if cleaned.get(name) in (None, ""):
                cleaned[name] = (
                    getattr(self.instance, name) or Dataset._meta.get_field(name).get_default()
                )
        return cleaned


class QueryForm(forms.ModelForm):
    tags = forms.CharField(
        required=False, help_text="Domain tags, separated by commas.", max_length=500
    )

    class Meta:
        model = Query
        fields = ["text", "query_date", "category", "complexity", "reference_answer"]
        widgets = {
            "text": forms.Textarea(attrs={"rows": 3}),
            "reference_answer": forms.Textarea(attrs={"rows": 6}),
            "query_date": forms.DateInput(attrs={"type": "date"}),
        }

    def __init__(self, *args: object, dataset: Dataset | None = None, **kwargs: object) -> None:
        """One field per dimension the dataset declares (issue 23): a choice among its
        allowed values, or free text when it allows any; `cleaned_data["dimensions"]`
        gathers them ({name: value}, an empty field left out)."""
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.dataset = dataset or (self.instance.dataset if self.instance.dataset_id else None)
        declared = (self.dataset.dimensions or {}) if self.dataset else {}
        current = self.instance.dimensions or {}
        self.dimension_fields: dict[str, str] = {}
        for n, (name, allowed) in enumerate(sorted(declared.items())):
            key = f"dimension_{n}"
            self.dimension_fields[key] = name
            label = f"Dimension: {name}"
            if allowed:
                self.fields[key] = forms.ChoiceField(
                    label=label, required=False, choices=[("", "—"), *((v, v) for v in allowed)],
                    help_text=f"One of the dataset's values for {name}; empty for none.",
                )  # fmt: skip
            else:
                self.fields[key] = forms.CharField(
                    label=label, required=False, max_length=200,
                    help_text=f"Any value for {name}; empty for none.",
                )  # fmt: skip
            self.initial.setdefault(key, current.get(name, ""))

    def clean_tags(self) -> list[str]:
        names = [t.strip() for t in self.cleaned_data["tags"].split(",") if t.strip()]
        too_long = [n for n in names if len(n) > 60]
        if too_long:
            raise forms.ValidationError(f"Tags are at most 60 characters: {too_long[0]!r}.")
        return names

    def clean(self) -> dict:
        cleaned = super().clean()
        values = {}
        for key, name in self.dimension_fields.items():
            value = (cleaned.pop(key, "") or "").strip()
            if value:
                values[name] = value
        declared = (self.dataset.dimensions or {}) if self.dataset else {}
        problem = query_dimensions_problem(declared, values)
        if problem:
            raise forms.ValidationError(problem)
        cleaned["dimensions"] = values
        return cleaned

    def _post_clean(self) -> None:
        # The model's clean() checks the dimensions against the dataset's declared ones:
        # a new query has no dataset yet on its instance.
        if self.dataset is not None and not self.instance.dataset_id:
            self.instance.dataset = self.dataset
        self.instance.dimensions = self.cleaned_data.get("dimensions", {})
        super()._post_clean()


class QueryFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Search")
    category = forms.ModelChoiceField(
        QueryCategory.objects.all(), required=False, empty_label="Any category"
    )
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *Query.Status.choices])
    submitted = forms.TypedChoiceField(
        required=False,
        label="Submitted checklists",
        coerce=int,
        empty_value=None,
        choices=[("", "Any number"), *((str(n), str(n)) for n in range(6))],
    )
    mine = forms.BooleanField(required=False, label="Assigned to me")


class AssignExpertsForm(forms.Form):
    experts = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )

    def __init__(self, *args: object, experts: list, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.fields["experts"].queryset = get_user_model().objects.filter(
            pk__in=[e.pk for e in experts]
        )


def allowed_source_types():
    return SourceType.objects.filter(is_banned=False)


class CriterionForm(forms.ModelForm):
    source_types = forms.ModelMultipleChoiceField(
        queryset=allowed_source_types(), required=False, widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = Criterion
        fields = ["text", "kind", "source_types", "notes", "weight", "is_core"]
        widgets = {
            "text": forms.Textarea(attrs={"rows": 2, "placeholder": "States the Q3 revenue …"}),
            "notes": forms.Textarea(attrs={"rows": 1}),
        }
        labels = {"is_core": "Core criterion"}

    def __init__(self, *args: object, source_types=None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        if source_types is not None:  # the editor passes one list for all rows: no query each
            self.fields["source_types"].queryset = source_types


class GroupForm(forms.Form):
    """A group of the editor: its parent is one of the same checklist's groups (`parents`);
    the service refuses a cycle (annotation.services.groups)."""

    title = forms.CharField(max_length=300)
    description = forms.CharField(required=False, max_length=limits.CRITERION_NOTES)
    weight = forms.DecimalField(max_digits=6, decimal_places=2, min_value=Decimal("0.01"))
    parent = forms.ModelChoiceField(queryset=CriterionGroup.objects.none(), required=False)

    def __init__(self, *args: object, checklist_id: int, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["parent"].queryset = CriterionGroup.objects.filter(checklist_id=checklist_id)


class GroupChoiceForm(forms.Form):
    """Which group of the checklist a criterion goes into; empty for none."""

    group = forms.ModelChoiceField(queryset=CriterionGroup.objects.none(), required=False)

    def __init__(self, *args: object, checklist_id: int, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["group"].queryset = CriterionGroup.objects.filter(checklist_id=checklist_id)


class NewCriterionForm(forms.ModelForm):
    class Meta:
        model = Criterion
        fields = ["text", "kind"]
        widgets = {
            "text": forms.Textarea(
                attrs={"rows": 2, "placeholder": "Start with an action verb: States, Provides…"}
            )
        }


class CitationForm(forms.ModelForm):
    class Meta:
        model = Citation
        fields = ["title", "url", "source_type", "published_on"]
        widgets = {"published_on": forms.DateInput(attrs={"type": "date"})}
        labels = {"published_on": "Published on", "url": "URL or document id"}

    def __init__(self, *args: object, source_types=None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.fields["source_type"].queryset = (
            source_types if source_types is not None else allowed_source_types()
        )


class GuidelineForm(forms.Form):
    """A guideline's settings as page fields. The form only parses what was typed; the
    rules' own checks run in annotation.services.guidelines, as for the API, and their
    errors come back here by field (`max_criteria`, `rules.compound.severity`, ...)."""

    name = forms.CharField(max_length=100)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    action_verbs = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}),
        help_text="Words a criterion may start with, separated by spaces, commas or lines.",
    )
    banned_source_types = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Criteria and citations may not use these source types.",
    )
    min_criteria = forms.IntegerField(label="Fewest criteria")
    max_criteria = forms.IntegerField(label="Most criteria")
    max_length = forms.IntegerField(label="Longest criterion (characters)")
    near_duplicate_threshold = forms.FloatField(
        label="Near-duplicate threshold",
        help_text="Word-set similarity (above 0, at most 1) from which two criteria are near "
        "duplicates.",
    )

    SEVERITY_CHOICES = (("", "default"), ("error", "error"), ("warning", "warning"))

    def __init__(self, *args: object, config=None, editing: bool = False, **kwargs: object):

        if config is not None and not kwargs.get("initial"):
            kwargs["initial"] = self.initial_from(config)
        super().__init__(*args, **kwargs)
        slugs = set(SourceType.objects.values_list("slug", flat=True))
        if config is not None:
            slugs |= set(config.banned_source_types)  # an unknown stored slug is shown
        self.fields["banned_source_types"].choices = [(slug, slug) for slug in sorted(slugs)]
        self.rule_fields = []
        for info in RULES:
            enabled = forms.BooleanField(required=False, label=info.title)
            severity = forms.ChoiceField(
                required=False,
                label=f"Severity of {info.id}",
                choices=[("", f"default ({info.default_severity})"), *self.SEVERITY_CHOICES[1:]],
            )
            self.fields[f"rules.{info.id}.enabled"] = enabled
            self.fields[f"rules.{info.id}.severity"] = severity
            self.rule_fields.append(
                (info, self[f"rules.{info.id}.enabled"], self[f"rules.{info.id}.severity"])
            )
        if editing:  # a guideline's versions share its name
            self.fields["name"].disabled = True

    def settings_fields(self) -> list:
        """The fields above the rules table (the rules are shown as table rows)."""
        return [bf for bf in self.visible_fields() if not bf.name.startswith("rules.")]

    @staticmethod
    def initial_from(config) -> dict[str, object]:

        initial: dict[str, object] = {
            "action_verbs": " ".join(sorted(config.action_verbs)),
            "banned_source_types": sorted(config.banned_source_types),
            "min_criteria": config.min_criteria,
            "max_criteria": config.max_criteria,
            "max_length": config.max_length,
            "near_duplicate_threshold": config.near_duplicate_threshold,
        }
        for info in RULES:
            setting = config.setting(info.id)
            initial[f"rules.{info.id}.enabled"] = setting.enabled
            initial[f"rules.{info.id}.severity"] = setting.severity or ""
        return initial

    def config(self) -> dict[str, object]:
        """The cleaned fields as the config JSON the API takes (every key present)."""

        data = self.cleaned_data
        return {
            "action_verbs": [w for w in data["action_verbs"].replace(",", " ").split() if w],
            "banned_source_types": list(data["banned_source_types"]),
            "min_criteria": data["min_criteria"],
            "max_criteria": data["max_criteria"],
            "max_length": data["max_length"],
            "near_duplicate_threshold": data["near_duplicate_threshold"],
            "rules": {
                info.id: {
                    "enabled": data[f"rules.{info.id}.enabled"],
                    "severity": data[f"rules.{info.id}.severity"] or None,
                }
                for info in RULES
            },
        }

    def add_service_errors(self, errors: dict[str, str]) -> None:
        """Errors of annotation.services.GuidelineInvalid, under the field they name."""
        for key, message in errors.items():
            field = key.removeprefix("config.")
            self.add_error(field if field in self.fields else None, f"{field}: {message}")


class ExternalIdForm(forms.Form):
    """A query's external id, on its page (annotation.services.query_set_external_id)."""

    external_id = forms.CharField(
        label="External id",
        max_length=limits.EXTERNAL_ID,
        strip=False,  # surrounding spaces are refused with a reason, not dropped silently
        help_text="Unique in the dataset; exports, imports and the reward API name the "
        "query by it.",
    )
