from __future__ import annotations

from django.urls import path

from annotation import views

urlpatterns = [
    path("datasets/new/", views.dataset_create, name="dataset-create"),
    path("datasets/<int:pk>/", views.dataset_detail, name="dataset-detail"),
    path("datasets/<int:pk>/members/", views.dataset_members, name="dataset-members"),
    path(
        "datasets/<int:pk>/members/<int:user_id>/remove/",
        views.dataset_member_remove,
        name="dataset-member-remove",
    ),
    path("queries/<int:pk>/", views.query_detail, name="query-detail"),
]
