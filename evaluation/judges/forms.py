"""Forms of the judges and panels pages. Errors name the field (and the member row)."""

from __future__ import annotations

import json
import re

from django import forms
from django.core.exceptions import ValidationError

from annotation.models import Criterion
from evaluation.judges import examples, tuning
from evaluation.judges.models import Judge, JudgeTuning, Panel
from evaluation.judging import prompts
from evaluation.judging.batched import MAX_CRITERIA_PER_CALL
from evaluation.judging.keys import api_key_env_problem, base_url_problem, prefix

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_SAMPLES = 20
# How the judge calls its endpoint (issue 25), optional in a post.
CALL_FIELDS = ("criteria_per_call", "token_parameter", "response_format", "reasoning_effort")


class ExamplesField(forms.JSONField):
    """Examples as indented JSON, one key a line: readable and editable in a text box."""

    def prepare_value(self, value: object) -> str:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, ensure_ascii=False, indent=2)


class JudgeForm(forms.ModelForm):
    """The API key itself never passes through this form: only the variable's name."""

    base_url = forms.URLField(
        label="Base URL",
        required=False,
        assume_scheme="https",
        help_text="For example https://api.openai.com/v1",
    )

    class Meta:
        model = Judge
        fields = [
            "name", "kind", "base_url", "model", "api_key_env", "temperature", "max_tokens",
            "seed", "timeout", "rpm_limit", "tpm_limit", "prompt_price", "completion_price",
            "prompt_version", "context_tokens", "is_formality_judge", "criteria_per_call",
            "token_parameter", "response_format", "reasoning_effort", "cached_prompt_price",
        ]  # fmt: skip

    # What only an LLM judge has: a no-LLM or external judge's page leaves these out
    # (templates/evaluation/judges/judge_form.html; app.js follows the Kind select).
    COMMON_FIELDS = ("name", "kind")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # A name saving accepts (the JUDGE_KEY_ prefix of the settings), not OPENAI_API_KEY.
        self.fields["api_key_env"].widget.attrs["placeholder"] = f"{prefix()}OPENAI"
        self.fields["prompt_version"].label = "Base prompt version"
        self.fields["prompt_version"].help_text = (
            "A dataset that tunes the judge (instructions, worked examples) adds "
            "“+tuned-…” to it in that dataset's runs: listed below the form."
        )
        # Optional in a post (forms and API clients that predate it keep working).
        self.fields["context_tokens"].required = False
        for name in CALL_FIELDS:  # issue 25's: the judge's own value when left out
            self.fields[name].required = False
        self.fields["criteria_per_call"].help_text = (
            f"1: one call per criterion; 2 to {MAX_CRITERIA_PER_CALL}: that many criteria of an "
            "answer per call; 0: the whole checklist in one call (docs/judging.md#batched-grading)."
        )

    def common_fields(self) -> list:
        return [self[name] for name in self.COMMON_FIELDS]

    def llm_fields(self) -> list:
        return [field for field in self.visible_fields() if field.name not in self.COMMON_FIELDS]

    def is_llm(self) -> bool:
        """Whether the page shows the LLM fields: the kind posted, else the judge's, else
        the default (LLM); always when one of them has an error to show."""
        kind = self.data.get("kind") if self.is_bound else None
        kind = kind or (self.instance.kind if self.instance.pk else Judge.Kind.LLM)
        errors = self.errors if self.is_bound else {}
        return kind == Judge.Kind.LLM or any(f.name in errors for f in self.llm_fields())

    def clean_criteria_per_call(self) -> int:
        value = self.cleaned_data.get("criteria_per_call")
        if value is None:
            return self._kept("criteria_per_call")
        if not 0 <= value <= MAX_CRITERIA_PER_CALL:
            raise ValidationError(f"From 0 (the whole checklist) to {MAX_CRITERIA_PER_CALL}.")
        return value

    def clean_token_parameter(self) -> str:
        return self.cleaned_data.get("token_parameter") or self._kept("token_parameter")

    def clean_response_format(self) -> str:
        return self.cleaned_data.get("response_format") or self._kept("response_format")

    def clean_reasoning_effort(self) -> str:
        if "reasoning_effort" not in self.data:  # left out, not set to "Not sent"
            return self._kept("reasoning_effort")
        return self.cleaned_data.get("reasoning_effort") or ""

    def _kept(self, name: str) -> object:
        """A call field left out of the post: the judge's value, or the model's default."""
        if self.instance.pk:
            return getattr(self.instance, name)
        return Judge._meta.get_field(name).get_default()

    def clean_context_tokens(self) -> int:
        value = self.cleaned_data.get("context_tokens")
        if value is None:
            return self.instance.context_tokens if self.instance.pk else 8000
        return value

    def clean_api_key_env(self) -> str:
        name = self.cleaned_data["api_key_env"].strip()
        if name and not ENV_NAME.match(name):
            # Most likely a key pasted into the wrong box: say so without echoing it back.
            raise ValidationError(
                "Give the name of the environment variable that holds the key (letters, "
                f"digits and _, e.g. {prefix()}OPENAI), never the key itself."
            )
        if problem := api_key_env_problem(name):
            raise ValidationError(problem)
        return name

    def clean_base_url(self) -> str:
        if problem := base_url_problem(self.cleaned_data["base_url"]):
            raise ValidationError(problem)
        return self.cleaned_data["base_url"]

    def clean_temperature(self) -> float:
        value = self.cleaned_data["temperature"]
        if not 0.0 <= value <= 2.0:
            raise ValidationError("Between 0 and 2.")
        return value

    def clean_timeout(self) -> float:
        value = self.cleaned_data["timeout"]
        if value <= 0:
            raise ValidationError("More than 0 seconds.")
        return value

    def clean(self) -> dict:
        data = super().clean()
        if data.get("kind") == Judge.Kind.LLM:
            for field in ("base_url", "model"):
                if not data.get(field) and field not in self.errors:
                    self.add_error(field, "Required for an LLM judge.")
        for field in ("prompt_price", "completion_price", "cached_prompt_price"):
            value = data.get(field)
            if value is not None and value < 0:
                self.add_error(field, "A price cannot be negative.")
        return data


