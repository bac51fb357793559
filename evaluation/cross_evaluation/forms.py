from __future__ import annotations

from django import forms

from evaluation.judges.models import Judge, Panel


class PerfectAnswerForm(forms.Form):
    text = forms.CharField(
        label="Perfect answer (markdown)",
        widget=forms.Textarea(attrs={"rows": 18, "class": "perfect-answer-text"}),
        help_text="An answer that satisfies every criterion of this checklist.",
    )


class DraftForm(forms.Form):
    judge = forms.ModelChoiceField(
        Judge.objects.filter(kind=Judge.Kind.LLM).order_by("name"),
        label="Drafting LLM",
        # No empty choice: the form is shown only when an LLM judge exists (the page says
        # how to add one otherwise), so a required field never opens on "---------".
        empty_label=None,
        help_text="Defaults to the first LLM judge of the dataset's cross-evaluation panel.",
    )


class CrossEvaluationStartForm(forms.Form):
    panel = forms.ModelChoiceField(Panel.objects.order_by("name"))


class CrossEvaluationSettingsForm(forms.Form):
    panel = forms.ModelChoiceField(
        Panel.objects.order_by("name"),
        required=False,
        help_text="Used for automatic cross-evaluation and to pick the drafting LLM.",
    )
    automatic = forms.BooleanField(
        required=False,
        label="Cross-evaluate automatically",
        help_text="Start a cross-evaluation run over a query whenever it gets a new submitted "
        "checklist or a perfect answer changes, once two checklists have perfect answers.",
    )

    def clean(self) -> dict:
        data = super().clean()
        if data.get("automatic") and not data.get("panel"):
            self.add_error("panel", "Automatic cross-evaluation needs a panel.")
        return data
