"""API views. Lists come from selectors (only what the user may read); single objects come
from the same access helpers the pages use, so an id in a URL never bypasses a permission.
Writes go through annotation.services, exactly as the pages' do."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import django_filters
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count, Prefetch, Q
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, MethodNotAllowed, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation import access, guidelines, roles, scoring, selectors, services
from annotation.api import serializers as s
from annotation.models import (
    Checklist,
    Criterion,
    CriterionGroup,
    Dataset,
    Guideline,
    Query,
    SourceType,
)
from annotation.services import groups
from annotation.services.checklists import CitationData
from config.api_filters import IdFilterSet
from config.pagination import CountlessPagination
from config.permissions import ModelPermsOrReadOnly

DATASET_ACTION_PERMS = {
    "retrieve": roles.VIEW,
    "update": roles.CHANGE,
    "partial_update": roles.CHANGE,
    "destroy": roles.DELETE,
}


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The object is not in a state that allows this."
    default_code = "conflict"


def rejected(report, keys: dict[str, str] | None = None) -> Response:
    """400 with the failing rules. A Response, not an APIException: DRF would turn the
    booleans and nulls of the payload into strings."""
    payload = s.report_payload(report, keys=keys)
    detail = f"{len(payload['errors'])} guideline error(s) block submission."
    return Response({"detail": detail, **payload}, status=status.HTTP_400_BAD_REQUEST)


class SourceTypeViewSet(viewsets.ReadOnlyModelViewSet):
    """The managed list of source types (banned ones are flagged). Read by any user."""

    queryset = SourceType.objects.all()
    serializer_class = s.SourceTypeSerializer
    filterset_fields = ["is_banned"]
    search_fields = ["name", "slug"]


def _guideline_invalid(exc: services.GuidelineInvalid) -> ValidationError:
    errors: dict = {}
    for key, message in exc.errors.items():
        top, _, path = key.partition(".")
        if path:
            errors.setdefault(top, {})[path] = [message]
        else:
            errors[top] = [message]
    return ValidationError(errors)


class GuidelineViewSet(
    mixins.CreateModelMixin, mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet
):
    """Versioned guideline rule settings. Read by any signed-in user; created and edited by
    those with the model permissions (the Admin group). Editing a version under which
    checklists were submitted saves the next version (see docs/guidelines.md)."""

    queryset = Guideline.objects.all()
    serializer_class = s.GuidelineSerializer
    permission_classes = [ModelPermsOrReadOnly]
    filterset_fields = ["name", "version"]
    http_method_names = ["get", "post", "patch", "head", "options"]

    @extend_schema(request=s.GuidelineWriteSerializer, responses={201: s.GuidelineSerializer})
    def create(self, request: Request) -> Response:
        payload = s.GuidelineWriteSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        if "preset" not in data and "config" not in data:
            raise ValidationError({"config": ["give a preset, a full config, or both"]})
        try:
            guideline = services.guideline_create(
                name=data.get("name", ""), description=data.get("description", ""),
                config=data.get("config"), preset=data.get("preset"),
            )  # fmt: skip
        except services.GuidelineInvalid as exc:
            raise _guideline_invalid(exc) from None
        return Response(s.GuidelineSerializer(guideline).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.GuidelineWriteSerializer, responses={200: s.GuidelineSavedSerializer})
    def partial_update(self, request: Request, *args: object, **kwargs: object) -> Response:
        """Change the description and/or the config (partial: missing keys keep their value)."""
        payload = s.GuidelineWriteSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        guideline = self.get_object()
        if "name" in data and data["name"] != guideline.name:
            raise ValidationError({"name": ["a guideline's versions share its name"]})
        if "preset" in data:
            raise ValidationError({"preset": ["only on create; edit the config instead"]})
        try:
            saved = services.guideline_update(
                guideline=guideline, description=data.get("description"),
                config=data.get("config"),
            )  # fmt: skip
        except services.GuidelineInvalid as exc:
            raise _guideline_invalid(exc) from None
        out = saved.guideline
        out.new_version, out.datasets_moved = saved.new_version, list(saved.datasets_moved)
        return Response(s.GuidelineSavedSerializer(out).data)


class DatasetViewSet(viewsets.ModelViewSet):
    serializer_class = s.DatasetSerializer
    search_fields = ["name", "description"]
    ordering_fields = ["name", "created_at"]

    def get_queryset(self):
        return selectors.dataset_list(self.request.user)

    def get_object(self) -> Dataset:
        perm = DATASET_ACTION_PERMS.get(self.action, roles.VIEW)
        if self.action == "destroy":
            return access.access_dataset_for_delete(self.request.user, self.kwargs["pk"])
        dataset = access.access_dataset(self.request.user, self.kwargs["pk"], perm)
        dataset.query_count = dataset.queries.count()
        return dataset

    def perform_create(self, serializer: s.DatasetSerializer) -> None:
        if not self.request.user.has_perm("annotation.add_dataset"):
            raise PermissionDenied("Only admins may create datasets.")
        dataset = services.dataset_create(**serializer.validated_data, by=self.request.user)
        dataset.query_count = 0
        serializer.instance = dataset

    def perform_update(self, serializer: s.DatasetSerializer) -> None:
        try:
            services.dataset_update(dataset=serializer.instance, **serializer.validated_data)
        except scoring.ScoringRefused as exc:  # a strategy that cannot score some criterion
            raise ValidationError(exc.message_dict) from exc

    @extend_schema(
        request=None,
        responses={202: s.DatasetDeletionSerializer},
        description="Delete the dataset with everything in it. Answers 202 at once: from "
        "then on the dataset is 404 for everyone and gone from every list, while a worker "
        "deletes its rows in the background. Deleting it again answers 202 too.",
    )
    def destroy(self, request: Request, *args: object, **kwargs: object) -> Response:
        dataset = self.get_object()
        services.dataset_delete(dataset=dataset)
        body = s.DatasetDeletionSerializer(dataset).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


class QueryFilter(IdFilterSet):
    category = django_filters.CharFilter(field_name="category__name")
    assigned_to_me = django_filters.BooleanFilter(method="filter_assigned_to_me")
    submitted = django_filters.NumberFilter(
        field_name="submitted_count", help_text="Exact number of submitted checklists."
    )

    class Meta:
        model = Query
        fields = ["dataset", "status", "category"]

    def filter_assigned_to_me(self, queryset, name, value):
        user = self.request.user
        return queryset.filter(assigned_experts=user.pk) if value else queryset


class QueryViewSet(viewsets.ModelViewSet):
    pagination_class = CountlessPagination
    filterset_class = QueryFilter
    search_fields = ["text"]
    ordering_fields = ["id", "query_date"]

    def get_serializer_class(self):
        return s.QuerySerializer if self.action in ("list", "retrieve") else s.QueryWriteSerializer

    def get_queryset(self):
        return (
            selectors.queries_for_user(self.request.user)
            .select_related("created_by")
            .prefetch_related("tags", "assigned_experts")
            .annotate(
                submitted_count=Count(
                    "checklists",
                    filter=Q(checklists__status=Checklist.Status.SUBMITTED),
                    distinct=True,
                )
            )
        )

    def get_object(self) -> Query:
        user, pk = self.request.user, self.kwargs["pk"]
        if self.action in ("update", "partial_update"):
            return access.access_query_for_edit(user, pk)
        perm = roles.VIEW if self.action == "retrieve" else roles.CHANGE
        return access.access_query(user, pk, perm)

    def perform_create(self, serializer: s.QueryWriteSerializer) -> None:
        dataset = serializer.validated_data["dataset"]
        access.access_dataset_for_new_query(self.request.user, dataset.pk)
        try:
            serializer.instance = services.query_create(
                **serializer.validated_data, by=self.request.user
            )
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from exc

    def perform_update(self, serializer: s.QueryWriteSerializer) -> None:
        fields = dict(serializer.validated_data)
        moving = "dataset" in fields and fields["dataset"].pk != serializer.instance.dataset_id
        if moving:  # moving a query needs admin rights on both datasets
            access.access_query(self.request.user, serializer.instance.pk, roles.CHANGE)
            access.access_dataset(self.request.user, fields["dataset"].pk, roles.CHANGE)
        try:
            serializer.instance = services.query_update(
                query=serializer.instance, tags=fields.pop("tags", None), **fields
            )
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from exc

    def perform_destroy(self, instance: Query) -> None:
        services.query_delete(query=instance)


class ChecklistViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Checklists, blind: a checklist the user may not read is a 404, in lists and by id."""

    http_method_names = ["get", "post", "patch", "head", "options"]

    pagination_class = CountlessPagination

    serializer_class = s.ChecklistSerializer
    filterset_fields = {"query": ["exact"], "query__dataset": ["exact"], "status": ["exact"]}
    ordering_fields = ["id", "updated_at"]

    def get_queryset(self):
        return (
            selectors.checklists_for_user(self.request.user)
            .select_related("author", "guideline")
            .prefetch_related(
                Prefetch(
                    "criteria",
                    queryset=Criterion.objects.active().prefetch_related(
                        "source_types", "citations__source_type", "formality_advice"
                    ),
                ),
                "groups",
            )
            .order_by("id")
        )

    def get_object(self) -> Checklist:
        edit = self.action in ("submit", "reopen")
        checklist = access.access_checklist(self.request.user, self.kwargs["pk"], edit=edit)
        return self.get_queryset().get(pk=checklist.pk) if not edit else checklist

    @extend_schema(request=s.ChecklistCreateSerializer, responses={201: s.ChecklistSerializer})
    def create(self, request: Request) -> Response:
        """Create a checklist with all its criteria in one request (and submit it if asked)."""
        payload = s.ChecklistCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        query = access.access_query(
            request.user, payload.validated_data["query"].pk, roles.ANNOTATE
        )
        perms = access.dataset_permissions(request.user, query.dataset)
        if not access.can_start_checklist(request.user, query, perms):
            raise PermissionDenied("Other experts are assigned to this query.")
        criteria = payload.criteria_data()
        report = _dry_run(query, criteria)
        if payload.validated_data["submit"] and report.blocking:
            return rejected(report, keys=_index_keys(criteria))
        try:
            checklist = services.checklist_create_with_criteria(
                query=query, by=request.user, criteria=criteria,
                submit=payload.validated_data["submit"],
            )  # fmt: skip
        except services.ChecklistNotEditable as exc:  # ChecklistExists: one per author
            raise Conflict(str(exc)) from exc
        except scoring.ScoringRefused as exc:  # a weight the dataset's strategy cannot score
            raise ValidationError(exc.message_dict) from exc
        except services.ChecklistRejected as exc:  # rules that read the stored checklist
            return rejected(exc.report, keys=_index_keys(criteria))
        body = dict(self.get_serializer(self.get_queryset().get(pk=checklist.pk)).data)
        body["validation"] = s.report_payload(report, keys=_index_keys(criteria))
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.ChecklistScoringSerializer, responses={200: s.ChecklistSerializer})
    def partial_update(self, request: Request, pk: int) -> Response:
        """Change the checklist's own scoring strategy and undecided setting (its author or
        a dataset admin); its criteria are changed through /api/criteria/."""
        checklist = access.access_checklist_scoring(request.user, pk)
        payload = s.ChecklistScoringSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            services.checklist_set_scoring(
                checklist=checklist, by=request.user,
                strategy=payload.validated_data.get("scoring"),
                undecided=payload.validated_data.get("undecided"),
            )  # fmt: skip
        except DjangoValidationError as exc:  # ScoringRefused: a weight it cannot score
            raise ValidationError(exc.message_dict) from exc
        return Response(self.get_serializer(self.get_queryset().get(pk=checklist.pk)).data)

    @extend_schema(request=None, responses={200: s.ChecklistSerializer})
    @action(detail=True, methods=["post"])
    def submit(self, request: Request, pk: int) -> Response:
        """Submit the checklist; refused with the failing rules if any error remains."""
        checklist = self.get_object()
        try:
            services.checklist_submit(checklist=checklist, by=request.user)
        except services.ChecklistRejected as exc:
            return rejected(exc.report)
        except services.ChecklistNotEditable as exc:
            raise Conflict(str(exc)) from exc
        return Response(self.get_serializer(self.get_queryset().get(pk=checklist.pk)).data)

    @extend_schema(request=None, responses={200: s.ChecklistSerializer})
    @action(detail=True, methods=["post"])
    def reopen(self, request: Request, pk: int) -> Response:
        checklist = services.checklist_reopen(checklist=self.get_object(), by=request.user)
        return Response(self.get_serializer(self.get_queryset().get(pk=checklist.pk)).data)

    @extend_schema(responses={200: s.ValidationResultSerializer})
    @action(detail=True, methods=["get"], url_path="validation")
    def validation(self, request: Request, pk: int) -> Response:
        """The rule results of the checklist as stored."""
        checklist = self.get_object()
        return Response(s.report_payload(guidelines.checklist_report(checklist)))

    @extend_schema(
        request=s.ChecklistCreateSerializer, responses={200: s.ValidationResultSerializer}
    )
    @action(detail=False, methods=["post"])
    def validate(self, request: Request) -> Response:
        """Dry run: the rule results for a checklist payload, without saving anything."""
        payload = s.ChecklistCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        query = access.access_query(request.user, payload.validated_data["query"].pk)
        criteria = payload.criteria_data()
        report = _dry_run(query, criteria)
        return Response(s.report_payload(report, keys=_index_keys(criteria)))


