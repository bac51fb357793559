"""The OpenAPI 3 schema is valid and the interactive docs are served without a CDN."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import call_command


@pytest.mark.django_db
def test_schema_validates_against_openapi_3(tmp_path):
    target = tmp_path / "schema.yaml"
    # --validate checks the document against the OpenAPI 3 JSON schema; warnings fail too.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    schema = yaml.safe_load(target.read_text())
    assert schema["openapi"].startswith("3.")
    assert "/api/datasets/{id}/" in schema["paths"]
    assert "/api/queries/" in schema["paths"]


def test_schema_endpoint_requires_login(client, owner):
    assert client.get("/api/schema/").status_code in (401, 403)
    client.force_login(owner)
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    assert response.json()["openapi"].startswith("3.")


def test_api_docs_use_local_assets(client, owner):
    client.force_login(owner)
    page = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in page
    assert "cdn." not in page and "unpkg" not in page and "jsdelivr" not in page
