"""The form dataset admins set a regression alert with (issue 12, point 8)."""

from __future__ import annotations

import re

from django import forms
from django.core.validators import validate_email

from evaluation.alerts import webhooks
from evaluation.alerts.models import RegressionAlert
from evaluation.answers.models import System

# The webhook's HMAC secret comes from the environment of the workers, never from the
# database or a form; only variables with this prefix may hold it, so that an alert cannot
# sign with the project's own secrets (SECRET_KEY, DATABASE_URL, judges' keys).
SECRET_PREFIX = "ALERT_SECRET_"  # noqa: S105 - a variable-name prefix, not a secret
SECRET_NAME = re.compile(rf"^{SECRET_PREFIX}[A-Z0-9_]{{1,80}}$")


def secret_variable_allowed(name: str) -> bool:
    return bool(SECRET_NAME.match(name))


class AlertForm(forms.ModelForm):
    webhook_url = forms.URLField(
        required=False,
        assume_scheme="https",
        help_text="Receives a JSON POST signed with HMAC-SHA256 (header X-Workbench-Signature).",
    )

    class Meta:
        model = RegressionAlert
        fields = ("system", "threshold", "emails", "webhook_url", "secret_env", "active")
        widgets = {"emails": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args, dataset, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["system"].queryset = System.objects.filter(
            answers__query__dataset=dataset, is_reference=False
        ).distinct()
        self.fields["system"].empty_label = "Every system of the run"
        self.fields["secret_env"].help_text = (
            f"Name of the environment variable holding the webhook's secret on the workers, "
            f"starting with {SECRET_PREFIX} (for example {SECRET_PREFIX}NIGHTLY). The secret "
            "itself is never stored or shown."
        )

    def clean_threshold(self) -> float:
        threshold = self.cleaned_data["threshold"]
        if not 0 < threshold <= 1:
            raise forms.ValidationError("A drop between 0 and 1 (0.05 is five points).")
        return threshold

    def clean_emails(self) -> str:
        lines = [line.strip() for line in self.cleaned_data["emails"].splitlines()]
        addresses = [line for line in lines if line]
        for number, address in enumerate(addresses, start=1):
            try:
                validate_email(address)
            except forms.ValidationError:
                raise forms.ValidationError(
                    f"Line {number}: {address[:80]!r} is not an email address."
                ) from None
        return "\n".join(addresses)

    def clean_webhook_url(self) -> str:
        url = self.cleaned_data["webhook_url"]
        if url and (problem := webhooks.problem(url)):
            raise forms.ValidationError(problem)
        return url

    def clean_secret_env(self) -> str:
        name = self.cleaned_data["secret_env"].strip()
        if name and not secret_variable_allowed(name):
            raise forms.ValidationError(
                f"Name a variable starting with {SECRET_PREFIX}, in capitals, digits and _."
            )
        return name

    def clean(self) -> dict:
        data = super().clean()
        if data.get("webhook_url") and not data.get("secret_env"):
            self.add_error("secret_env", "A webhook needs the variable holding its secret.")
        if not data.get("webhook_url") and not data.get("emails"):
            raise forms.ValidationError("Give email addresses, a webhook, or both.")
        return data
