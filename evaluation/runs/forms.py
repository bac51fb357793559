from __future__ import annotations

from django import forms
from django.db.models import Q

from annotation.models import Dataset, Query
from config import jinja
from config.ids import parse_id
from evaluation.answers.models import System
from evaluation.judges.models import Panel
from evaluation.runs import stability_pass
from evaluation.runs.models import Run

# The start-run form lists at most this many queries as options (a search finds others).
QUERY_OPTIONS = 200
# The latest finished runs offered as a trial's baseline (the API takes any of them).
BASELINE_OPTIONS = 50


class ManyOptions(forms.SelectMultiple):
    """A multiple <select> of up to QUERY_OPTIONS options, drawn by Django's Jinja2 widget
    templates whatever the form's renderer (config.jinja.WIDGET_RENDERER says why)."""

    def render(self, name, value, attrs=None, renderer=None):
        return super().render(name, value, attrs, jinja.WIDGET_RENDERER)


class QueryChoices(forms.ModelMultipleChoiceField):
    @staticmethod
    def label(pk: int, text: str) -> str:
        return f"#{pk} {text[:90]}"

    def label_from_instance(self, obj: Query) -> str:
        return self.label(obj.pk, obj.text)


class RunForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    panel = forms.ModelChoiceField(Panel.objects.all())
    queries = QueryChoices(
        Query.objects.none(),
        required=False,
        widget=ManyOptions(attrs={"size": 6}),
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
    scope = forms.ChoiceField(
        choices=[(v, label) for v, label in Run.Scope.choices if v in Run.STARTED_SCOPES],
        initial=Run.Scope.ALL,
        required=False,  # a form posted without it (a script, an older page): every answer
        widget=forms.RadioSelect,
        label="Items",
        help_text="A trial grades only the labelled items and is compared with the baseline.",
    )
    baseline = forms.ModelChoiceField(
        Run.objects.none(),
        required=False,
        label="Baseline (trials)",
        empty_label="The latest finished run (default)",
        help_text="The current judge's run the trial is compared with.",
    )

    def clean_scope(self) -> str:
        return self.cleaned_data["scope"] or Run.Scope.ALL

    def __init__(
        self, *args: object, dataset: Dataset, query_search: str = "", **kwargs: object
    ) -> None:
        super().__init__(*args, **kwargs)
        finished = (
            dataset.runs.filter(status__in=Run.FINISHED)
            .exclude(kind=Run.Kind.CROSS_EVALUATION)
            .not_checks()
            .order_by("-created_at", "-pk")
        )
        self.fields["baseline"].queryset = finished.filter(
            pk__in=finished.values("pk")[:BASELINE_OPTIONS]
        )
        queries = dataset.queries.order_by("pk")
        field = self.fields["queries"]
        # Only this dataset's queries: another dataset's id is refused by field. Any of
        # them may be chosen, shown as an option or not.
        field.queryset = queries
        self.query_search = query_search.strip()
        # The options: the queries matching the search (all of them without one) up to
        # QUERY_OPTIONS, and those already chosen. A dataset of 3,000 queries listed whole
        # was 370 kB of HTML and most of the runs page's time.
        shown = queries
        if self.query_search:
            term = self.query_search.removeprefix("#").strip()
            match = Q(text__icontains=term)
            if (pk := parse_id(term)) is not None:
                match |= Q(pk=pk)
            shown = shown.filter(match)
        rows = list(shown.values_list("pk", "text")[: QUERY_OPTIONS + 1])
        self.more_queries = len(rows) > QUERY_OPTIONS
        rows = rows[:QUERY_OPTIONS]
        listed = {pk for pk, _ in rows}
        chosen = {parse_id(str(v)) for v in self["queries"].value() or []} - listed - {None}
        if chosen:
            rows = sorted([*rows, *queries.filter(pk__in=chosen).values_list("pk", "text")])
        field.widget.choices = [(pk, QueryChoices.label(pk, text)) for pk, text in rows]


class StabilityPassForm(forms.Form):
    """A stability pass of a finished run (evaluation.runs.stability_pass): which of its
    panel's LLM judges, k calls per item, how many items."""

    judge = forms.TypedChoiceField(coerce=int, choices=())
    k = forms.IntegerField(
        label="k (calls per item)",
        min_value=stability_pass.MIN_K,
        max_value=stability_pass.MAX_K,
        initial=stability_pass.DEFAULT_K,
    )
    items = forms.IntegerField(
        min_value=1,
        max_value=stability_pass.MAX_ITEMS,
        initial=stability_pass.DEFAULT_ITEMS,
        help_text="A fixed sample of the run's items the judge graded.",
    )

    def __init__(self, *args: object, run: Run, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.fields["judge"].choices = [(m.judge_id, m.name) for m in stability_pass.judges_of(run)]

    def asked(self) -> stability_pass.PassRequest:
        data = self.cleaned_data
        return stability_pass.PassRequest(judge_id=data["judge"], k=data["k"], items=data["items"])
