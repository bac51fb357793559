from __future__ import annotations

from django.urls import path

from evaluation.datasets import views

urlpatterns = [
    path("datasets/<int:pk>/export/", views.dataset_export, name="dataset-export"),
    path("exports/<uuid:token>/", views.export_status, name="export-status"),
    path("exports/<uuid:token>/download/", views.export_download, name="export-download"),
    path("datasets/import/", views.dataset_import, name="dataset-import"),
]
