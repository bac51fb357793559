"""The criterion's check page: its author sets a deterministic check or evidence with
parameters checked by name; others cannot; a bad value changes nothing."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.urls import reverse

from annotation import services
from evaluation.checks.models import CriterionCheck
from evaluation.checks.trajectory import ToolCall, Trajectory, run_check, scoring_of
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


@pytest.mark.parametrize("kind", ["tool_sequence", "step_order"])
def test_a_new_sequence_check_is_pass_fail_whatever_its_threshold(
    client, collaborator, criterion, kind
):
    """Partial credit is asked for, never inferred: a sequence check saved without
    `scoring` is stored as pass/fail even with a threshold below 1 (which, unnamed, a check
    from before issue 41 reads as partial), and then scores 0 for half the calls."""
    client.force_login(collaborator)
    url = reverse("criterion-check", args=[criterion.pk])
    params = (
        '{"calls": [{"name": "plan"}, {"name": "write"}], "mode": "in_order"}'
        if kind == "tool_sequence"
        else '{"steps": ["plan", "write"], "mode": "in_order"}'
    )
    saved = client.post(url, {"kind": kind, "params": params, "threshold": "0.5", "evidence": ""})
    assert saved.status_code == 302
    check = CriterionCheck.objects.get()
    assert check.params["scoring"] == "pass_fail"
    half = Trajectory(text="", calls=(ToolCall("plan", {}),), steps=("plan",))
    result = run_check(check.kind, check.params, check.threshold, half)
    assert (result.score, result.passed) == (0.0, False)
    # The page shows the scoring it saved, so saving the check again keeps it.
    assert "&quot;scoring&quot;: &quot;pass_fail&quot;" in client.get(url).content.decode()


def test_the_migration_names_the_scoring_each_stored_check_read(criterion, collaborator):
    """Checks saved before issue 41 keep their verdicts: below threshold 1 they read
    partial credit, at the default pass/fail, and the migration writes that down."""
    second = criterion.checklist.criteria.order_by("position")[1]
    third = criterion.checklist.criteria.order_by("position")[2]
    calls = {"calls": [{"name": "plan"}], "mode": "in_order"}
    rows = [
        CriterionCheck.objects.create(criterion=criterion, kind="tool_sequence", params=calls,
                                      threshold=0.5),
        CriterionCheck.objects.create(criterion=second, kind="step_order",
                                      params={"steps": ["plan"]}),
        CriterionCheck.objects.create(criterion=third, kind="tool_set",
                                      params={"tools": ["plan"]}, threshold=0.5),
    ]  # fmt: skip
    before = [scoring_of(r.params, r.threshold) for r in rows[:2]]
    migration = importlib.import_module(
        "evaluation.migrations.0033_sequence_checks_name_their_scoring"
    )
    migration.name_the_scoring(apps, None)
    after = [CriterionCheck.objects.get(pk=r.pk).params for r in rows]
    assert [p["scoring"] for p in after[:2]] == before == ["partial", "pass_fail"]
    assert after[2] == {"tools": ["plan"]}  # not a sequence check
    migration.name_the_scoring(apps, None)  # again: nothing moves
    assert [CriterionCheck.objects.get(pk=r.pk).params for r in rows] == after
