"""A trial's actions on the run API: its comparison with the baseline and "Use this judge".

They stay at /api/runs/{id}/comparison/ and /api/runs/{id}/use-judge/: the router registers
this RunViewSet, the run API's own with the trial's actions added, because trials sit above
runs (a run does not import its trials).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from evaluation.runs import api as runs_api
from evaluation.runs import serializers as s
from evaluation.trials.selectors import comparison
from evaluation.trials.serialize import comparison_data
from evaluation.trials.services import TrialError, use_trial_judges


class RunViewSet(runs_api.RunViewSet):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def comparison(self, request: Request, pk: int) -> Response:
        """A trial beside its baseline on the same labelled items (docs/trials.md)."""
        return Response(comparison_data(comparison(self.get_object())))

    @extend_schema(request=None, responses={200: s.RunSerializer, 409: s.DetailSerializer})
    @action(detail=True, methods=["post"], url_path="use-judge")
    def use_judge(self, request: Request, pk: int) -> Response:
        """Adopt the trial ("Use this judge"): the baseline's panel takes its judges.
        For those who may change panels (the Admin group)."""
        run = self.get_object()
        if not request.user.has_perm("evaluation.change_panel"):
            raise PermissionDenied("Only those who manage panels adopt a judge.")
        try:
            use_trial_judges(trial=run)
        except TrialError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(s.RunSerializer(run).data)
