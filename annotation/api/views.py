"""API views. Lists come from selectors (only what the user was granted); single objects come
from the same access helpers the pages use, so an id in a URL never bypasses a permission."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from rest_framework import viewsets

from annotation import permissions, roles, selectors, services
from annotation.api.serializers import DatasetSerializer, QuerySerializer
from annotation.models import Dataset, Query

DATASET_ACTION_PERMS = {
    "retrieve": roles.VIEW,
    "update": roles.CHANGE,
    "partial_update": roles.CHANGE,
    "destroy": roles.DELETE,
}


class DatasetViewSet(viewsets.ModelViewSet):
    serializer_class = DatasetSerializer
    search_fields = ["name", "description"]
    ordering_fields = ["name", "created_at"]

    def get_queryset(self):
        return selectors.dataset_list(self.request.user)

    def get_object(self) -> Dataset:
        perm = DATASET_ACTION_PERMS.get(self.action, roles.VIEW)
        dataset = permissions.access_dataset(self.request.user, self.kwargs["pk"], perm)
        dataset.query_count = dataset.queries.count()
        return dataset

    def perform_create(self, serializer: DatasetSerializer) -> None:
        if not self.request.user.has_perm("annotation.add_dataset"):
            raise PermissionDenied("Only admins may create datasets.")
        dataset = services.dataset_create(**serializer.validated_data, by=self.request.user)
        dataset.query_count = 0
        serializer.instance = dataset


class QueryViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = QuerySerializer
    filterset_fields = ["dataset", "status", "category"]
    search_fields = ["text"]
    ordering_fields = ["id", "query_date"]

    def get_queryset(self):
        return selectors.queries_for_user(self.request.user)

    def get_object(self) -> Query:
        return permissions.access_query(self.request.user, self.kwargs["pk"])
