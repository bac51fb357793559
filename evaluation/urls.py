"""The evaluation app's routes: `urlpatterns` (pages) and `api_urlpatterns` (mounted under
/api/ by config.urls). Each view lives in the package of its concept."""

from __future__ import annotations

from django.urls import path

from config.routers import Router
from evaluation.agreement import api as agreement_api
from evaluation.agreement import views as agreement_views
from evaluation.alerts import views as alerts_views
from evaluation.analytics import api as analytics_api
from evaluation.analytics import views as analytics_views
from evaluation.answer_pages.urls import urlpatterns as answer_pages
from evaluation.answers import api as answers_api
from evaluation.checks import views as criterion_check_views
from evaluation.cross_evaluation import api as cross_evaluation_api
from evaluation.cross_evaluation import views as cross_evaluation_views
from evaluation.datasets import review_imports_api
from evaluation.judges import api as judges_api
from evaluation.judges import views as judges_views
from evaluation.pairwise import api as pairwise_api
from evaluation.pairwise import views as pairwise_views
from evaluation.review import api as review_api
from evaluation.review import assignments_api
from evaluation.review import views as review_views
from evaluation.rewards import api as rewards_api
from evaluation.rewards import views as rewards_views
from evaluation.runs import api as runs_api
from evaluation.runs import scores_api
from evaluation.runs import views as runs_views
from evaluation.schedules import views as schedules_views
from evaluation.side_by_side import api as side_by_side_api
from evaluation.side_by_side.urls import urlpatterns as side_by_side
from evaluation.trials import api as trials_api
from evaluation.trials import views as trials_views

