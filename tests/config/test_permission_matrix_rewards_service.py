"""The rewards service's routes in the permission matrix (issue 45): the service
(config.settings_rewards, evaluation/rewards/service_urls.py) serves the web application's
reward routes through its own async views, so each of its routes must be one the matrix
holds, and answer every role as the matrix says. Real access cases with a valid body (a
read-only token, a member who is not the dataset's admin, a non-member) are in
tests/evaluation/rewards/test_served.py, against the service run by uvicorn."""

from __future__ import annotations

import pytest
from django.db import connections
from django.urls import URLPattern

from evaluation.rewards import service_urls
from tests.config.matrix_table import MATRIX
from tests.config.test_permission_matrix import request
from tests.support.world import ROLES, build_world

# The service's database work runs on its own threads (evaluation.rewards.served.at_edge),
# which see only committed rows: the world is committed, and flushed after.
pytestmark = pytest.mark.django_db(transaction=True)


def service_api_routes() -> list[str]:
    patterns = (p for p in service_urls.urlpatterns if isinstance(p, URLPattern))
    return sorted(f"/{p.pattern}" for p in patterns if str(p.pattern).startswith("api/"))


def test_the_service_serves_only_routes_the_matrix_holds():
    served = service_api_routes()
    web_rewards = sorted(route for _, route in MATRIX if route.startswith("/api/rewards/"))
    assert served == web_rewards


def test_the_service_answers_each_role_as_the_matrix_says(settings, monkeypatch):
    settings.ROOT_URLCONF = "evaluation.rewards.service_urls"
    # The edge threads outlive the test: their connections close after each job, or they
    # would hold the test database open at teardown.
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 0)
    world = build_world()
    for route in service_api_routes():
        codes = [request(world, role, "POST", route).status_code for role in ROLES]
        expected = [int(c) for c in MATRIX[("POST", route)].split()]
        assert codes == expected, (route, dict(zip(ROLES, codes, strict=True)))
        # POST only, as the web routes: another method is refused once the caller is known.
        assert request(world, "anonymous", "GET", route).status_code == 403
        assert request(world, "dataset_admin", "GET", route).status_code == 405
