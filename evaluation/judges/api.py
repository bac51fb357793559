from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import roles
from annotation.access import access_dataset
from config.permissions import ModelPermsOrReadOnly
from evaluation.judges import serializers as s
from evaluation.judges import tuning
from evaluation.judges.models import Judge, JudgeTuning, Panel


class JudgeViewSet(viewsets.ModelViewSet):
    queryset = Judge.objects.all()
    serializer_class = s.JudgeSerializer
    permission_classes = [ModelPermsOrReadOnly]
    http_method_names = ["get", "post", "patch", "head", "options"]


class PanelViewSet(viewsets.ModelViewSet):
    queryset = Panel.objects.prefetch_related("members")
    serializer_class = s.PanelSerializer
    permission_classes = [ModelPermsOrReadOnly]
    http_method_names = ["get", "post", "head", "options"]


class DatasetTuningsView(APIView):
    """What the dataset adds to each LLM judge's prompt (evaluation.judges.tuning): for its
    reviewers and admins. Judges the dataset never tuned are listed untuned."""

    @extend_schema(responses={200: s.TuningSerializer(many=True)})
    def get(self, request: Request, pk: int) -> Response:
        dataset = access_dataset(request.user, pk, roles.REVIEW)
        judges = Judge.objects.filter(kind=Judge.Kind.LLM).order_by("name")
        rows = {t.judge_id: t for t in JudgeTuning.objects.filter(dataset=dataset)}
        found = []
        for judge in judges:
            row = rows.get(judge.pk) or JudgeTuning(dataset=dataset)
            row.judge = judge  # already loaded: one query for the judges, not one per row
            found.append(row)
        return Response(s.TuningSerializer(found, many=True).data)


class JudgeTuningView(APIView):
    """One judge's tuning on the dataset: read by the dataset's reviewers and admins,
    replaced (PUT) or changed (PATCH) by its admins. A change is a new prompt version."""

    @extend_schema(responses={200: s.TuningSerializer})
    def get(self, request: Request, pk: int, judge_pk: int) -> Response:
        dataset, judge = self._objects(request, pk, judge_pk, roles.REVIEW)
        row = tuning.stored(judge, dataset.pk) or JudgeTuning(judge=judge, dataset=dataset)
        return Response(s.TuningSerializer(row).data)

    @extend_schema(request=s.TuningSerializer, responses={200: s.TuningSerializer})
    def put(self, request: Request, pk: int, judge_pk: int) -> Response:
        return self._save(request, pk, judge_pk, partial=False)

    @extend_schema(request=s.TuningSerializer, responses={200: s.TuningSerializer})
    def patch(self, request: Request, pk: int, judge_pk: int) -> Response:
        return self._save(request, pk, judge_pk, partial=True)

    def _objects(self, request: Request, pk: int, judge_pk: int, perm: str):
        dataset = access_dataset(request.user, pk, perm)
        return dataset, get_object_or_404(Judge, pk=judge_pk, kind=Judge.Kind.LLM)

    def _save(self, request: Request, pk: int, judge_pk: int, *, partial: bool) -> Response:
        dataset, judge = self._objects(request, pk, judge_pk, roles.CHANGE)
        given = s.TuningSerializer(data=request.data, partial=partial)
        given.is_valid(raise_exception=True)
        fields = given.validated_data
        if not partial:  # a PUT replaces both: what it leaves out is emptied
            fields = {"instructions": "", "examples": [], **fields}
        try:
            row = tuning.tuning_save(judge=judge, dataset=dataset, by=request.user, **fields)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(serializers.as_serializer_error(exc)) from None
        return Response(s.TuningSerializer(row).data, status=status.HTTP_200_OK)
