"""Forms of the Export and Import pages."""

from __future__ import annotations

from django import forms

from annotation.models import Dataset, Guideline
from evaluation.datasets.import_target import NAME_MAX
from evaluation.tables import schema

INCLUDE_LABELS = {
    "answers": "Answers (and their systems)",
    "verdicts": "Verdicts, with their runs, judges and panels",
    "labels": "Human labels",
    "adjudications": "Adjudications",
    "pairwise": "Pairwise sessions and votes, human and judge (bring the verdicts' judges)",
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
        "exported. Verdicts, labels, adjudications, pairwise votes and scores bring the answers "
        "with them.",
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
    """Where the files go is an explicit choice: into a dataset the user administers, or
    into a new one (a copy, when the files come from a dataset of this installation)."""

    INTO, NEW = "into", "new"

    file = forms.FileField(
        help_text="A zip in the export layout (or a single table file such as queries.jsonl "
        "or criteria.csv, imported into a dataset). See docs/data-formats.md."
    )
    target = forms.ChoiceField(
        choices=[(INTO, "Import into an existing dataset"), (NEW, "Import as a new dataset")],
        widget=forms.RadioSelect,
        label="Where to import",
    )
    dataset = forms.ModelChoiceField(
        queryset=Dataset.objects.none(),
        required=False,
        empty_label="Choose a dataset",
        label="Dataset to import into",
        help_text="Rows are matched by their keys; only what differs is written.",
    )
    name = forms.CharField(
        max_length=NAME_MAX,
        required=False,
        label="New dataset's name",
        help_text="Empty: the name in the file's dataset.json. Every row is created anew, "
        "with you as the new dataset's admin.",
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
    copy_members = forms.BooleanField(
        required=False,
        label="Copy the members and their roles",
        help_text="Give the people in the file's members.csv their role on the dataset (those "
        "who have none there yet). Off: nobody but you is given access.",
    )

    def __init__(
        self, *args: object, datasets=None, may_create: bool = True, **kwargs: object
    ) -> None:
        super().__init__(*args, **kwargs)
        if datasets is not None:
            self.fields["dataset"].queryset = datasets
        # Offer only what the user may do: an admin of no dataset can only create one, a
        # dataset admin outside the Admin group only import into theirs.
        target = self.fields["target"]
        if not may_create:
            target.choices = [c for c in target.choices if c[0] != self.NEW]
            del self.fields["name"]
        if datasets is not None and not datasets.exists():
            target.choices = [c for c in target.choices if c[0] != self.INTO]
            del self.fields["dataset"]
        if len(target.choices) == 1:
            target.initial = target.choices[0][0]

    def clean(self) -> dict:
        data = super().clean()
        if data.get("target") == self.INTO and not data.get("dataset"):
            self.add_error("dataset", "Choose the dataset to import into.")
        if data.get("target") != self.INTO:
            data["dataset"] = None
        if data.get("target") != self.NEW:
            data["name"] = ""
        return data
