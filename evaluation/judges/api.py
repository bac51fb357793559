from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.permissions import ModelPermsOrReadOnly
from evaluation.judges import serializers as s
from evaluation.judges.rebuild import prompt_sent
from evaluation.models import Judge, Panel
from evaluation.runs.permissions import access_verdict


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


class VerdictPromptSerializer(serializers.Serializer):
    verdict = serializers.IntegerField()
    prompt_version = serializers.CharField(allow_null=True)
    messages = serializers.ListField(child=serializers.DictField(), allow_null=True)
    note = serializers.CharField()


class VerdictPromptView(APIView):
    """The prompt sent for a verdict, rebuilt from the prompt version it records (the
    judge's instructions and examples of that version: evaluation.judges.rebuild)."""

    @extend_schema(responses={200: VerdictPromptSerializer})
    def get(self, request: Request, pk: int) -> Response:
        verdict = access_verdict(request.user, pk)
        sent = prompt_sent(verdict)
        return Response({"verdict": verdict.pk, "prompt_version": sent.version,
                         "messages": sent.messages, "note": sent.note})  # fmt: skip
