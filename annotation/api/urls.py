from __future__ import annotations

from rest_framework.routers import DefaultRouter

from annotation.api import views

router = DefaultRouter()
router.register("datasets", views.DatasetViewSet, basename="dataset")
router.register("queries", views.QueryViewSet, basename="query")

urlpatterns = router.urls
