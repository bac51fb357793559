from __future__ import annotations

from django import forms

from evaluation.models import Panel, System


class RunForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    panel = forms.ModelChoiceField(Panel.objects.all())
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


class AnswersUploadForm(forms.Form):
    file = forms.FileField(
        help_text="JSONL or CSV: query, system, text; optional system_version, "
        "external_id, run_label."
    )
