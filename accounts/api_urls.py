from __future__ import annotations

from accounts import api
from config.routers import Router

router = Router()
router.include_root_view = False  # /api/ is annotation's router's root
router.register("tokens", api.ApiTokenViewSet, basename="token")

urlpatterns = router.urls
