"""The criterion's check page: its author sets a deterministic check or evidence with
parameters checked by name; others cannot; a bad value changes nothing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services
from evaluation.checks.models import CriterionCheck
from tests.factories import valid_criteria

pytestmark = pytest.mark.django_db


@pytest.fixture
def criterion(query, collaborator):
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )
    return checklist.criteria.order_by("position").first()


def test_the_author_sets_a_check_and_bad_parameters_are_named(client, collaborator, criterion):
    client.force_login(collaborator)
    url = reverse("criterion-check", args=[criterion.pk])
    assert client.get(url).status_code == 200
    editor = client.get(reverse("checklist-detail", args=[criterion.checklist_id]))
    assert url in editor.content.decode()
    bad = client.post(url, {"kind": "tool_set", "params": '{"tools": []}', "evidence": ""})
    assert bad.status_code == 400
    assert "params: &#x27;tools&#x27; must list 1 to 100 entries" in bad.content.decode()
    assert not CriterionCheck.objects.exists()
    ok = client.post(url, {"kind": "tool_set", "params": '{"tools": ["search"]}',
                           "threshold": "0.5", "evidence": "context"})  # fmt: skip
    assert ok.status_code == 302
    check = CriterionCheck.objects.get()
    assert (check.kind, check.params, check.threshold, check.evidence) == (
        "tool_set", {"tools": ["search"]}, 0.5, "context",
    )  # fmt: skip
    client.post(url, {"kind": "", "params": "", "evidence": ""})
    assert not CriterionCheck.objects.exists()


def test_only_the_author_edits_the_check(client, owner, outsider, criterion):
    url = reverse("criterion-check", args=[criterion.pk])
    client.force_login(owner)
    assert client.post(url, {"kind": "rouge1", "params": "{}"}).status_code in (403, 404)
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    assert not CriterionCheck.objects.exists()


def test_the_scoring_and_tokenizer_options_are_saved_or_named(client, collaborator, criterion):
    """Partial credit and the Unicode tokeniser are named options (docs/no-llm-checks.md);
    a value outside them is named on the page and saves nothing."""
    client.force_login(collaborator)
    url = reverse("criterion-check", args=[criterion.pk])
    sequence = '{"calls": [{"name": "search"}], "mode": "in_order", "scoring": "graded"}'
    bad = client.post(url, {"kind": "tool_sequence", "params": sequence, "evidence": ""})
    assert bad.status_code == 400
    assert "params: &#x27;scoring&#x27; must be one of pass_fail, partial" in bad.content.decode()
    rouge = client.post(url, {"kind": "rouge1", "params": '{"tokenizer": "nltk"}', "evidence": ""})
    assert rouge.status_code == 400
    assert "must be one of rouge_score, unicode" in rouge.content.decode()
    assert not CriterionCheck.objects.exists()
    partial = sequence.replace("graded", "partial")
    assert client.post(url, {"kind": "tool_sequence", "params": partial, "threshold": "0.5",
                             "evidence": ""}).status_code == 302  # fmt: skip
    assert CriterionCheck.objects.get().params["scoring"] == "partial"
