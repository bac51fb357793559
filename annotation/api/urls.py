from __future__ import annotations

from annotation.api import views
from config.routers import Router

router = Router()
router.register("datasets", views.DatasetViewSet, basename="dataset")
router.register("queries", views.QueryViewSet, basename="query")
router.register("checklists", views.ChecklistViewSet, basename="checklist")
router.register("criteria", views.CriterionViewSet, basename="criterion")
router.register("groups", views.GroupViewSet, basename="group")
router.register("source-types", views.SourceTypeViewSet, basename="source-type")
router.register("guidelines", views.GuidelineViewSet, basename="guideline")

urlpatterns = router.urls
