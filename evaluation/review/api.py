"""Review API: human labels, adjudications and the review queues.

Every call needs review_dataset on the dataset concerned (reviewers and admins): 404 for
non-members, 403 for experts. Lists contain only the datasets the user reviews; with
?dataset= the dataset is checked like a page would. Writes call evaluation.review.services,
the same functions as the review page.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation import roles
from annotation.access import access_dataset
from annotation.selectors import datasets_for_user
from config import limits
from config.api_filters import IdFilter, IdFilterSet
from config.ids import is_id, parse_id
from config.pagination import CountlessPagination
from evaluation.labels.models import Adjudication, HumanLabel, Label, ReviewAssignment
from evaluation.review import selectors, services
from evaluation.review.access import access_answer, reviewable_criterion
from evaluation.runs.models import Run

# --- serializers ----------------------------------------------------------------------------


class HumanLabelSerializer(serializers.ModelSerializer):
    reviewer = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = HumanLabel
        fields = [
            "id", "answer", "criterion", "rater", "reviewer", "label", "note", "source",
            "created_at", "updated_at",
        ]  # fmt: skip
        read_only_fields = fields


class LabelWriteSerializer(serializers.Serializer):
    answer = serializers.IntegerField()
    criterion = serializers.IntegerField()
    label = serializers.ChoiceField(choices=Label.choices)
    note = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=limits.REVIEW_NOTE,
        help_text="Absent: keep the note already there.",
    )


class LabelUpdateSerializer(serializers.Serializer):
    label = serializers.ChoiceField(choices=Label.choices)
    note = serializers.CharField(required=False, allow_blank=True, max_length=limits.REVIEW_NOTE)


class AdjudicationSerializer(serializers.ModelSerializer):
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Adjudication
        fields = [
            "id", "answer", "criterion", "label", "reason", "decided_by", "decided_at", "version",
        ]  # fmt: skip
        read_only_fields = fields


class AdjudicationWriteSerializer(serializers.Serializer):
    answer = serializers.IntegerField()
    criterion = serializers.IntegerField()
    label = serializers.ChoiceField(choices=Label.choices)
    reason = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=limits.ADJUDICATION_REASON
    )
    version = serializers.IntegerField(
        allow_null=True,
        min_value=1,
        help_text="The version you saw; null (or absent) when you saw no adjudication.",
        required=False,
        default=None,
    )


class AdjudicationConflictSerializer(serializers.Serializer):
    detail = serializers.CharField()
    current = AdjudicationSerializer(allow_null=True)


class QueueItemSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    answer = serializers.IntegerField()
    criterion = serializers.IntegerField(allow_null=True)
    query = serializers.IntegerField()
    system = serializers.CharField()
    criterion_text = serializers.CharField(allow_blank=True)
    run = serializers.IntegerField(allow_null=True, help_text="The run whose verdicts count.")
    verdict = serializers.CharField(allow_null=True, help_text="The panel's verdict.")
    passes = serializers.IntegerField(allow_null=True)
    fails = serializers.IntegerField(allow_null=True)
    invalid = serializers.IntegerField(allow_null=True)
    split = serializers.BooleanField(allow_null=True)
    human_labels = serializers.ListField(child=serializers.CharField())
    reason = serializers.CharField(allow_blank=True)
    criteria = serializers.IntegerField(allow_null=True)
    labels = serializers.IntegerField(allow_null=True)
    mine = serializers.IntegerField(allow_null=True, help_text="Criteria you labelled.")
    uncertainty = serializers.FloatField(allow_null=True)
    assignee = serializers.CharField(allow_null=True)


def _with_freshness(response: Response, cold: selectors.ColdOrder | None) -> Response:
    """Say in headers when the order served is not the current one (the cold rule,
    evaluation.kept.cold): `Figures-Updating: computing` (no order yet: no items) or
    `updating` (an earlier order), and `Figures-Retry-At` after a failed refresh
    (docs/api.md#queue-items). The body keeps its shape."""
    if cold is not None:
        response["Figures-Updating"] = "computing" if cold.computing else "updating"
        if cold.failure is not None:
            response["Figures-Retry-At"] = cold.failure.retry_at.isoformat()
    return response


def _queue_row(position: int, item) -> dict:
    assignee = item.assignment.assignee.get_username() if item.assignment else None
    base = {
        "position": position, "answer": item.answer.pk, "query": item.answer.query_id,
        "system": str(item.answer.system), "run": item.run.pk if item.run else None,
        "assignee": assignee,
    }  # fmt: skip
    if isinstance(item, selectors.DisagreementItem):
        v = item.facts.verdict
        return {
            **base, "criterion": item.criterion.pk, "criterion_text": item.criterion.text,
            "verdict": v.outcome, "passes": v.passes, "fails": v.fails, "invalid": v.invalid,
            "split": v.split, "human_labels": list(item.facts.human_labels),
            "reason": item.facts.reason, "criteria": None, "labels": None, "mine": None,
            "uncertainty": None,
        }  # fmt: skip
    return {
        **base, "criterion": None, "criterion_text": "", "verdict": None, "passes": None,
        "fails": None, "invalid": None, "split": None, "human_labels": [], "reason": "",
        "criteria": item.facts.criteria, "labels": item.facts.labels, "mine": item.mine,
        "uncertainty": item.facts.uncertainty,
    }  # fmt: skip


# --- filters --------------------------------------------------------------------------------


class LabelFilter(IdFilterSet):
    dataset = IdFilter(field_name="answer__query__dataset")

    class Meta:
        model = HumanLabel
        fields = ["dataset", "answer", "criterion", "rater", "source"]


class AdjudicationFilter(IdFilterSet):
    dataset = IdFilter(field_name="answer__query__dataset")

    class Meta:
        model = Adjudication
        fields = ["dataset", "answer", "criterion", "label"]


def _check_dataset_filter(request: Request) -> None:
    """?dataset= is checked like the dataset's pages: 404 non-members, 403 experts."""
    value = request.query_params.get("dataset")
    if value:
        if not is_id(value):
            raise ValidationError({"dataset": ["A dataset id."]})
        access_dataset(request.user, int(value), roles.REVIEW)


def _item(request: Request, answer_id: int, criterion_id: int):
    answer, _perms = access_answer(request.user, answer_id)
    return answer, reviewable_criterion(answer, criterion_id)


# --- views ----------------------------------------------------------------------------------


class HumanLabelViewSet(viewsets.ModelViewSet):
    """Human labels of the datasets you review. POST creates or updates your own label on an
    item (one per rater); PUT/PATCH change it; DELETE removes it. Others' labels are read-only."""

    pagination_class = CountlessPagination

    serializer_class = HumanLabelSerializer
    filterset_class = LabelFilter
    http_method_names = ["get", "post", "put", "patch", "delete", "head", "options"]

    def get_queryset(self):
        reviewed = datasets_for_user(self.request.user, roles.REVIEW)
        return (
            HumanLabel.objects.filter(answer__query__dataset__in=reviewed)
            .select_related("reviewer")
            .order_by("pk")
        )

    def get_object(self) -> HumanLabel:
        label = (
            HumanLabel.objects.select_related("reviewer", "criterion__checklist")
            .filter(pk=self.kwargs["pk"])
            .first()
            if is_id(str(self.kwargs["pk"]))
            else None
        )
        if label is None:
            raise Http404("No such label.")
        answer, _perms = access_answer(self.request.user, label.answer_id)
        label.answer = answer
        return label

    def list(self, request: Request, *args, **kwargs) -> Response:
        _check_dataset_filter(request)
        return super().list(request, *args, **kwargs)

    @extend_schema(
        request=LabelWriteSerializer,
        responses={200: HumanLabelSerializer, 201: HumanLabelSerializer},
    )
    def create(self, request: Request, *args, **kwargs) -> Response:
        """Set your label on an item: 201 when new, 200 when it replaced your earlier one."""
        payload = LabelWriteSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        answer, criterion = _item(request, data["answer"], data["criterion"])
        change = services.label_set(
            answer=answer, criterion=criterion, reviewer=request.user, label=data["label"],
            note=data.get("note"),
        )  # fmt: skip
        code = status.HTTP_201_CREATED if change.created else status.HTTP_200_OK
        return Response(HumanLabelSerializer(change.label).data, status=code)

    @extend_schema(request=LabelUpdateSerializer, responses={200: HumanLabelSerializer})
    def update(self, request: Request, *args, **kwargs) -> Response:
        label = self._own()
        payload = LabelUpdateSerializer(data=request.data, partial=kwargs.get("partial", False))
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        change = services.label_set(
            answer=label.answer, criterion=label.criterion, reviewer=request.user,
            label=data.get("label", label.label), note=data.get("note"),
        )  # fmt: skip
        return Response(HumanLabelSerializer(change.label).data)

    @extend_schema(request=LabelUpdateSerializer, responses={200: HumanLabelSerializer})
    def partial_update(self, request: Request, *args, **kwargs) -> Response:
        return self.update(request, *args, partial=True, **kwargs)

    def destroy(self, request: Request, *args, **kwargs) -> Response:
        services.label_delete(label=self._own(), by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _own(self) -> HumanLabel:
        label = self.get_object()
        if label.rater != self.request.user.get_username():
            raise PermissionDenied("You may change only your own labels.")
        return label


class AdjudicationViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Final labels of items. POST decides an item against the version you saw; a stale
    version gets 409 with the decision that stands, and nothing is written."""

    serializer_class = AdjudicationSerializer
    filterset_class = AdjudicationFilter
    pagination_class = CountlessPagination

    def get_queryset(self):
        reviewed = datasets_for_user(self.request.user, roles.REVIEW)
        return (
            Adjudication.objects.filter(answer__query__dataset__in=reviewed)
            .select_related("decided_by")
            .order_by("pk")
        )

    def get_object(self) -> Adjudication:
        pk = str(self.kwargs["pk"])
        adjudication = (
            Adjudication.objects.select_related("decided_by").filter(pk=pk).first()
            if is_id(pk)
            else None
        )
        if adjudication is None:
            raise Http404("No such adjudication.")
        access_answer(self.request.user, adjudication.answer_id)
        return adjudication

    def list(self, request: Request, *args, **kwargs) -> Response:
        _check_dataset_filter(request)
        return super().list(request, *args, **kwargs)

    @extend_schema(
        request=AdjudicationWriteSerializer,
        responses={
            200: AdjudicationSerializer,
            201: AdjudicationSerializer,
            409: OpenApiResponse(
                AdjudicationConflictSerializer,
                description="Someone decided since the version you saw: their decision is in "
                "`current`. Send again with its version to overrule it knowingly.",
            ),
        },
    )
    def create(self, request: Request) -> Response:
        """Decide an item (create or update its adjudication): 201 for the first decision,
        200 for a later one."""
        payload = AdjudicationWriteSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        answer, criterion = _item(request, data["answer"], data["criterion"])
        try:
            decision = services.adjudicate(
                answer=answer, criterion=criterion, by=request.user, label=data["label"],
                reason=data["reason"], expected_version=data["version"],
            )  # fmt: skip
        except services.AdjudicationConflict as conflict:
            current = AdjudicationSerializer(conflict.current).data if conflict.current else None
            return Response(
                {"detail": str(conflict), "current": current}, status=status.HTTP_409_CONFLICT
            )
        code = status.HTTP_201_CREATED if decision.version == 1 else status.HTTP_200_OK
        return Response(AdjudicationSerializer(decision).data, status=code)


class ReviewQueueViewSet(viewsets.GenericViewSet):
    """The ordered items of a dataset's labelling or disagreement queue."""

    serializer_class = QueueItemSerializer
    filter_backends: list = []

    @extend_schema(
        parameters=[
            OpenApiParameter("dataset", OpenApiTypes.INT, required=True),
            OpenApiParameter(
                "queue",
                OpenApiTypes.STR,
                enum=ReviewAssignment.Queue.values,
                description="labelling (default) or disagreement",
            ),
            OpenApiParameter(
                "run",
                OpenApiTypes.INT,
                description="Count this run's verdicts (default: the latest finished run that "
                "graded each answer).",
            ),
            OpenApiParameter("mine", OpenApiTypes.BOOL, description="Only items assigned to you."),
            OpenApiParameter(
                "answers",
                OpenApiTypes.STR,
                enum=["system", "perfect"],
                description="Labelling queue: the systems' answers (default), or the perfect "
                "answers of cross-evaluation.",
            ),
        ],
        responses={200: QueueItemSerializer(many=True)},
    )
    def list(self, request: Request) -> Response:
        value = request.query_params.get("dataset", "")
        if not is_id(value):
            raise ValidationError({"dataset": ["Required: a dataset id."]})
        dataset = access_dataset(request.user, int(value), roles.REVIEW)
        queue = request.query_params.get("queue") or ReviewAssignment.Queue.LABELLING
        if queue not in ReviewAssignment.Queue.values:
            raise ValidationError({"queue": ["labelling or disagreement."]})
        run = None
        run_value = request.query_params.get("run")
        if run_value:
            run = Run.objects.select_related("panel").filter(
                pk=parse_id(run_value) or 0, dataset=dataset
            ).first()  # fmt: skip
            if run is None:
                raise ValidationError({"run": ["No such run in this dataset."]})
        mine = request.query_params.get("mine") in ("1", "true", "True")
        answers = request.query_params.get("answers") or "system"
        if answers not in ("system", "perfect"):
            raise ValidationError({"answers": ["system or perfect."]})
        if queue == ReviewAssignment.Queue.LABELLING:
            items: list = selectors.labelling_queue(
                dataset, request.user, run=run, mine=mine, perfect=answers == "perfect"
            )
        else:
            items = selectors.disagreement_queue(dataset, request.user, run=run, mine=mine).items
        # Page first (the queue's items are made when read), then load that page's answers.
        page = self.paginate_queryset(items)
        if page is None:
            shown = list(enumerate(items, start=1))
        else:
            first = self.paginator.page.start_index()
            shown = list(enumerate(page, start=first))
        selectors.load_answers([item for _, item in shown])
        rows = [_queue_row(n, item) for n, item in shown]
        if page is not None:
            response = self.get_paginated_response(QueueItemSerializer(rows, many=True).data)
        else:
            response = Response(QueueItemSerializer(rows, many=True).data)
        return _with_freshness(response, items.cold)
