"""The Answers page's filters, as a GET form. The systems are a choice from the dataset's
answers (counted for the summary), so a value from elsewhere is refused with the field
named, and the page then shows every answer. The run label is typed: a dataset run
nightly has a label a night, hundreds in a year, too many for a select, so the field offers
the most recent ones (a datalist) and takes any other as typed; one no answer carries
simply matches nothing."""

from __future__ import annotations

from django import forms

from evaluation.answer_pages.selectors import SORTS, AnswerFilters
from evaluation.answers.models import Answer

ANY = ""
NO_LABEL = "-"  # the run label value of answers without one (an empty value means "any")
YES_NO = [(ANY, "Any"), ("yes", "Yes"), ("no", "No")]
LABELLED = [(ANY, "Any"), ("yes", "Labelled or adjudicated"), ("no", "Not labelled")]
SEARCH_MAX = 200
RECENT_LABELS = 20  # run labels the field offers, the latest answers' first
RUN_LABELS_LIST = "run-labels"  # the id of the datalist the page renders


class AnswerFilterForm(forms.Form):
    q = forms.CharField(
        label="Search the text", required=False, max_length=SEARCH_MAX, strip=True,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "Words in the answer"}),
    )  # fmt: skip
    system = forms.TypedChoiceField(label="System", required=False, coerce=int, empty_value=None)
    run_label = forms.CharField(
        label="Run label", required=False, strip=True,
        max_length=Answer._meta.get_field("run_label").max_length,
        widget=forms.TextInput(attrs={
            "list": RUN_LABELS_LIST, "autocomplete": "off", "placeholder": "Any; - for none",
        }),
    )  # fmt: skip
    query = forms.IntegerField(label="Query id", required=False, min_value=1)
    tool_calls = forms.ChoiceField(label="Tool calls", required=False, choices=YES_NO)
    context = forms.ChoiceField(label="Retrieved context", required=False, choices=YES_NO)
    labelled = forms.ChoiceField(label="Labels", required=False, choices=LABELLED)
    sort = forms.ChoiceField(
        label="Sort", required=False, choices=[(k, label) for k, (label, _) in SORTS.items()]
    )

    def __init__(self, data, *, counts: list[dict]) -> None:
        super().__init__(data)
        systems: dict[int, str] = {}
        latest: dict[str, int] = {}  # run label: its newest answer's id
        for row in counts:
            name = f"{row['system__name']} {row['system__version']}".strip()
            systems[row["system_id"]] = name
            latest[row["run_label"]] = max(row["latest"], latest.get(row["run_label"], 0))
        self.fields["system"].choices = [(ANY, "Any"), *sorted(systems.items(), key=lambda s: s[1])]
        recent = sorted(latest, key=lambda label: latest[label], reverse=True)[:RECENT_LABELS]
        # (value typed, what the list shows beside it)
        self.recent_labels = [
            (label, "") if label else (NO_LABEL, "answers without a run label") for label in recent
        ]

    def filters(self) -> AnswerFilters:
        """The filters asked for (the valid form's), or none."""
        if not self.is_valid():
            return AnswerFilters()
        data = self.cleaned_data
        label = data["run_label"]
        return AnswerFilters(
            q=data["q"] or "",
            system=data["system"],
            run_label=None if label == ANY else ("" if label == NO_LABEL else label),
            query=data["query"],
            tool_calls=_yes_no(data["tool_calls"]),
            context=_yes_no(data["context"]),
            labelled=_yes_no(data["labelled"]),
            sort=data["sort"] or "newest",
        )


def _yes_no(value: str) -> bool | None:
    return {"yes": True, "no": False}.get(value)
