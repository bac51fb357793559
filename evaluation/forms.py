from __future__ import annotations

from django import forms

from annotation.models import Dataset, Query
from config.uploads import validate_upload_size
from evaluation.models import Panel, System


class QueryChoices(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Query) -> str:
        return f"#{obj.pk} {obj.text[:90]}"


class RunForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    panel = forms.ModelChoiceField(Panel.objects.all())
    queries = QueryChoices(
        Query.objects.none(),
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 6}),
        help_text="None selected: every query of the dataset.",
    )
    systems = forms.ModelMultipleChoiceField(
        System.objects.all(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every system's answers.",
    )
    answer_run_label = forms.CharField(
        max_length=100, required=False, label="Answers' run label", help_text="Empty: all."
    )
    concurrency = forms.IntegerField(min_value=1, max_value=256, initial=16)

    def __init__(self, *args: object, dataset: Dataset, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        # Only this dataset's queries: another dataset's id is refused by field.
        self.fields["queries"].queryset = dataset.queries.order_by("pk")


class AnswersUploadForm(forms.Form):
    file = forms.FileField(
        help_text="JSONL or CSV: query, system, text; optional system_version, "
        "external_id, run_label.",
        validators=[validate_upload_size],
    )
