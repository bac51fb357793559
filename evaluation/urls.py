from __future__ import annotations

from django.urls import path

from evaluation.views import agreement, alerts, analytics, cross_evaluation, review, schedules
from evaluation.views import judges as judge_views
from evaluation.views import runs as views

urlpatterns = [
    path("datasets/<int:pk>/review/", review.review_queue, name="review-queue"),
    path("datasets/<int:pk>/review/assign/", review.review_assign, name="review-assign"),
    path("datasets/<int:pk>/review/next/", review.review_next, name="review-next"),
    path("answers/<int:pk>/review/", review.answer_review, name="answer-review"),
    path("answers/<int:pk>/review/label/", review.answer_review_label, name="answer-review-label"),
    path("answers/<int:pk>/review/undo/", review.answer_review_undo, name="answer-review-undo"),
    path(
        "answers/<int:pk>/review/adjudicate/",
        review.answer_review_adjudicate,
        name="answer-review-adjudicate",
    ),
    path(
        "checklists/<int:pk>/perfect-answer/",
        cross_evaluation.perfect_answer,
        name="perfect-answer",
    ),
    path(
        "checklists/<int:pk>/perfect-answer/preview/",
        cross_evaluation.perfect_answer_preview,
        name="perfect-answer-preview",
    ),
    path(
        "checklists/<int:pk>/perfect-answer/draft/",
        cross_evaluation.perfect_answer_draft,
        name="perfect-answer-draft",
    ),
    path(
        "checklists/<int:pk>/perfect-answer/draft/status/",
        cross_evaluation.perfect_answer_draft_status,
        name="perfect-answer-draft-status",
    ),
    path("queries/<int:pk>/overlaps/", cross_evaluation.query_overlaps, name="query-overlaps"),
    path(
        "queries/<int:pk>/overlaps/start/",
        cross_evaluation.query_cross_evaluation_start,
        name="query-cross-evaluation-start",
    ),
    path(
        "datasets/<int:pk>/cross-evaluation/",
        cross_evaluation.dataset_cross_evaluation,
        name="dataset-cross-evaluation",
    ),
    path(
        "datasets/<int:pk>/cross-evaluation/overlaps.csv",
        cross_evaluation.dataset_overlaps_csv,
        name="dataset-overlaps-csv",
    ),
    path("datasets/<int:pk>/agreement/", agreement.dataset_agreement, name="dataset-agreement"),
    path("datasets/<int:pk>/agreement/items/", agreement.agreement_items, name="agreement-items"),
    path("datasets/<int:pk>/analytics/", analytics.dataset_analytics, name="dataset-analytics"),
    path(
        "datasets/<int:pk>/analytics/complexity.csv",
        analytics.complexity_csv,
        name="analytics-complexity-csv",
    ),
    path(
        "datasets/<int:pk>/analytics/complexity.svg",
        analytics.complexity_svg,
        name="analytics-complexity-svg",
    ),
    path("datasets/<int:pk>/analytics/compare/", analytics.compare_runs, name="analytics-compare"),
    path(
        "datasets/<int:pk>/analytics/freshness/",
        analytics.analytics_freshness,
        name="analytics-freshness",
    ),
    path("datasets/<int:pk>/schedules/", schedules.dataset_schedules, name="dataset-schedules"),
    path(
        "datasets/<int:pk>/schedules/<int:schedule_pk>/",
        schedules.schedule_edit,
        name="schedule-edit",
    ),
    path(
        "datasets/<int:pk>/schedules/<int:schedule_pk>/delete/",
        schedules.schedule_delete,
        name="schedule-delete",
    ),
    path("datasets/<int:pk>/alerts/", alerts.dataset_alerts, name="dataset-alerts"),
    path("datasets/<int:pk>/alerts/<int:alert_pk>/", alerts.alert_edit, name="alert-edit"),
    path(
        "datasets/<int:pk>/alerts/<int:alert_pk>/delete/",
        alerts.alert_delete,
        name="alert-delete",
    ),
    path(
        "datasets/<int:pk>/analytics/criteria/",
        analytics.criterion_health,
        name="analytics-criteria",
    ),
    path("judges/", judge_views.judge_list, name="judge-list"),
    path("judges/new/", judge_views.judge_create, name="judge-create"),
    path("judges/<int:pk>/", judge_views.judge_edit, name="judge-edit"),
    path("judges/<int:pk>/test/", judge_views.judge_test, name="judge-test"),
    path("panels/", judge_views.panel_list, name="panel-list"),
    path("panels/new/", judge_views.panel_create, name="panel-create"),
    path("panels/<int:pk>/", judge_views.panel_edit, name="panel-edit"),
    path("datasets/<int:pk>/runs/", views.dataset_runs, name="dataset-runs"),
    path("datasets/<int:pk>/answers/", views.dataset_answers, name="dataset-answers"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/answers/<int:answer_id>/", views.run_answer, name="run-answer"),
    path(
        "runs/<int:pk>/<str:action>/",
        views.run_action,
        name="run-action",
    ),
]
