from __future__ import annotations

from django import forms

from evaluation.answers.models import System
from evaluation.pairwise import blind


class SessionForm(forms.Form):
    """A pairwise session: two sides (a system and a run label each) of one dataset."""

    name = forms.CharField(
        max_length=200,
        help_text="Reviewers see it while they vote: do not name the systems in it.",
    )
    system_a = forms.ModelChoiceField(System.objects.none(), label="System A")
    run_label_a = forms.CharField(
        max_length=100,
        required=False,
        label="Run label A",
        help_text="Empty for unlabelled answers.",
    )
    system_b = forms.ModelChoiceField(System.objects.none(), label="System B")
    run_label_b = forms.CharField(
        max_length=100, required=False, label="Run label B",
        help_text="Two runs of one system: the same system twice with two run labels.",
    )  # fmt: skip
    reviewers_per_pair = forms.IntegerField(min_value=1, max_value=50, initial=3)
    show_checklist = forms.BooleanField(
        required=False, help_text="Show the query's submitted checklists beside the answers."
    )

    def __init__(self, *args, dataset, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        systems = System.objects.filter(
            answers__query__dataset=dataset, is_reference=False
        ).distinct()
        self.fields["system_a"].queryset = systems
        self.fields["system_b"].queryset = systems


class VoteForm(forms.Form):
    vote = forms.IntegerField(min_value=1)
    choice = forms.ChoiceField(choices=[(c, c) for c in blind.CHOICES])
    reason = forms.CharField(max_length=2000, required=False)
