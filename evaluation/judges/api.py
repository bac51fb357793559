from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.permissions import ModelPermsOrReadOnly
from evaluation.judges import serializers as s
from evaluation.judges.rebuild import verdict_prompt
from evaluation.models import Judge, JudgeVersion, Panel, Verdict
from evaluation.runs.permissions import access_run


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
        verdict = (
            Verdict.objects.select_related("judge", "answer__query", "criterion")
            .filter(pk=pk)
            .first()
        )
        if verdict is None:
            raise Http404("No such verdict.")
        access_run(request.user, verdict.run_id)
        version = (verdict.judge_params or {}).get("prompt_version")
        try:
            sent = verdict_prompt(verdict)
        except ValueError:
            sent, note = None, "This verdict was not made by a judge prompt (a check, an import)."
        except JudgeVersion.DoesNotExist:
            sent, note = None, "The instructions and examples of this version are not kept."
        else:
            note = (
                "Rebuilt from the version: exact for answers graded on themselves; evidence is "
                "cut again with the judge's current budget."
            )
        return Response({"verdict": verdict.pk, "prompt_version": version, "messages": sent,
                         "note": note})  # fmt: skip