def _dry_run(query: Query, criteria) -> object:
    config = guidelines.config_of(guidelines.guideline_for(query.dataset))
    return guidelines.validate_checklist(
        guidelines.input_from_data(criteria, query.query_date), config
    )


def _index_keys(criteria) -> dict[str, str]:
    return {str(i): f"criteria[{i}]" for i in range(len(criteria))}


class CriterionFilter(IdFilterSet):
    archived = django_filters.BooleanFilter(
        field_name="archived_at",
        lookup_expr="isnull",
        exclude=True,
        help_text="Archived criteria (deleted or reworded while they carried reviewers' "
        "work) are left out of lists unless this is true; by id they are always readable.",
    )

    class Meta:
        model = Criterion
        fields = ["checklist", "kind"]

    @property
    def qs(self):
        queryset = super().qs
        if self.form.cleaned_data.get("archived") is None:
            queryset = queryset.filter(archived_at__isnull=True)
        return queryset


class CriterionViewSet(viewsets.ModelViewSet):
    """Criteria of readable checklists; only the author changes them, while not submitted.
    Every write answers with the criterion's rule results under "validation"."""

    pagination_class = CountlessPagination

    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    filterset_class = CriterionFilter
    ordering_fields = ["position"]

    def get_serializer_class(self):
        return {
            "create": s.CriterionCreateSerializer,
            "partial_update": s.CriterionUpdateSerializer,
        }.get(self.action, s.CriterionSerializer)

    def get_queryset(self):
        return (
            Criterion.objects.filter(checklist__in=selectors.checklists_for_user(self.request.user))
            .prefetch_related("source_types", "citations__source_type", "formality_advice")
            .order_by("checklist_id", "position")
        )

    def get_object(self) -> Criterion:
        edit = self.action in ("partial_update", "destroy")
        return access.access_criterion(self.request.user, self.kwargs["pk"], edit=edit)

    def _respond(self, criterion: Criterion, code: int = status.HTTP_200_OK) -> Response:
        criterion = self.get_queryset().get(pk=criterion.pk)
        report = guidelines.checklist_report(criterion.checklist)
        body = dict(s.CriterionSerializer(criterion).data)
        findings = report.for_criterion(str(criterion.pk))
        body["validation"] = s.report_payload(type(report)(findings=findings))
        return Response(body, status=code)

    @extend_schema(request=s.CriterionCreateSerializer, responses={201: s.CriterionSerializer})
    def create(self, request: Request) -> Response:
        payload = s.CriterionCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        checklist = access.access_checklist(
            request.user, payload.validated_data["checklist"].pk, edit=True
        )
        try:
            criterion = services.criterion_add(
                checklist=checklist, by=request.user, data=payload.to_data()
            )
        except services.ChecklistNotEditable as exc:
            raise Conflict(str(exc)) from exc
        except scoring.ScoringRefused as exc:  # a weight the checklist's strategy cannot score
            raise ValidationError(exc.message_dict) from exc
        return self._respond(criterion, status.HTTP_201_CREATED)

    @extend_schema(request=s.CriterionUpdateSerializer, responses={200: s.CriterionSerializer})
    def partial_update(self, request: Request, pk: int) -> Response:
        criterion = self.get_object()
        payload = s.CriterionUpdateSerializer(data=request.data, partial=True)
        payload.is_valid(raise_exception=True)
        v = payload.validated_data
        try:
            criterion = services.criterion_update(
                criterion=criterion,
                by=request.user,
                text=v.get("text"),
                kind=v.get("kind"),
                source_types=v.get("source_types"),
                notes=v.get("notes"),
                weight=v.get("weight"),
                is_core=v.get("is_core"),
            )
            if "group" in v:
                criterion = groups.criterion_set_group(
                    criterion=criterion, by=request.user, group=v["group"]
                )
            if "citations" in v:
                services.criterion_replace_citations(
                    criterion=criterion,
                    by=request.user,
                    citations=[CitationData(**c) for c in v["citations"]],
                )
        except services.ChecklistNotEditable as exc:
            raise Conflict(str(exc)) from exc
        except groups.GroupRefused as exc:
            raise ValidationError({"group": [str(exc)]}) from exc
        except scoring.ScoringRefused as exc:  # a weight the checklist's strategy cannot score
            raise ValidationError(exc.message_dict) from exc
        return self._respond(criterion)

    @extend_schema(responses={200: s.CriterionArchivedSerializer, 204: None})
    def destroy(self, request: Request, pk: int) -> Response:
        """Delete a criterion; one that carries labels, adjudications or verdicts is archived
        instead (200 with what was kept), never destroyed."""
        criterion = self.get_object()
        try:
            work = services.criterion_delete(criterion=criterion, by=request.user)
        except services.ChecklistNotEditable as exc:
            raise Conflict(str(exc)) from exc
        if not work:
            return Response(status=status.HTTP_204_NO_CONTENT)
        body = {"archived": True, "id": criterion.pk, **dataclasses.asdict(work)}
        return Response(s.CriterionArchivedSerializer(body).data)


