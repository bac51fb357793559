"""The demo's agent answers: Atlas QA's carry turns with tool calls, context and metadata,
and the offline checks panel grades the demo's trajectory checks with no key."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.models import Dataset
from evaluation.answers.models import Answer
from evaluation.checks.models import CriterionCheck
from evaluation.judges.models import Panel
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from evaluation.runs.models import Verdict

pytestmark = pytest.mark.django_db


def test_the_offline_panel_grades_the_demo_trajectory_checks():
    call_command("demo")
    agent = Answer.objects.get(
        system__name="Atlas QA", query__text__startswith="Summarise Northwind"
    )
    assert [t["role"] for t in agent.turns][:3] == ["user", "assistant", "tool"]
    assert agent.context and agent.metadata["model"] == "atlas-agent-2026.10"
    assert CriterionCheck.objects.exclude(kind="").count() == 3
    panel = Panel.objects.get(name="Offline checks")
    run = runs.run_start(run=runs.run_create(dataset=Dataset.objects.get(), panel=panel))
    judge = panel.judges.get()
    query = agent.query
    for answer in query.answers.filter(checklist__isnull=True):
        lifecycle.run_task(worker="t", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    checked = Verdict.objects.filter(
        run=run, criterion__evaluation_check__kind="tool_set", answer__query=query
    )
    outcomes = {v.answer.system.name: v.outcome for v in checked.select_related("answer__system")}
    assert outcomes == {"Atlas QA": "pass", "Baseline RAG": "fail"}
    failed = checked.get(answer__system__name="Baseline RAG")
    assert "missing: search_transcripts" in failed.rationale
    sequence = Verdict.objects.get(
        run=run, answer=agent, criterion__evaluation_check__kind="tool_sequence"
    )
    assert sequence.outcome == "pass" and sequence.judge_params["check"]["kind"] == "tool_sequence"
    # No call was made: the panel holds no LLM judge.
    assert not Verdict.objects.filter(run=run, attempts__gt=0).exists()
