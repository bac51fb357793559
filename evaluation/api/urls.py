from __future__ import annotations

from django.urls import path

from config.routers import Router
from evaluation.api import agreement, analytics, cross_evaluation, review_assignments, scores, views
from evaluation.api import review as review_api

router = Router()
router.register("judges", views.JudgeViewSet, basename="judge")
router.register("panels", views.PanelViewSet, basename="panel")
router.register("runs", views.RunViewSet, basename="run")
router.register("verdicts", views.VerdictViewSet, basename="verdict")
router.register("systems", views.SystemViewSet, basename="system")
router.register("answers", views.AnswerViewSet, basename="answer")
router.register("perfect-answers", cross_evaluation.PerfectAnswerViewSet, basename="perfect-answer")
router.register("overlaps", cross_evaluation.OverlapViewSet, basename="overlap")
router.register("labels", review_api.HumanLabelViewSet, basename="label")
router.register("adjudications", review_api.AdjudicationViewSet, basename="adjudication")
router.register("review-queue", review_api.ReviewQueueViewSet, basename="review-queue")
router.register(
    "review-assignments",
    review_assignments.ReviewAssignmentViewSet,
    basename="review-assignment",
)

urlpatterns = [
    *router.urls,
    path("runs/<int:pk>/scores/", scores.RunScoresView.as_view(), name="run-scores"),
    path("agreement/", agreement.AgreementView.as_view(), name="agreement"),
    path("datasets/<int:pk>/analytics/", analytics.AnalyticsView.as_view(), name="analytics"),
    path(
        "datasets/<int:pk>/analytics/compare/",
        analytics.CompareView.as_view(),
        name="analytics-compare",
    ),
    path(
        "datasets/<int:pk>/analytics/criteria/",
        analytics.CriterionHealthView.as_view(),
        name="analytics-criteria",
    ),
    path("imports/labels/", agreement.LabelsImportView.as_view(), name="import-labels"),
    path("imports/verdicts/", agreement.VerdictsImportView.as_view(), name="import-verdicts"),
]
