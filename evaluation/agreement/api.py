"""Agreement figures and the imports of human labels and judge verdicts."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import access_dataset, dataset_permissions
from config.ids import MAX_ID
from evaluation.agreement.selectors import agreement_report
from evaluation.agreement.serialize import report_data
from evaluation.runs.access import can_see_runs
from evaluation.runs.models import Run


class AgreementQuerySerializer(serializers.Serializer):
    dataset = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    run = serializers.IntegerField(min_value=1, max_value=MAX_ID, required=False)


class AgreementView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("dataset", int, required=True, description="Dataset id."),
            OpenApiParameter("run", int, description="Run id; default: the latest finished run."),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        """Every figure of the dataset's agreement page (reviewers and admins)."""
        params = AgreementQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        dataset = access_dataset(request.user, params.validated_data["dataset"])
        if not can_see_runs(dataset_permissions(request.user, dataset)):
            raise PermissionDenied("Agreement is for the dataset's reviewers and admins.")
        try:
            report = agreement_report(dataset, params.validated_data.get("run"))
        except Run.DoesNotExist:
            raise Http404("No such run in this dataset.") from None
        return Response(report_data(report))
