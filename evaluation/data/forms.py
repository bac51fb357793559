"""Forms of the Export and Import pages."""

from __future__ import annotations

from django import forms

from annotation.models import Dataset, Guideline
from config.uploads import validate_upload_size
from evaluation.data import schema

INCLUDE_LABELS = {
    "answers": "Answers (and their systems)",
    "verdicts": "Verdicts, with their runs, judges and panels",
    "labels": "Human labels",
    "adjudications": "Adjudications",
    "scores": "Scores (computed per run)",
    "overlaps": "Overlaps (cross-evaluation)",
}


class ExportForm(forms.Form):
    include = forms.MultipleChoiceField(
        choices=[(p, INCLUDE_LABELS[p]) for p in schema.INCLUDES],
        initial=list(schema.INCLUDES),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Queries, checklists, criteria, citations and perfect answers are always "
        "exported. Verdicts, labels, adjudications and scores bring the answers with them.",
    )
    formats = forms.MultipleChoiceField(
        choices=[("jsonl", "JSON Lines"), ("csv", "CSV"), ("parquet", "Parquet")],
        initial=list(schema.FORMATS),
        widget=forms.CheckboxSelectMultiple,
    )
    job = forms.BooleanField(
        required=False,
        label="Prepare it in the background even if it is small",
        help_text="Big exports always are: you get a download link when the file is ready.",
    )


class ImportForm(forms.Form):
    file = forms.FileField(
        help_text="A zip in the export layout (or a single table file such as queries.jsonl "
        "or criteria.csv, with a dataset chosen below). See docs/data-formats.md."
    )
    dataset = forms.ModelChoiceField(
        queryset=Dataset.objects.none(),
        required=False,
        empty_label="The dataset named in the file (created if new)",
        help_text="Import into this dataset instead.",
    )
    guideline = forms.ModelChoiceField(
        queryset=Guideline.objects.all(),
        required=False,
        empty_label="The file's guideline (or the dataset's)",
        help_text="Submitted checklists are checked against it and the dataset uses it.",
    )
    on_guideline_errors = forms.ChoiceField(
        choices=[
            ("warn", "Import them as submitted and list the findings as warnings"),
            ("refuse", "Refuse the import"),
        ],
        initial="warn",
        label="Submitted checklists that break the guideline",
    )

    def __init__(self, *args: object, datasets=None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        if datasets is not None:
            self.fields["dataset"].queryset = datasets


class AnswersUploadForm(forms.Form):
    file = forms.FileField(
        help_text="JSONL or CSV: query, system, text; optional system_version, "
        "external_id, run_label.",
        validators=[validate_upload_size],
    )
