"""The vagueness rules through the API: refused with the criterion's number, and the notes
override that lets a justified criterion through."""

from __future__ import annotations

from annotation.models import Checklist
from tests.annotation.test_checklist_api import payload

VAGUE = "Provides a good overview of the Q3 revenue drivers."


def _with_vague(query, notes: str = "", **extra) -> dict:
    body = payload(query, **extra)
    body["criteria"][4] = {
        "text": VAGUE,
        "source_types": ["earnings-call-transcript"],
        "notes": notes,
    }
    return body


def test_a_vague_criterion_is_refused_naming_its_number(collaborator_api, query):
    response = collaborator_api.post("/api/checklists/", _with_vague(query, submit=True))
    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert (error["rule"], error["field"]) == ("vague-wording", "criteria[4].text")
    assert (error["criterion_number"], error["criterion_text"]) == (5, VAGUE)
    assert not Checklist.objects.exists()  # nothing written


def test_a_justified_override_in_the_notes_lets_it_through(collaborator_api, query):
    short = _with_vague(query, notes="override vague-wording: ok", submit=True)
    response = collaborator_api.post("/api/checklists/", short)
    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert (error["rule"], error["field"]) == ("vague-wording", "criteria[4].notes")
    justified = _with_vague(
        query,
        notes="override vague-wording: the call itself ranks the drivers by size",
        submit=True,
    )
    response = collaborator_api.post("/api/checklists/", justified)
    assert response.status_code == 201, response.json()
    assert response.json()["status"] == "submitted"
