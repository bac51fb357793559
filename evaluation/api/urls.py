from __future__ import annotations

from rest_framework.routers import DefaultRouter

from evaluation.api import views

router = DefaultRouter()
router.register("judges", views.JudgeViewSet, basename="judge")
router.register("panels", views.PanelViewSet, basename="panel")
router.register("runs", views.RunViewSet, basename="run")
router.register("verdicts", views.VerdictViewSet, basename="verdict")
router.register("systems", views.SystemViewSet, basename="system")
router.register("answers", views.AnswerViewSet, basename="answer")

urlpatterns = router.urls
