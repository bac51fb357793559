"""Judges and panels (site-wide; the Admin group manages them), runs and verdicts (per
dataset; its reviewers and admins see them, its admins start and stop runs)."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import access, roles
from config.pagination import CountlessPagination
from evaluation.runs import serializers as s
from evaluation.runs import services as runs
from evaluation.runs import stability_pass
from evaluation.runs.access import access_run, access_verdict, runs_for_user
from evaluation.runs.estimate import estimate_selection, panel_members, run_estimate
from evaluation.runs.models import Run, Verdict
from evaluation.runs.overview import run_overview
from evaluation.runs.rebuild import prompt_sent
from evaluation.runs.scores_api import RunProgressSerializer, progress_data


class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.RunSerializer
    filterset_fields = ["dataset", "status", "panel"]

    def get_queryset(self):
        return runs_for_user(self.request.user).order_by("-created_at", "-id")

    def get_object(self) -> Run:
        manage = self.action in ("cancel", "resume", "retry_failed", "stability_pass")
        return access_run(self.request.user, self.kwargs["pk"], manage=manage)

    def _start_request(self, request: Request) -> tuple[dict, dict]:
        """The start request's fields, checked: the dataset is one the user may change,
        the baseline one of its runs."""
        payload = s.RunCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        dataset = access.access_dataset(request.user, data["dataset"].pk, roles.CHANGE)
        baseline = None
        if data.get("baseline") is not None:
            baseline = dataset.runs.filter(pk=data["baseline"]).first()
            if baseline is None:
                raise ValidationError({"baseline": ["No such run in this dataset."]})
        fields = {
            "dataset": dataset, "panel": data["panel"], "name": data.get("name", ""),
            "queries": data.get("queries", []), "systems": data.get("systems", []),
            "answer_run_label": data.get("answer_run_label", ""),
            "concurrency": data.get("concurrency", 16),
            "scope": data.get("scope", Run.Scope.ALL), "baseline": baseline,
        }  # fmt: skip
        return data, fields

    @extend_schema(request=s.RunCreateSerializer, responses={201: s.RunSerializer})
    def create(self, request: Request) -> Response:
        """Create a run and start it at once. `"scope": "labelled"` starts a trial."""
        _, fields = self._start_request(request)
        try:
            run = runs.run_create_and_start(by=request.user, **fields)
        except ValueError as exc:
            raise ValidationError({"queries": [str(exc)]}) from exc
        except runs.RunRefused as refused:
            raise ValidationError({refused.field or "non_field_errors": refused.problems}) from None
        except runs.RunStateError as exc:
            raise ValidationError({"non_field_errors": [str(exc)]}) from exc
        return Response(s.RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.RunCreateSerializer, responses={200: s.EstimateSerializer})
    @action(detail=False, methods=["post"])
    def estimate(self, request: Request) -> Response:
        """What the run this body would start will cost, before it starts: the same body as
        `POST /api/runs/`; nothing is created (docs/trials.md#cost-before-you-spend)."""
        _, fields = self._start_request(request)
        try:
            found = run_estimate(estimate_selection(fields), panel_members(fields["panel"]))
        except ValueError as exc:
            raise ValidationError({"queries": [str(exc)]}) from exc
        return Response(found.as_json())

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

    @extend_schema(
        request=s.StabilityPassSerializer,
        responses={201: s.RunSerializer, 200: s.EstimateSerializer, 409: s.PassRunningSerializer},
    )
    @action(detail=True, methods=["post"], url_path="stability-pass")
    def stability_pass(self, request: Request, pk: int) -> Response:
        """Start a stability pass of this finished run: `items` of its items graded `k`
        times by `judge`, one of its panel's LLM judges, past the cache; for the dataset's
        admins (docs/judging.md#stability-pass). `"estimate_only": true` answers its
        estimate and creates nothing. 409 while a pass of the run is pending or running."""
        run = self.get_object()
        payload = s.StabilityPassSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        asked = stability_pass.PassRequest(judge_id=data["judge"], k=data["k"], items=data["items"])
        try:
            if data.get("estimate_only"):
                return Response(stability_pass.pass_estimate(run, asked).as_json())
            found = stability_pass.stability_pass_start(run=run, asked=asked, by=request.user)
        except runs.RunRefused as refused:
            raise ValidationError({refused.field or "non_field_errors": refused.problems}) from None
        except stability_pass.PassRunning as busy:
            return Response(
                {"detail": str(busy), "running": busy.running.pk}, status=status.HTTP_409_CONFLICT
            )
        return Response(s.RunSerializer(found).data, status=status.HTTP_201_CREATED)

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


class VerdictPromptSerializer(serializers.Serializer):
    verdict = serializers.IntegerField()
    prompt_version = serializers.CharField(allow_null=True)
    messages = serializers.ListField(child=serializers.DictField(), allow_null=True)
    note = serializers.CharField()


class VerdictPromptView(APIView):
    """The prompt sent for a verdict, rebuilt from the prompt version it records (the
    judge's instructions and examples of that version: evaluation.runs.rebuild)."""

    @extend_schema(responses={200: VerdictPromptSerializer})
    def get(self, request: Request, pk: int) -> Response:
        verdict = access_verdict(request.user, pk)
        sent = prompt_sent(verdict)
        return Response({"verdict": verdict.pk, "prompt_version": sent.version,
                         "messages": sent.messages, "note": sent.note})  # fmt: skip
