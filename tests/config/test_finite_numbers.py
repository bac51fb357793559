"""Issue 38, point 5: every API refuses a number that is not finite (NaN, ±Infinity, a
literal past a float's range such as 1e999 or an integer of 400 digits) with a 400 naming
the field by its path, before any view runs (config/parsers.py). The reward endpoints' own
cases are in tests/evaluation/rewards/test_refusals.py."""

from __future__ import annotations

import json

import pytest

from config.parsers import NotFinite, loads
from evaluation.judges.models import Panel
from tests.factories import offline_judge

HUGE = "9" * 400


@pytest.mark.parametrize(
    ("text", "errors"),
    [
        ('{"a": 1e999}', {"a": ["A finite number, not 1e999."]}),
        ('{"a": -1e999}', {"a": ["A finite number, not -1e999."]}),
        ('{"a": {"b": [0, NaN]}}', {"a.b[1]": ["A finite number, not NaN."]}),
        ('[{"x": Infinity}, {"x": -Infinity}]',
         {"[0].x": ["A finite number, not Infinity."],
          "[1].x": ["A finite number, not -Infinity."]}),
        (f'{{"n": {HUGE}}}', {"n": ["A finite number, not 999999999999… (400 characters)."]}),
        (f'{{"n": -{HUGE * 20}}}',
         {"n": ["A finite number, not -99999999999… (8001 characters)."]}),
        ("1e999", {"non_field_errors": ["A finite number, not 1e999."]}),
    ],
)  # fmt: skip
def test_what_is_refused_and_where_it_is_named(text, errors):
    with pytest.raises(NotFinite) as refused:
        loads(text)
    assert refused.value.errors() == errors


def test_every_finite_number_is_read_as_json_reads_it():
    largest = "1" + "0" * 308  # 1e308 as an integer: 309 digits, still a float
    text = f'{{"a": 1.5, "b": -3, "c": 1e308, "d": 1e-999, "e": {largest}, "f": "NaN"}}'
    assert loads(text) == json.loads(text)
    with pytest.raises(NotFinite):
        loads('{"e": 2' + "0" * 308 + "}")  # 2e308: 309 digits, past the largest float


def test_a_refused_value_replaced_by_a_later_duplicate_key_is_not_there():
    assert loads('{"a": NaN, "a": 1}') == {"a": 1}


@pytest.mark.django_db
def test_a_nested_field_of_another_api_is_named_and_nothing_is_made(owner_api):
    judge = offline_judge()
    body = (
        f'{{"name": "Panel", "method": "majority", '
        f'"members": [{{"judge": {judge.pk}, "samples": 2, "temperatures": [0, 1e999]}}]}}'
    )

    response = owner_api.post("/api/panels/", body, content_type="application/json")

    assert response.status_code == 400, response.content
    assert response.json() == {"members[0].temperatures[1]": ["A finite number, not 1e999."]}
    assert not Panel.objects.exists()


@pytest.mark.django_db
def test_a_form_encoded_number_that_is_not_finite_is_refused_by_its_field(owner_api):
    """Multipart and form bodies hold text: DRF's FloatField refuses "inf", "nan" and
    "1e999" (not finite), the field names itself."""
    judge = offline_judge()
    for text in ("inf", "nan", "1e999", "-Infinity"):
        response = owner_api.patch(
            f"/api/judges/{judge.pk}/", {"temperature": text}, format="multipart"
        )
        assert response.status_code == 400, (text, response.content)
        assert list(response.json()) == ["temperature"], response.json()


@pytest.mark.django_db
@pytest.mark.parametrize("body", [{"name": "t", "datasets": [10**20]}, "multipart"])
def test_an_id_past_a_bigint_is_a_400_on_its_field(owner_api, body):
    """Finite, but no id column holds it: SQLite raised OverflowError (a 500) when the token
    API looked it up. Every API id field stops at config.ids.MAX_ID."""
    if body == "multipart":
        response = owner_api.post(
            "/api/tokens/", {"name": "t", "datasets": ["9" * 20]}, format="multipart"
        )
    else:
        response = owner_api.post("/api/tokens/", body, format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()) == ["datasets"]
