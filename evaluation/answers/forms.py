"""The form of the answers upload on the answers page."""

from __future__ import annotations

from django import forms

from config.uploads import validate_upload_size


class AnswersUploadForm(forms.Form):
    file = forms.FileField(
        help_text="JSONL or CSV: query, system, text; optional system_version, "
        "external_id, run_label.",
        validators=[validate_upload_size],
    )
