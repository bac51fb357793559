"""The API's filter backend: relations filter by id without looking the id up.

django-filter's default for a foreign key is a choice filter that answers 400 for an id that
does not exist, while an id the user may not see passes and yields an empty page: the
difference tells anyone which ids exist. Filtering by number makes both an empty page.
"""

from __future__ import annotations

from django import forms
from django.db import models
from django_filters import NumberFilter
from django_filters.rest_framework import DjangoFilterBackend, FilterSet

from config.ids import parse_id


class IdField(forms.Field):
    """An id: ASCII digits within a 64-bit column. "x", "²" or a 30-digit number is a 400
    naming the filter (a number past the column made SQLite raise OverflowError, a 500)."""

    def to_python(self, value: object) -> int | None:
        if value in self.empty_values:
            return None
        parsed = parse_id(str(value))
        if parsed is None:
            raise forms.ValidationError("Enter an id (a whole number).", code="invalid")
        return parsed


class IdFilter(NumberFilter):
    field_class = IdField


class IdFilterSet(FilterSet):
    FILTER_DEFAULTS = {
        **FilterSet.FILTER_DEFAULTS,
        models.ForeignKey: {"filter_class": IdFilter},
        models.OneToOneField: {"filter_class": IdFilter},
        models.ManyToManyField: {"filter_class": IdFilter},
        models.BigAutoField: {"filter_class": IdFilter},
        models.AutoField: {"filter_class": IdFilter},
    }


class IdFilterBackend(DjangoFilterBackend):
    filterset_base = IdFilterSet
