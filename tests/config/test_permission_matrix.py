"""The permission matrix: every route × every role, built from the URL conf and the OpenAPI
schema (issue 13, point 8). A route without an entry here fails
`test_every_route_has_an_entry`, so a new endpoint cannot ship unreviewed; an entry whose
route is gone fails it too.

Each entry is the status codes for the roles, in the order of `ROLES`:

    anonymous  no_role  outsider  other_expert  reviewer  expert  dataset_admin  superuser

Pages are requested with GET and with an empty POST; API operations with their method and an
empty JSON body, authenticated by token. The roles run in that order on one world per
route, so a write an earlier role was allowed to make is seen by the later ones (a criterion
the expert deleted is a 404 for the admin after). What the codes say:

- anonymous: pages redirect to the login (302), the API answers 401 or 403;
- 404 where the person may not know the object exists (not a member of its dataset, a
  checklist still blind to them), 403 where they may see it but not do this;
- 400 is an allowed person sending an empty form; 405 a method the route does not take.
"""

from __future__ import annotations

import os

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from tests.config.matrix_routes import api_operations, api_url, page_routes, page_url
from tests.config.matrix_table import MATRIX
from tests.support.world import ROLES, build_world

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_worker_wait(settings):
    # Staff see /healthz's worker check; no worker runs here: fail it fast (503).
    settings.HEALTHZ_WORKER_TIMEOUT = 0.1


def routes() -> set[tuple[str, str]]:
    pages = {(m, name) for name, _ in page_routes() for m in ("GET", "POST")}
    return pages | set(api_operations())


def test_every_route_has_an_entry():
    known = set(MATRIX)
    actual = routes()
    missing = sorted(actual - known)
    stale = sorted(known - actual)
    assert not missing, f"Routes with no entry in the permission matrix: {missing}"
    assert not stale, f"Entries for routes that no longer exist: {stale}"


def request(world, role: str, method: str, target: str):
    client = APIClient()
    if target.startswith("/api/"):
        if role != "anonymous":
            client.credentials(HTTP_AUTHORIZATION=f"Token {world.tokens[role]}")
        return getattr(client, method.lower())(target, {}, format="json")
    if role != "anonymous":
        client.force_login(world.users[role])
    return getattr(client, method.lower())(target)


def observe(world, method: str, key: str) -> list[int]:
    patterns = dict(page_routes())
    target = api_url(key, world) if key.startswith("/api/") else page_url(patterns[key], key, world)
    return [request(world, role, method, target).status_code for role in ROLES]


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """One world for all routes, built once: each test runs in a savepoint inside this
    transaction (pytest-django's `db`) and is rolled back, so every route sees it intact,
    as Django's TestCase.setUpTestData does."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield build_world()
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.mark.parametrize(("method", "route"), sorted(MATRIX), ids=lambda v: str(v))
def test_route_answers_each_role_as_the_matrix_says(world, db, method, route):
    codes = observe(world, method, route)
    if os.environ.get("MATRIX_PRINT"):
        with open(os.environ["MATRIX_PRINT"], "a") as out:
            out.write(f'    ("{method}", "{route}"): "{" ".join(map(str, codes))}",\n')
        return
    # No route fails on anyone; /healthz's 503 is its answer (no worker runs here).
    assert route == "healthz" or all(code < 500 for code in codes), dict(
        zip(ROLES, codes, strict=True)
    )
    expected = [int(c) for c in MATRIX[(method, route)].split()]
    assert codes == expected, {
        role: (got, want)
        for role, got, want in zip(ROLES, codes, expected, strict=True)
        if got != want
    }


def test_a_route_missing_from_the_matrix_fails_by_name(monkeypatch):
    import tests.config.test_permission_matrix as module

    forgotten = ("GET", "/api/verdicts/{id}/")
    monkeypatch.setattr(module, "MATRIX", {k: v for k, v in MATRIX.items() if k != forgotten})
    with pytest.raises(AssertionError, match=r"verdicts/\{id\}"):
        module.test_every_route_has_an_entry()
