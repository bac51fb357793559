"""One check of an uploaded file's size, for the page forms and the API serializers alike."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from config import limits


def upload_size_problem(upload: object) -> str | None:
    size = getattr(upload, "size", 0) or 0
    limit = limits.upload_max_bytes()
    if size > limit:
        name = getattr(upload, "name", "The file")
        return (
            f"{name} is {size / 1_048_576:.1f} MB; files are accepted up to "
            f"{limit / 1_048_576:.0f} MB (IMPORT_MAX_BYTES). Split it into several files."
        )
    return None


def validate_upload_size(upload: object) -> None:
    """A Django validator (forms.FileField(validators=[...]))."""
    if problem := upload_size_problem(upload):
        raise ValidationError(problem)
