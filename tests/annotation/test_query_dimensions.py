"""Query dimensions set on the query form (issue 23, item 7): one field per dimension the
dataset declares, a choice among its allowed values (or free text when it allows any);
a value outside them is refused with a clear error and changes nothing; the service
refuses the same."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation import services
from annotation.models import Query
from tests.factories import QueryFactory

NEW_QUERY = {"text": "Which filing reports the FY2025 margin?", "query_date": "2026-03-01"}


@pytest.fixture
def declared(dataset):
    dataset.dimensions = {"file_type": ["pdf", "html"], "sources": []}
    dataset.save(update_fields=["dimensions"])
    return dataset


def _fields(declared) -> dict[str, str]:
    """The form's field for each dimension (sorted by name: file_type, sources)."""
    return {"file_type": "dimension_0", "sources": "dimension_1"}


def test_an_expert_sets_dimensions_on_a_new_query(client, collaborator, declared):
    client.force_login(collaborator)
    url = reverse("query-create", args=[declared.pk])
    page = client.get(url).content.decode()
    assert "Dimension: file_type" in page and '<option value="pdf">' in page
    names = _fields(declared)
    response = client.post(url, {**NEW_QUERY, names["file_type"]: "pdf", names["sources"]: "3"})
    assert response.status_code == 302
    assert Query.objects.get().dimensions == {"file_type": "pdf", "sources": "3"}


def test_a_value_outside_the_declared_ones_is_refused_and_changes_nothing(
    client, collaborator, declared
):
    client.force_login(collaborator)
    query = QueryFactory(dataset=declared, created_by=collaborator, dimensions={"sources": "2"})
    names = _fields(declared)
    data = {**NEW_QUERY, names["file_type"]: "docx", names["sources"]: "4"}
    response = client.post(reverse("query-edit", args=[query.pk]), data)
    assert response.status_code == 200
    assert "docx is not one of the available choices" in response.content.decode()
    query.refresh_from_db()
    assert query.dimensions == {"sources": "2"}
    # The edit form starts from the query's values; emptying one removes it.
    page = client.get(reverse("query-edit", args=[query.pk])).content.decode()
    assert 'value="2"' in page
    response = client.post(reverse("query-edit", args=[query.pk]), {**NEW_QUERY})
    query.refresh_from_db()
    assert (response.status_code, query.dimensions) == (302, {})


def test_the_service_refuses_unknown_dimensions_and_values(declared):
    with pytest.raises(ValidationError, match="Unknown dimension 'pages'"):
        services.query_create(
            dataset=declared, text="Q", query_date="2026-03-01", dimensions={"pages": "3"}
        )
    with pytest.raises(ValidationError, match="'docx' is not one of pdf, html"):
        services.query_create(
            dataset=declared, text="Q", query_date="2026-03-01", dimensions={"file_type": "docx"}
        )
    query = services.query_create(
        dataset=declared, text="Q", query_date="2026-03-01", dimensions={"file_type": "html"}
    )
    with pytest.raises(ValidationError, match="Unknown dimension"):
        services.query_update(query=query, dimensions={"pages": "1"})
    assert Query.objects.get().dimensions == {"file_type": "html"}
