"""The API's filter backend: relations filter by id without looking the id up.

django-filter's default for a foreign key is a choice filter that answers 400 for an id that
does not exist, while an id the user may not see passes and yields an empty page: the
difference tells anyone which ids exist. Filtering by number makes both an empty page.
"""

from __future__ import annotations

from django.db import models
from django_filters import NumberFilter
from django_filters.rest_framework import DjangoFilterBackend, FilterSet


class IdFilterSet(FilterSet):
    FILTER_DEFAULTS = {
        **FilterSet.FILTER_DEFAULTS,
        models.ForeignKey: {"filter_class": NumberFilter},
        models.OneToOneField: {"filter_class": NumberFilter},
        models.ManyToManyField: {"filter_class": NumberFilter},
    }


class IdFilterBackend(DjangoFilterBackend):
    filterset_base = IdFilterSet