urlpatterns = [
    *answer_pages,
    *side_by_side,
    path("criteria/<int:pk>/check/", criterion_check_views.criterion_check, name="criterion-check"),
    path("datasets/<int:pk>/review/", review_views.review_queue, name="review-queue"),
    path("datasets/<int:pk>/pairwise/", pairwise_views.dataset_pairwise, name="dataset-pairwise"),
    path("pairwise/<int:pk>/", pairwise_views.pairwise_session, name="pairwise-session"),
    path("pairwise/<int:pk>/vote/", pairwise_views.pairwise_vote, name="pairwise-vote"),
    path("pairwise/<int:pk>/undo/", pairwise_views.pairwise_undo, name="pairwise-undo"),
    path("pairwise/<int:pk>/judge/", pairwise_views.pairwise_judge, name="pairwise-judge"),
    path("datasets/<int:pk>/review/assign/", review_views.review_assign, name="review-assign"),
    path("datasets/<int:pk>/review/next/", review_views.review_next, name="review-next"),
    path("answers/<int:pk>/review/", review_views.answer_review, name="answer-review"),
    path(
        "answers/<int:pk>/review/label/",
        review_views.answer_review_label,
        name="answer-review-label",
    ),
    path(
        "answers/<int:pk>/review/undo/", review_views.answer_review_undo, name="answer-review-undo"
    ),
    path(
        "answers/<int:pk>/review/adjudicate/",
        review_views.answer_review_adjudicate,
        name="answer-review-adjudicate",
    ),
    path(
        "checklists/<int:pk>/perfect-answer/",
        cross_evaluation_views.perfect_answer,
        name="perfect-answer",
    ),
    path(
        "checklists/<int:pk>/perfect-answer/preview/",
        cross_evaluation_views.perfect_answer_preview,
        name="perfect-answer-preview",
    ),
    path(
        "checklists/<int:pk>/perfect-answer/draft/",
        cross_evaluation_views.perfect_answer_draft,
        name="perfect-answer-draft",
    ),
    path(
        "checklists/<int:pk>/perfect-answer/draft/status/",
        cross_evaluation_views.perfect_answer_draft_status,
        name="perfect-answer-draft-status",
    ),
    path(
        "queries/<int:pk>/overlaps/", cross_evaluation_views.query_overlaps, name="query-overlaps"
    ),
    path(
        "queries/<int:pk>/overlaps/start/",
        cross_evaluation_views.query_cross_evaluation_start,
        name="query-cross-evaluation-start",
    ),
    path(
        "datasets/<int:pk>/cross-evaluation/",
        cross_evaluation_views.dataset_cross_evaluation,
        name="dataset-cross-evaluation",
    ),
    path(
        "datasets/<int:pk>/cross-evaluation/overlaps.csv",
        cross_evaluation_views.dataset_overlaps_csv,
        name="dataset-overlaps-csv",
    ),
    path(
        "datasets/<int:pk>/agreement/", agreement_views.dataset_agreement, name="dataset-agreement"
    ),
    path(
        "datasets/<int:pk>/agreement/items/",
        agreement_views.agreement_items,
        name="agreement-items",
    ),
    path(
        "datasets/<int:pk>/analytics/", analytics_views.dataset_analytics, name="dataset-analytics"
    ),
    path(
        "datasets/<int:pk>/analytics/complexity.csv",
        analytics_views.complexity_csv,
        name="analytics-complexity-csv",
    ),
    path(
        "datasets/<int:pk>/analytics/complexity.svg",
        analytics_views.complexity_svg,
        name="analytics-complexity-svg",
    ),
    path(
        "datasets/<int:pk>/analytics/compare/",
        analytics_views.compare_runs,
        name="analytics-compare",
    ),
    path(
        "datasets/<int:pk>/analytics/freshness/",
        analytics_views.analytics_freshness,
        name="analytics-freshness",
    ),
    path(
        "datasets/<int:pk>/schedules/", schedules_views.dataset_schedules, name="dataset-schedules"
    ),
    path(
        "datasets/<int:pk>/schedules/<int:schedule_pk>/",
        schedules_views.schedule_edit,
        name="schedule-edit",
    ),
    path(
        "datasets/<int:pk>/schedules/<int:schedule_pk>/delete/",
        schedules_views.schedule_delete,
        name="schedule-delete",
    ),
    path("datasets/<int:pk>/alerts/", alerts_views.dataset_alerts, name="dataset-alerts"),
    path("datasets/<int:pk>/rewards/", rewards_views.dataset_rewards, name="dataset-rewards"),
    path("datasets/<int:pk>/alerts/<int:alert_pk>/", alerts_views.alert_edit, name="alert-edit"),
    path(
        "datasets/<int:pk>/alerts/<int:alert_pk>/delete/",
        alerts_views.alert_delete,
        name="alert-delete",
    ),
    path(
        "datasets/<int:pk>/analytics/criteria/",
        analytics_views.criterion_health,
        name="analytics-criteria",
    ),
    path("judges/", judges_views.judge_list, name="judge-list"),
    path("judges/new/", judges_views.judge_create, name="judge-create"),
    path("judges/<int:pk>/", judges_views.judge_edit, name="judge-edit"),
    path("judges/<int:pk>/test/", judges_views.judge_test, name="judge-test"),
    path("datasets/<int:pk>/tuning/", judges_views.dataset_tuning, name="dataset-tuning"),
    path(
        "datasets/<int:pk>/tuning/<int:judge_pk>/",
        judges_views.judge_tuning,
        name="judge-tuning",
    ),
    path(
        "datasets/<int:pk>/tuning/<int:judge_pk>/examples/",
        judges_views.judge_examples,
        name="judge-examples",
    ),
    path("panels/", judges_views.panel_list, name="panel-list"),
    path("panels/new/", judges_views.panel_create, name="panel-create"),
    path("panels/<int:pk>/", judges_views.panel_edit, name="panel-edit"),
    path("datasets/<int:pk>/runs/", runs_views.dataset_runs, name="dataset-runs"),
    path("datasets/<int:pk>/runs/estimate/", runs_views.run_estimate_page, name="run-estimate"),
    path("runs/<int:pk>/", runs_views.run_detail, name="run-detail"),
    path("runs/<int:pk>/answers/<int:answer_id>/", runs_views.run_answer, name="run-answer"),
    path("verdicts/<int:pk>/prompt/", runs_views.verdict_prompt, name="verdict-prompt-page"),
    # Before run-action's "runs/<pk>/<action>/", which would take these.
    path("runs/<int:pk>/comparison/", trials_views.run_comparison, name="run-comparison"),
    path("runs/<int:pk>/use-judge/", trials_views.run_use_judge, name="run-use-judge"),
    path(
        "runs/<int:pk>/stability-pass/",
        runs_views.run_stability_pass,
        name="run-stability-pass",
    ),
    path(
        "runs/<int:pk>/stability-pass/estimate/",
        runs_views.run_stability_pass_estimate,
        name="run-stability-pass-estimate",
    ),
    path(
        "runs/<int:pk>/<str:action>/",
        runs_views.run_action,
        name="run-action",
    ),
]


