"""What the side-by-side comparison is asked for, as a GET form the page and the API share:
the two sides (a run of the dataset and one of its systems each), the filters (a minimum
score difference, a query category, a dimension value) and the order. A value from
elsewhere (a run of another dataset, a system the run did not score, an undeclared
dimension) is refused with its field named, and nothing is compared."""

from __future__ import annotations

from django import forms

from annotation.models import Dataset, QueryCategory
from evaluation.kept.counters import counters
from evaluation.runs import scores
from evaluation.runs.models import Run
from evaluation.runs.scores import RunScores
from evaluation.runs.selectors import choose_run
from evaluation.side_by_side import pairing
from evaluation.side_by_side.selectors import QueryFilter, Side, systems_of

ANY = ""
DIMENSION_SEPARATOR = "="


class SideBySideForm(forms.Form):
    a = forms.IntegerField(label="Run A", required=False, min_value=1)
    system_a = forms.IntegerField(label="System A", required=False, min_value=1)
    b = forms.IntegerField(label="Run B", required=False, min_value=1)
    system_b = forms.IntegerField(label="System B", required=False, min_value=1)
    min_difference = forms.FloatField(
        label="Scores differ by more than", required=False, min_value=0.0, max_value=1.0,
        widget=forms.NumberInput(attrs={"step": "0.05", "placeholder": "0.2"}),
    )  # fmt: skip
    category = forms.TypedChoiceField(
        label="Category", required=False, coerce=int, empty_value=None
    )
    dimension = forms.ChoiceField(label="Dimension", required=False)
    sort = forms.ChoiceField(label="Order", required=False, choices=list(pairing.SORTS.items()))

    def __init__(self, data, *, dataset: Dataset, runs: list[Run]) -> None:
        super().__init__(data)
        self.dataset, self.runs = dataset, runs
        self.fields["category"].choices = [(ANY, "Any")] + [
            (c.pk, c.name) for c in QueryCategory.objects.all()
        ]
        declared = dataset.dimensions or {}
        # "name=value" -> (name, value): read back from here, never split (either may
        # hold the separator).
        self.dimensions = {
            f"{name}{DIMENSION_SEPARATOR}{value}": (str(name), str(value))
            for name in sorted(declared)
            for value in declared[name]
        }
        self.fields["dimension"].choices = [(ANY, "Any")] + [
            (key, f"{name}: {value}") for key, (name, value) in self.dimensions.items()
        ]
        self.sides: tuple[Side, RunScores, Side, RunScores] | None = None
        # A side whose run's scores are still being counted (the placeholder of the cold
        # rule, evaluation.kept.cold): nothing to compare yet, and not the asker's error.
        self.computing: RunScores | None = None

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        a_id, b_id = data.get("a"), data.get("b")
        if a_id is None and b_id is None and len(self.runs) >= 2:
            a_id, b_id = self.runs[1].pk, self.runs[0].pk  # the previous run against the latest
        if a_id is None and b_id is None and self.runs:
            a_id = b_id = self.runs[0].pk  # one run: two of its systems
        if a_id is None and b_id is not None:
            a_id = self._before(b_id)
        a_id, b_id = a_id or b_id, b_id or a_id
        if a_id is None:
            raise forms.ValidationError("No run of system answers in this dataset yet.")
        run_a, run_b = self._run("a", a_id), self._run("b", b_id)
        if run_a is None or run_b is None:
            return data
        if run_b.pk == run_a.pk:
            kept_a = kept_b = scores.run_scores(run_a)
        else:  # the dataset's counters read once for both runs
            at = counters(run_a.dataset_id)
            kept_a, kept_b = scores.run_scores(run_a, at=at), scores.run_scores(run_b, at=at)
        self.computing = next((k for k in (kept_a, kept_b) if k.computing), None)
        if self.computing is not None:
            return data
        systems_a, systems_b = systems_of(kept_a), systems_of(kept_b)
        system_a = self._system("system_a", run_a, systems_a, data.get("system_a"), None)
        system_b = self._system(
            "system_b", run_b, systems_b, data.get("system_b"),
            system_a if run_b.pk != run_a.pk else None, other=system_a,
        )  # fmt: skip
        if system_a is None or system_b is None:
            return data
        self.systems = (systems_a, systems_b)
        names_a, names_b = dict(systems_a), dict(systems_b)
        self.sides = (
            Side(run_a, system_a, names_a[system_a]), kept_a,
            Side(run_b, system_b, names_b[system_b]), kept_b,
        )  # fmt: skip
        return data

    def _before(self, pk: int) -> int:
        """The run before run `pk` among those offered (B from the run page: A is the run
        before it), else `pk` itself (two of its systems)."""
        ids = [r.pk for r in self.runs]
        at = ids.index(pk) if pk in ids else -1
        return ids[at + 1] if 0 <= at < len(ids) - 1 else pk

    def _run(self, field: str, pk: int) -> Run | None:
        try:
            return choose_run(self.dataset, pk, self.runs)
        except Run.DoesNotExist:
            self.add_error(field, f"No run {pk} of system answers in this dataset.")
            return None

    def _system(
        self, field: str, run: Run, systems: list[tuple[int, str]], asked: int | None,
        same_as: int | None, *, other: int | None = None,
    ) -> int | None:  # fmt: skip
        """The system asked for, if the run scored it; else, for two runs, the system of
        side A when the run scored it too (the same system's two runs), else the run's first
        system not already on side A, else its first."""
        ids = [pk for pk, _ in systems]
        if not ids:
            self.add_error(field, f"Run {run.pk} has scored no answer yet.")
            return None
        if asked is not None:
            if asked not in ids:
                self.add_error(field, f"Run {run.pk} scored no answer of system {asked}.")
                return None
            return asked
        if same_as in ids:
            return same_as
        return next((pk for pk in ids if pk != other), ids[0])

    def query_filter(self) -> QueryFilter:
        data = self.cleaned_data
        return QueryFilter(data.get("category"), self.dimensions.get(data.get("dimension") or ""))

    def ordering(self) -> str:
        return self.cleaned_data.get("sort") or pairing.DEFAULT_SORT
