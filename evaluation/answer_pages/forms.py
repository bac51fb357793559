"""The Answers page's filters, as a GET form: its choices come from the dataset's answers
(the systems and run labels counted for the summary), so a value from elsewhere is refused
with the field named, and the page then shows every answer."""

from __future__ import annotations

from django import forms

from evaluation.answer_pages.selectors import SORTS, AnswerFilters

ANY = ""
NO_LABEL = "-"  # the run label value of answers without one (an empty value means "any")
YES_NO = [(ANY, "Any"), ("yes", "Yes"), ("no", "No")]
LABELLED = [(ANY, "Any"), ("yes", "Labelled or adjudicated"), ("no", "Not labelled")]
SEARCH_MAX = 200


class AnswerFilterForm(forms.Form):
    q = forms.CharField(
        label="Search the text", required=False, max_length=SEARCH_MAX, strip=True,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "Words in the answer"}),
    )  # fmt: skip
    system = forms.TypedChoiceField(label="System", required=False, coerce=int, empty_value=None)
    run_label = forms.ChoiceField(label="Run label", required=False)
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
        labels: set[str] = set()
        for row in counts:
            name = f"{row['system__name']} {row['system__version']}".strip()
            systems[row["system_id"]] = name
            labels.add(row["run_label"])
        self.fields["system"].choices = [(ANY, "Any"), *sorted(systems.items(), key=lambda s: s[1])]
        self.fields["run_label"].choices = [(ANY, "Any")] + [
            (label or NO_LABEL, label or "(none)") for label in sorted(labels)
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
