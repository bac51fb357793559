"""The form of the answers upload on the answers page."""

from __future__ import annotations

from django import forms

from config.uploads import validate_upload_size


class AnswersUploadForm(forms.Form):
    file = forms.FileField(
        help_text="JSONL or CSV: query, system, text; optional system_version, "
        "external_id, run_label, sample (0 by default; 0, 1, 2… for several answers of a "
        "system to a query).",
        validators=[validate_upload_size],
    )
