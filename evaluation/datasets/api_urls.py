"""Before the dataset router in config/urls.py: its detail route would take
`datasets/import/` for a dataset with the id "import"."""

from __future__ import annotations

from django.urls import path

from evaluation.datasets import api

urlpatterns = [
    path("datasets/import/", api.DatasetImportView.as_view(), name="dataset-import"),
    path("datasets/<int:pk>/export/", api.DatasetExportView.as_view(), name="dataset-export"),
    path("exports/<uuid:token>/", api.ExportStatusView.as_view(), name="export-status"),
    path(
        "exports/<uuid:token>/download/", api.ExportDownloadView.as_view(), name="export-download"
    ),
]