class GroupViewSet(
    mixins.CreateModelMixin, mixins.UpdateModelMixin, mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):  # fmt: skip
    """A checklist's groups (aspects): create, change (title, description, weight, parent,
    position) and delete, by the checklist's author while it is editable. Read them with the
    checklist (`groups`); a criterion's group is set by PATCH /api/criteria/{id}/."""

    serializer_class = s.GroupSerializer
    queryset = CriterionGroup.objects.none()
    http_method_names = ["post", "patch", "delete"]

    def get_object(self) -> CriterionGroup:
        return access.access_group(self.request.user, self.kwargs["pk"], edit=True)

    def create(self, request: Request) -> Response:
        # The checklist's permission first: validating the body first would answer 400
        # "object does not exist" for a missing checklist and 404 for a hidden one, telling
        # an outsider which ids exist. A checklist that is not a number is the body's error.
        body = request.data if isinstance(request.data, Mapping) else {}
        try:
            named = int(body.get("checklist"))
        except (TypeError, ValueError):
            named = None
        if named is not None:
            access.access_checklist(request.user, named, edit=True)
        payload = s.GroupSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        v = payload.validated_data
        checklist = access.access_checklist(request.user, v["checklist"].pk, edit=True)
        try:
            group = groups.group_create(
                checklist=checklist, by=request.user, title=v["title"],
                description=v.get("description", ""), weight=v.get("weight", 1),
                parent=v.get("parent"), position=v.get("position"),
                external_id=v.get("external_id", ""),
            )  # fmt: skip
        except groups.GroupRefused as exc:
            raise ValidationError({"parent": [str(exc)]}) from exc
        except services.ChecklistNotEditable as exc:
            raise Conflict(str(exc)) from exc
        return Response(s.GroupSerializer(group).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request: Request, pk: str) -> Response:
        group = self.get_object()
        payload = s.GroupSerializer(group, data=request.data, partial=True)
        payload.is_valid(raise_exception=True)
        changes = {k: v for k, v in payload.validated_data.items() if k != "checklist"}
        try:
            group = groups.group_update(group=group, by=request.user, **changes)
        except groups.GroupRefused as exc:
            raise ValidationError({"parent": [str(exc)]}) from exc
        except services.ChecklistNotEditable as exc:
            raise Conflict(str(exc)) from exc
        return Response(s.GroupSerializer(group).data)

    def update(self, request: Request, *args: object, **kwargs: object) -> Response:
        raise MethodNotAllowed("PUT")

    def destroy(self, request: Request, pk: str) -> Response:
        group = self.get_object()
        try:
            groups.group_delete(group=group, by=request.user)
        except services.ChecklistNotEditable as exc:
            raise Conflict(str(exc)) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)
