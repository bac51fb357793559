from __future__ import annotations

from django.urls import path

from evaluation.views import runs as views

urlpatterns = [
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