class TuningForm(forms.ModelForm):
    """A dataset's instructions and typed examples for one judge (evaluation.judges.tuning).
    Examples picked from adjudications are chosen on the examples page instead."""

    class Meta:
        model = JudgeTuning
        fields = ["instructions", "examples"]
        field_classes = {"examples": ExamplesField}
        widgets = {
            "instructions": forms.Textarea(attrs={"rows": 6}),
            "examples": forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["examples"].required = False
        self.fields["examples"].help_text = (
            'A JSON list of {"criterion", "excerpt", "decision": "pass" or "fail", "reason"}: '
            f"at most {tuning.MAX_EXAMPLES} examples, excerpts of {tuning.MAX_EXCERPT:,} "
            "characters; or pick them from this dataset's adjudications on the examples page. "
            "A change of instructions or examples is a new prompt version."
        )

    def clean_instructions(self) -> str:
        value = self.cleaned_data.get("instructions") or ""
        if problems := tuning.instructions_problems(value):
            raise ValidationError(problems)
        return value

    def clean_examples(self) -> list:
        value = self.cleaned_data.get("examples")
        if value in (None, ""):
            return []
        if problems := tuning.examples_problems(value):
            raise ValidationError(problems)
        return value


class PanelForm(forms.ModelForm):
    class Meta:
        model = Panel
        fields = ["name", "description", "method", "threshold", "graded", "conversation"]
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}
        labels = {"graded": "Graded view (1–5)"}

    def clean_threshold(self) -> float:
        value = self.cleaned_data["threshold"]
        if not 0.0 <= value <= 1.0:
            raise ValidationError("Between 0 and 1 (a share of the valid votes).")
        return value

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["conversation"].required = False  # optional in a post: the default

    def clean_conversation(self) -> str:
        value = self.cleaned_data.get("conversation")
        if not value:
            return self.instance.conversation if self.instance.pk else Panel.Conversation.LAST_TURN
        return value


class PanelMemberForm(forms.Form):
    judge = forms.ModelChoiceField(Judge.objects.none(), required=False)
    samples = forms.IntegerField(min_value=1, max_value=MAX_SAMPLES, initial=1, required=False)
    temperatures = forms.CharField(
        required=False,
        help_text="Optional, one per sample, separated by commas (e.g. 0, 0.5, 1).",
    )

    def __init__(self, *args: object, judges=None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        # One judge list for every row: no query per row.
        self.fields["judge"].queryset = judges if judges is not None else Judge.objects.all()

    def clean_temperatures(self) -> list[float]:
        raw = self.cleaned_data["temperatures"].strip().strip("[]")
        if not raw:
            return []
        values = []
        for part in raw.split(","):
            try:
                value = float(part.strip())
            except ValueError:
                raise ValidationError(f"{part.strip()!r} is not a number.") from None
            if not 0.0 <= value <= 2.0:
                raise ValidationError(f"{value:g} is outside 0 to 2.")
            values.append(value)
        return values

    def clean(self) -> dict:
        data = super().clean()
        if not data.get("judge"):
            return data  # a blank row, ignored by the formset
        samples = data.get("samples") or 1
        data["samples"] = samples
        temperatures = data.get("temperatures") or []
        if len(temperatures) > samples:
            self.add_error(
                "temperatures",
                f"{len(temperatures)} temperatures for {samples} sample"
                f"{'s' if samples != 1 else ''}: give at most one per sample.",
            )
        return data


class BasePanelMemberFormSet(forms.BaseFormSet):
    def __init__(self, *args: object, judges=None, **kwargs: object) -> None:
        self.judges = judges
        super().__init__(*args, **kwargs)

    def get_form_kwargs(self, index: int | None) -> dict:
        return {**super().get_form_kwargs(index), "judges": self.judges}

    def clean(self) -> None:
        if any(self.errors):
            return
        members = self.members()
        seen: set[int] = set()
        for form in self.forms:
            judge = form.cleaned_data.get("judge")
            if judge is None:
                continue
            if judge.pk in seen:
                form.add_error("judge", f"{judge.name} is already in the panel; use samples.")
            seen.add(judge.pk)
        if not members:
            raise ValidationError("A panel needs at least one judge.")

    def members(self) -> list[dict]:
        return [f.cleaned_data for f in self.forms if f.cleaned_data.get("judge")]


PanelMemberFormSet = forms.formset_factory(
    PanelMemberForm, formset=BasePanelMemberFormSet, extra=2, max_num=20
)


class ExamplesPickForm(forms.Form):
    """The automatic pick of worked examples from adjudications (evaluation.judges.examples)."""

    kind = forms.ChoiceField(choices=[("", "Every kind")], required=False, label="Criterion kind")
    budget = forms.IntegerField(
        label="Token budget",
        min_value=50,
        max_value=examples.MAX_BUDGET,
        initial=examples.DEFAULT_BUDGET,
        help_text=f"Characters / {prompts.CHARS_PER_TOKEN}, added to every call of the judge; "
        f"at most {examples.MAX_BUDGET:,}.",
    )
    by_kind = forms.BooleanField(
        required=False, label="Balance criterion kinds too (each kind in turn)"
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [("", "Every kind"), *Criterion.Kind.choices]
