"""Review assignments API: who works which queue item.

Admins of a dataset assign items to anyone who reviews it, or clear them; a reviewer takes
an unassigned item for themselves and releases their own. Reading needs review_dataset on
the dataset (404 for non-members, 403 for experts). Writes call evaluation.review.services,
as the queue page does.
"""

from __future__ import annotations

import django_filters
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation import roles
from annotation.access import access_dataset
from annotation.selectors import datasets_for_user
from config.api_filters import IdFilter, IdFilterSet
from config.ids import is_id
from evaluation.labels.models import ReviewAssignment
from evaluation.review import services
from evaluation.review.access import access_answer, reviewable_criterion


class ReviewAssignmentSerializer(serializers.ModelSerializer):
    assignee = serializers.SlugRelatedField(slug_field="username", read_only=True)
    assigned_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    dataset = serializers.IntegerField(source="answer.query.dataset_id", read_only=True)

    class Meta:
        model = ReviewAssignment
        fields = [
            "id", "queue", "dataset", "answer", "criterion", "assignee", "assigned_by",
            "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class AssignWriteSerializer(serializers.Serializer):
    queue = serializers.ChoiceField(choices=ReviewAssignment.Queue.choices)
    answer = serializers.IntegerField()
    criterion = serializers.IntegerField(
        required=False, allow_null=True, help_text="For the disagreement queue only."
    )
    assignee = serializers.CharField(
        required=False, help_text="A username; yourself when left out."
    )


class AssignmentFilter(IdFilterSet):
    dataset = IdFilter(field_name="answer__query__dataset")
    assignee = django_filters.CharFilter(field_name="assignee__username")
    mine = django_filters.BooleanFilter(method="filter_mine")

    class Meta:
        model = ReviewAssignment
        fields = ["dataset", "queue", "answer", "criterion", "assignee"]

    def filter_mine(self, queryset, name, value):
        return queryset.filter(assignee=self.request.user) if value else queryset


class ReviewAssignmentViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Queue items given to reviewers. POST assigns (admins: anyone who reviews the dataset;
    reviewers: themselves, an unassigned item); DELETE clears (admins: any; reviewers:
    their own)."""

    serializer_class = ReviewAssignmentSerializer
    filterset_class = AssignmentFilter

    def get_queryset(self):
        reviewed = datasets_for_user(self.request.user, roles.REVIEW)
        return (
            ReviewAssignment.objects.filter(answer__query__dataset__in=reviewed)
            .select_related("assignee", "assigned_by", "answer__query")
            .order_by("pk")
        )

    def get_object(self) -> ReviewAssignment:
        found = (
            ReviewAssignment.objects.select_related("assignee", "assigned_by", "answer__query")
            .filter(pk=self.kwargs["pk"])
            .first()
            if is_id(str(self.kwargs["pk"]))
            else None
        )
        if found is None:
            raise Http404("No such assignment.")
        access_answer(self.request.user, found.answer_id)
        return found

    def list(self, request: Request, *args, **kwargs) -> Response:
        value = request.query_params.get("dataset")
        if value and is_id(value):  # checked like the queue page: 404 / 403
            access_dataset(request.user, int(value), roles.REVIEW)
        return super().list(request, *args, **kwargs)

    def create(self, request: Request) -> Response:
        payload = AssignWriteSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        answer, _perms = access_answer(request.user, data["answer"])
        criterion = (
            reviewable_criterion(answer, data["criterion"])
            if data.get("criterion") is not None
            else None
        )
        assignee = request.user
        if data.get("assignee"):
            assignee = get_user_model().objects.filter(username=data["assignee"]).first()
            if assignee is None:
                raise ValidationError({"assignee": [f"No user is called {data['assignee']!r}."]})
        try:
            assignment = services.assignment_set(
                queue=data["queue"], answer=answer, criterion=criterion, assignee=assignee,
                by=request.user,
            )  # fmt: skip
        except services.ReviewError as exc:
            raise ValidationError({"detail": [str(exc)]}) from exc
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from exc
        return Response(ReviewAssignmentSerializer(assignment).data, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, pk: str) -> Response:
        assignment = self.get_object()
        try:
            services.assignment_clear(
                queue=assignment.queue, answer=assignment.answer,
                criterion=assignment.criterion, by=request.user,
            )  # fmt: skip
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)
