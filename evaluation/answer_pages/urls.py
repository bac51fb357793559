"""The answers pages' routes (included by evaluation.urls)."""

from __future__ import annotations

from django.urls import path

from evaluation.answer_pages import views

urlpatterns = [
    path("datasets/<int:pk>/answers/", views.dataset_answers, name="dataset-answers"),
    path("answers/<int:pk>/", views.answer_detail, name="answer-detail"),
]
