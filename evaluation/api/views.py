"""Judges and panels (site-wide; the Admin group manages them), runs and verdicts (per
dataset; its reviewers and admins see them, its admins start and stop runs)."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation import permissions as access
from annotation import roles
from annotation.selectors import datasets_for_user
from config.pagination import CountlessPagination
from evaluation.api import serializers as s
from evaluation.api.scores import RunProgressSerializer, progress_data
from evaluation.imports import ImportRejected, decode_upload, import_answers
from evaluation.models import Answer, Judge, Panel, Run, System, Verdict
from evaluation.permissions import access_run, runs_for_user
from evaluation.runs import services as runs
from evaluation.runs.overview import run_overview


class ModelPermsOrReadOnly(permissions.DjangoModelPermissions):
    """Any signed-in user reads; writing needs the model permission (the Admin group)."""

    def has_permission(self, request, view) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return bool(request.user and request.user.is_authenticated)
        return super().has_permission(request, view)


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


class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.RunSerializer
    filterset_fields = ["dataset", "status", "panel"]

    def get_queryset(self):
        return runs_for_user(self.request.user).order_by("-created_at", "-id")

    def get_object(self) -> Run:
        manage = self.action in ("cancel", "resume", "retry_failed")
        return access_run(self.request.user, self.kwargs["pk"], manage=manage)

    @extend_schema(request=s.RunCreateSerializer, responses={201: s.RunSerializer})
    def create(self, request: Request) -> Response:
        """Create a run and start it at once."""
        payload = s.RunCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        dataset = access.access_dataset(request.user, data["dataset"].pk, roles.CHANGE)
        try:
            run = runs.run_create_and_start(
                dataset=dataset, panel=data["panel"], by=request.user,
                name=data.get("name", ""), queries=data.get("queries", []),
                systems=data.get("systems", []),
                answer_run_label=data.get("answer_run_label", ""),
                concurrency=data.get("concurrency", 16),
            )  # fmt: skip
        except ValueError as exc:
            raise ValidationError({"queries": [str(exc)]}) from exc
        except runs.RunRefused as refused:
            raise ValidationError({refused.field or "non_field_errors": refused.problems}) from None
        except runs.RunStateError as exc:
            raise ValidationError({"non_field_errors": [str(exc)]}) from exc
        return Response(s.RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: RunProgressSerializer})
    @action(detail=True, methods=["get"])
    def progress(self, request: Request, pk: int) -> Response:
        run = self.get_object()
        return Response(progress_data(run, run_overview(run)))

    def _act(self, service) -> Response:
        """A lifecycle action: the run as it is after it, or 409 with the reason when its
        status does not allow it (or 400 when a pre-flight check refuses it)."""
        try:
            run = service(run=self.get_object())
        except runs.RunRefused as refused:
            raise ValidationError({"non_field_errors": refused.problems}) from None
        except runs.RunStateError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(s.RunSerializer(run).data)

    @extend_schema(request=None, responses={200: s.RunSerializer, 409: s.DetailSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: int) -> Response:
        """Cancel a pending or running run; calls in flight finish and are kept."""
        return self._act(runs.run_cancel)

    @extend_schema(request=None, responses={200: s.RunSerializer, 409: s.DetailSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: int) -> Response:
        """Continue a cancelled or failed run. On a running run: queue again, at once, the
        tasks that no live worker holds (the sweep does it by itself within a minute)."""
        return self._act(runs.run_resume)

    @extend_schema(request=None, responses={200: s.RunSerializer, 409: s.DetailSerializer})
    @action(detail=True, methods=["post"], url_path="retry-failed")
    def retry_failed(self, request: Request, pk: int) -> Response:
        """Redo the calls of an ended run that ended in error."""
        return self._act(runs.run_retry_failed)


class VerdictViewSet(viewsets.ReadOnlyModelViewSet):
    pagination_class = CountlessPagination
    serializer_class = s.VerdictSerializer
    filterset_fields = ["run", "answer", "criterion", "judge", "outcome", "cache_hit"]

    def get_queryset(self):
        return Verdict.objects.filter(run__in=runs_for_user(self.request.user)).order_by("pk")

    def get_object(self) -> Verdict:
        verdict = Verdict.objects.filter(pk=self.kwargs["pk"]).select_related("run").first()
        if verdict is None:
            raise Http404("No such verdict.")
        access_run(self.request.user, verdict.run_id)
        return verdict


class SystemViewSet(viewsets.ModelViewSet):
    queryset = System.objects.all()
    serializer_class = s.SystemSerializer
    permission_classes = [ModelPermsOrReadOnly]
    http_method_names = ["get", "post", "patch", "head", "options"]
    search_fields = ["name", "version"]


class AnswerViewSet(viewsets.ReadOnlyModelViewSet):
    """Answers of the datasets the user is a member of. Written by the import endpoint."""

    pagination_class = CountlessPagination

    serializer_class = s.AnswerSerializer
    filterset_fields = ["query", "system", "run_label", "query__dataset"]

    def get_queryset(self):
        visible = datasets_for_user(self.request.user)
        # Perfect answers restate blind checklists: they are served by /api/perfect-answers/
        # under the checklist's blind rule, never here.
        answers = Answer.objects.filter(query__dataset__in=visible, checklist__isnull=True)
        return answers.order_by("pk")

    def get_object(self) -> Answer:
        answer = Answer.objects.select_related("query__dataset").filter(
            pk=self.kwargs["pk"], checklist__isnull=True
        )
        answer = answer.first()
        if answer is None:
            raise Http404("No such answer.")
        access.check_dataset(self.request.user, answer.query.dataset)
        return answer

    @extend_schema(
        request={"multipart/form-data": s.AnswerImportSerializer},
        responses={201: s.AnswerImportResultSerializer},
    )
    @action(detail=False, methods=["post"], url_path="import")
    def import_file(self, request: Request) -> Response:
        """Import a JSONL or CSV file of answers into a dataset (its admins only). The whole
        file is checked first; any error rejects it with every error listed."""
        payload = s.AnswerImportSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        dataset = access.access_dataset(
            request.user, payload.validated_data["dataset"].pk, roles.CHANGE
        )
        upload = payload.validated_data["file"]
        try:
            content = decode_upload(upload.name, upload.read())
            result = import_answers(dataset=dataset, name=upload.name, content=content)
        except ImportRejected as rejected:
            raise ValidationError({"file": rejected.errors}) from rejected
        return Response(s.AnswerImportResultSerializer(result).data, status=status.HTTP_201_CREATED)
