"""Perfect answers (`/api/perfect-answers/`) and overlaps (`/api/overlaps/`).

Perfect answers follow their checklist's blind rule: the list holds only those of
checklists the user may read, and any other id is a 404. Writing is for the checklist's
author and the dataset's admins. Overlaps, like runs, are for reviewers and admins.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.access import access_dataset, access_query, dataset_permissions
from evaluation.answers.models import Answer
from evaluation.cross_evaluation import selectors, services, sources
from evaluation.cross_evaluation.access import (
    access_perfect_answer_checklist,
    perfect_answers_for_user,
)
from evaluation.judges.models import Judge
from evaluation.metrics import overlap as om
from evaluation.runs.access import can_see_runs


class PerfectAnswerSerializer(serializers.ModelSerializer):
    checklist = serializers.IntegerField(source="checklist_id")
    author = serializers.SlugRelatedField(slug_field="username", read_only=True)
    checklist_author = serializers.CharField(source="checklist.author.username", read_only=True)

    class Meta:
        model = Answer
        fields = [
            "id", "checklist", "checklist_author", "query", "text", "author", "drafted_by",
            "draft_prompt_version", "created_at", "updated_at",
        ]  # fmt: skip
        read_only_fields = [
            "id", "query", "author", "drafted_by", "draft_prompt_version", "created_at",
            "updated_at",
        ]  # fmt: skip


class PerfectAnswerUpdateSerializer(serializers.Serializer):
    text = serializers.CharField(max_length=services.MAX_TEXT)


class DraftRequestSerializer(serializers.Serializer):
    checklist = serializers.IntegerField()
    judge = serializers.PrimaryKeyRelatedField(
        queryset=Judge.objects.filter(kind=Judge.Kind.LLM),
        required=False,
        help_text="Default: the first LLM judge of the dataset's cross-evaluation panel.",
    )


class DraftQueuedSerializer(serializers.Serializer):
    task_id = serializers.CharField()
    judge = serializers.IntegerField()


class PerfectAnswerViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = PerfectAnswerSerializer
    filterset_fields = ["query", "checklist", "query__dataset"]
    http_method_names = ["get", "post", "put", "patch", "head", "options"]

    def get_queryset(self):
        return perfect_answers_for_user(self.request.user).order_by("pk")

    def get_object(self) -> Answer:
        answer = (
            Answer.objects.filter(pk=self.kwargs["pk"], checklist__isnull=False)
            .select_related("checklist__author", "author")
            .first()
        )
        if answer is None:
            raise Http404("No such perfect answer.")
        edit = self.action in ("update", "partial_update")
        access_perfect_answer_checklist(self.request.user, answer.checklist_id, edit=edit)
        return answer

    def _save(self, checklist_id: int, text: str) -> Answer:
        checklist = access_perfect_answer_checklist(self.request.user, checklist_id, edit=True)
        try:
            return services.perfect_answer_save(
                checklist=checklist, text=text, by=self.request.user
            )
        except services.CrossEvaluationRefused as exc:
            field = "checklist" if "submit" in str(exc) else "text"
            raise ValidationError({field: [str(exc)]}) from exc

    @extend_schema(responses={201: PerfectAnswerSerializer})
    def create(self, request: Request) -> Response:
        """Write the perfect answer of a submitted checklist (its author or a dataset admin).
        A checklist has one perfect answer: posting again replaces its text."""
        payload = PerfectAnswerSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        answer = self._save(payload.validated_data["checklist_id"], payload.validated_data["text"])
        return Response(PerfectAnswerSerializer(answer).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=PerfectAnswerUpdateSerializer, responses={200: PerfectAnswerSerializer})
    def update(self, request: Request, *args: object, **kwargs: object) -> Response:
        answer = self.get_object()
        payload = PerfectAnswerUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        answer = self._save(answer.checklist_id, payload.validated_data["text"])
        return Response(PerfectAnswerSerializer(answer).data)

    @extend_schema(request=PerfectAnswerUpdateSerializer, responses={200: PerfectAnswerSerializer})
    def partial_update(self, request: Request, *args: object, **kwargs: object) -> Response:
        return self.update(request, *args, **kwargs)

    @extend_schema(request=DraftRequestSerializer, responses={202: DraftQueuedSerializer})
    @action(detail=False, methods=["post"])
    def draft(self, request: Request) -> Response:
        """Ask an LLM to draft (or redraft) the perfect answer of a submitted checklist. The
        draft replaces the text when it arrives; poll the perfect answer for it."""
        payload = DraftRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        checklist = access_perfect_answer_checklist(
            request.user, payload.validated_data["checklist"], edit=True
        )
        judge = payload.validated_data.get("judge") or services.draft_judge(checklist.query.dataset)
        if judge is None:
            raise ValidationError(
                {"judge": ["Choose a judge: the dataset's cross-evaluation panel has no LLM."]}
            )
        try:
            task_id = services.perfect_answer_draft_request(checklist=checklist, judge=judge)
        except services.CrossEvaluationRefused as exc:
            raise ValidationError({"checklist": [str(exc)]}) from exc
        return Response({"task_id": task_id, "judge": judge.pk}, status=status.HTTP_202_ACCEPTED)


class OverlapCellSerializer(serializers.Serializer):
    query = serializers.IntegerField()
    a = serializers.IntegerField(help_text="Checklist whose perfect answer was graded.")
    b = serializers.IntegerField(help_text="Checklist whose criteria graded it.")
    a_author = serializers.CharField()
    b_author = serializers.CharField()
    is_self = serializers.BooleanField(help_text="A = B: the self-check, never in the mean.")
    overlap = serializers.FloatField(allow_null=True, help_text="passed / (passed + failed).")
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    undecided = serializers.IntegerField(help_text="Left out of the overlap, never a fail.")
    total = serializers.IntegerField(help_text="B's scored criteria.")


class HistogramBinSerializer(serializers.Serializer):
    low = serializers.FloatField()
    high = serializers.FloatField()
    count = serializers.IntegerField()


class OverlapSerializer(serializers.Serializer):
    source = serializers.CharField()
    query = serializers.IntegerField(allow_null=True)
    dataset = serializers.IntegerField()
    runs = serializers.ListField(child=serializers.IntegerField())
    mean = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    ci_method = serializers.CharField()
    n_pairs = serializers.IntegerField()
    n_queries = serializers.IntegerField()
    histogram = HistogramBinSerializer(many=True)
    cells = OverlapCellSerializer(many=True)


def _cells(overlaps: list[selectors.QueryOverlap]) -> list[dict[str, object]]:
    cells = []
    for q in overlaps:
        names = {c.pk: c.author.get_username() for c in q.checklists}
        for (a, b), pair in q.matrix.cells.items():
            cells.append(
                {
                    "query": q.query.pk, "a": a, "b": b, "a_author": names[a],
                    "b_author": names[b], "is_self": pair.is_self, "overlap": pair.overlap,
                    "passed": pair.passed, "failed": pair.failed, "undecided": pair.undecided,
                    "total": pair.total,
                }
            )  # fmt: skip
    return cells


class OverlapViewSet(viewsets.ViewSet):
    @extend_schema(
        parameters=[
            OpenApiParameter("query", OpenApiTypes.INT, description="One query's matrix."),
            OpenApiParameter("dataset", OpenApiTypes.INT, description="Every query's."),
            OpenApiParameter(
                "source", OpenApiTypes.STR, description="latest (default), human or run:<id>."
            ),
        ],
        responses={200: OverlapSerializer},
    )
    def list(self, request: Request) -> Response:
        """The overlap matrix of a query (?query=) or of every query of a dataset
        (?dataset=), with the mean over ordered pairs A ≠ B and its 95% interval."""
        query_id, dataset_id = (
            request.query_params.get("query"),
            request.query_params.get("dataset"),
        )
        if bool(query_id) == bool(dataset_id):
            raise ValidationError({"query": ["Give exactly one of query or dataset."]})
        try:
            source = sources.Source.parse(request.query_params.get("source"))
        except sources.UnknownSource as exc:
            raise ValidationError({"source": [str(exc)]}) from exc
        query = access_query(request.user, query_id) if query_id else None
        dataset = query.dataset if query else access_dataset(request.user, dataset_id)
        if not can_see_runs(dataset_permissions(request.user, dataset)):
            raise PermissionDenied("Overlaps are for the dataset's reviewers and admins.")
        try:
            if query is not None:
                found = selectors.query_overlap(query, source)
                overlaps = [found] if found else []
                interval = om.mean_overlap({query.pk: found.matrix.pairs()} if found else {})
                bins = om.histogram(
                    p.overlap
                    for p in (found.matrix.pairs() if found else [])
                    if p.overlap is not None
                )
            else:
                overview = selectors.dataset_overlap(dataset, source)
                overlaps, interval, bins = overview.queries, overview.interval, overview.histogram
        except sources.UnknownSource as exc:
            raise ValidationError({"source": [str(exc)]}) from exc
        data = {
            "source": str(source), "query": query.pk if query else None, "dataset": dataset.pk,
            "runs": sorted({q.run.pk for q in overlaps if q.run is not None}),
            "mean": interval.mean, "ci_low": interval.low, "ci_high": interval.high,
            "ci_method": interval.method, "n_pairs": interval.n_pairs,
            "n_queries": interval.n_queries,
            "histogram": [{"low": b.low, "high": b.high, "count": b.count} for b in bins],
            "cells": _cells(overlaps),
        }  # fmt: skip
        return Response(OverlapSerializer(data).data)