router = Router()
router.register("judges", judges_api.JudgeViewSet, basename="judge")
router.register("panels", judges_api.PanelViewSet, basename="panel")
router.register("runs", trials_api.RunViewSet, basename="run")  # with the trial actions
router.register("verdicts", runs_api.VerdictViewSet, basename="verdict")
router.register("systems", answers_api.SystemViewSet, basename="system")
router.register("answers", answers_api.AnswerViewSet, basename="answer")
router.register(
    "perfect-answers", cross_evaluation_api.PerfectAnswerViewSet, basename="perfect-answer"
)
router.register("overlaps", cross_evaluation_api.OverlapViewSet, basename="overlap")
router.register("labels", review_api.HumanLabelViewSet, basename="label")
router.register("adjudications", review_api.AdjudicationViewSet, basename="adjudication")
router.register("review-queue", review_api.ReviewQueueViewSet, basename="review-queue")
router.register(
    "review-assignments",
    assignments_api.ReviewAssignmentViewSet,
    basename="review-assignment",
)

api_urlpatterns = [
    *router.urls,
    path("runs/<int:pk>/scores/", scores_api.RunScoresView.as_view(), name="run-scores"),
    path("runs/<int:pk>/stability/", scores_api.RunStabilityView.as_view(), name="run-stability"),
    path("verdicts/<int:pk>/prompt/", runs_api.VerdictPromptView.as_view(), name="verdict-prompt"),
    path(
        "datasets/<int:pk>/tuning/",
        judges_api.DatasetTuningsView.as_view(),
        name="dataset-tunings-api",
    ),
    path(
        "datasets/<int:pk>/tuning/<int:judge_pk>/",
        judges_api.JudgeTuningView.as_view(),
        name="judge-tuning-api",
    ),
    path("agreement/", agreement_api.AgreementView.as_view(), name="agreement"),
    path("datasets/<int:pk>/analytics/", analytics_api.AnalyticsView.as_view(), name="analytics"),
    path(
        "datasets/<int:pk>/analytics/compare/",
        analytics_api.CompareView.as_view(),
        name="analytics-compare",
    ),
    path(
        "datasets/<int:pk>/analytics/trend/",
        analytics_api.TrendView.as_view(),
        name="analytics-trend",
    ),
    path(
        "datasets/<int:pk>/side-by-side/",
        side_by_side_api.SideBySideView.as_view(),
        name="side-by-side",
    ),
    path(
        "datasets/<int:pk>/analytics/criteria/",
        analytics_api.CriterionHealthView.as_view(),
        name="analytics-criteria",
    ),
    path(
        "datasets/<int:pk>/pairwise/",
        pairwise_api.SessionListView.as_view(),
        name="pairwise-sessions",
    ),
    path(
        "datasets/<int:pk>/pairwise/figures/",
        pairwise_api.DatasetFiguresView.as_view(),
        name="pairwise-figures",
    ),
    path("pairwise/<int:pk>/", pairwise_api.SessionView.as_view(), name="pairwise-session"),
    path("pairwise/<int:pk>/next/", pairwise_api.NextPairView.as_view(), name="pairwise-next"),
    path("pairwise/<int:pk>/votes/", pairwise_api.VoteView.as_view(), name="pairwise-votes"),
    path("pairwise/<int:pk>/undo/", pairwise_api.UndoView.as_view(), name="pairwise-undo"),
    path("imports/labels/", review_imports_api.LabelsImportView.as_view(), name="import-labels"),
    path(
        "imports/verdicts/", review_imports_api.VerdictsImportView.as_view(), name="import-verdicts"
    ),
    # Reward traffic: routes under api/rewards/ (a rewards-scope token reaches only these).
    path("rewards/", rewards_api.RewardsView.as_view(), name="rewards"),
    path("rewards/openrlhf/", rewards_api.OpenRlhfRewardsView.as_view(), name="rewards-openrlhf"),
    path("rewards/verify/", rewards_api.VerifyRewardView.as_view(), name="rewards-verify"),
]
