from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from annotation.models import Citation, Criterion, Dataset, Query, QueryCategory, SourceType
from annotation.roles import DatasetRole


class DatasetForm(forms.ModelForm):
    class Meta:
        model = Dataset
        fields = [
            "name",
            "description",
            "licence",
            "guideline",
            "experts_per_query",
            "show_submitted_checklists",
            "formality_check",
            "pass_threshold",
            "label_policy",
            "label_share",
        ]


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=[(r.value, r.value.title()) for r in DatasetRole])

    def clean_username(self) -> object:
        username = self.cleaned_data["username"]
        try:
            return get_user_model().objects.get(username=username, is_active=True)
        except get_user_model().DoesNotExist:
            raise forms.ValidationError(f"No active user is called {username!r}.") from None


class QueryForm(forms.ModelForm):
    tags = forms.CharField(
        required=False, help_text="Domain tags, separated by commas.", max_length=500
    )

    class Meta:
        model = Query
        fields = ["text", "query_date", "category", "reference_answer"]
        widgets = {
            "text": forms.Textarea(attrs={"rows": 3}),
            "reference_answer": forms.Textarea(attrs={"rows": 6}),
            "query_date": forms.DateInput(attrs={"type": "date"}),
        }

    def clean_tags(self) -> list[str]:
        names = [t.strip() for t in self.cleaned_data["tags"].split(",") if t.strip()]
        too_long = [n for n in names if len(n) > 60]
        if too_long:
            raise forms.ValidationError(f"Tags are at most 60 characters: {too_long[0]!r}.")
        return names


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
