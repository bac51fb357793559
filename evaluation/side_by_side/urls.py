"""The side-by-side page's route (included by evaluation.urls; the API's is in its
api_urlpatterns)."""

from __future__ import annotations

from django.urls import path

from evaluation.side_by_side import views

urlpatterns = [
    path(
        "datasets/<int:pk>/side-by-side/", views.dataset_side_by_side, name="dataset-side-by-side"
    ),
]
