from __future__ import annotations

import json

from django import forms
from django.core.exceptions import ValidationError

from evaluation.checks import trajectory
from evaluation.checks.models import CriterionCheck


class CriterionCheckForm(forms.ModelForm):
    """A criterion's deterministic check (kind, JSON parameters, threshold) and the evidence
    an LLM judge decides it against. Parameters are checked by checks.trajectory."""

    params = forms.CharField(
        label="Parameters (JSON)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 5, "spellcheck": "false"}),
        help_text='For example {"tools": ["search_filings"]} or {"calls": [{"name": '
        '"search", "arguments": {"ticker": "NWS"}}], "mode": "in_order", '
        '"compare_arguments": true}; add "scoring": "partial" for partial credit, '
        '"tokenizer": "unicode" for ROUGE over any script. See docs/no-llm-checks.md.',
    )

    class Meta:
        model = CriterionCheck
        fields = ["kind", "params", "threshold", "evidence"]
        labels = {"kind": "Deterministic check", "evidence": "An LLM judge decides against"}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            self.initial["params"] = json.dumps(self.instance.params or {}, indent=2)

    def clean_params(self) -> dict:
        text = (self.cleaned_data.get("params") or "").strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"Not valid JSON: {exc.msg} (line {exc.lineno}).") from None
        if not isinstance(value, dict):
            raise ValidationError("The parameters are a JSON object.")
        return value

    def clean(self) -> dict:
        data = super().clean()
        kind = data.get("kind") or ""
        if kind and "params" not in self.errors:
            for problem in trajectory.check_params(kind, data.get("params"), data.get("threshold")):
                self.add_error("params", problem)
        elif not kind and data.get("params"):
            self.add_error("params", "Pick a check for these parameters, or leave them empty.")
        return data
