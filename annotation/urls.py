from __future__ import annotations

from django.urls import path

from annotation.views import datasets, editor, guidelines, queries

urlpatterns = [
    path("guidelines/", guidelines.guideline_list, name="guideline-list"),
    path("guidelines/new/", guidelines.guideline_create, name="guideline-create"),
    path("guidelines/<int:pk>/", guidelines.guideline_edit, name="guideline-edit"),
    path("datasets/new/", datasets.dataset_create, name="dataset-create"),
    path("datasets/<int:pk>/", datasets.dataset_detail, name="dataset-detail"),
    path("datasets/<int:pk>/settings/", datasets.dataset_edit, name="dataset-edit"),
    path("datasets/<int:pk>/progress/", datasets.dataset_progress, name="dataset-progress"),
    path("datasets/<int:pk>/queries/new/", queries.query_create, name="query-create"),
    path("queries/<int:pk>/", queries.query_detail, name="query-detail"),
    path("queries/<int:pk>/edit/", queries.query_edit, name="query-edit"),
    path("queries/<int:pk>/assign/", queries.query_assign, name="query-assign"),
    path("queries/<int:pk>/external-id/", queries.query_external_id, name="query-external-id"),
    path("queries/<int:pk>/my-checklist/", queries.checklist_start, name="checklist-start"),
    path("checklists/<int:pk>/", editor.checklist_detail, name="checklist-detail"),
    path("checklists/<int:pk>/criteria/", editor.criterion_create, name="criterion-create"),
    path("checklists/<int:pk>/submit/", editor.checklist_submit, name="checklist-submit"),
    path("checklists/<int:pk>/reopen/", editor.checklist_reopen, name="checklist-reopen"),
    path("checklists/<int:pk>/scoring/", editor.checklist_scoring, name="checklist-scoring"),
    path("checklists/<int:pk>/groups/", editor.group_create, name="group-create"),
    path("groups/<int:pk>/", editor.group_update, name="group-update"),
    path("groups/<int:pk>/move/", editor.group_move, name="group-move"),
    path("groups/<int:pk>/delete/", editor.group_delete, name="group-delete"),
    path("criteria/<int:pk>/", editor.criterion_update, name="criterion-update"),
    path("criteria/<int:pk>/delete/", editor.criterion_delete, name="criterion-delete"),
    path("criteria/<int:pk>/formality/", editor.criterion_formality, name="criterion-formality"),
    path("criteria/<int:pk>/move/", editor.criterion_move, name="criterion-move"),
    path("criteria/<int:pk>/group/", editor.criterion_group, name="criterion-group"),
    path("criteria/<int:pk>/citations/", editor.citation_create, name="citation-create"),
    path("citations/<int:pk>/delete/", editor.citation_delete, name="citation-delete"),
]
