from __future__ import annotations

from rest_framework import viewsets

from config.permissions import ModelPermsOrReadOnly
from evaluation.judges import serializers as s
from evaluation.models import Judge, Panel


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
