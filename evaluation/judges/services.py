"""Writes for judges and panels (site-wide; the Admin group manages them), and the
"test connection" call. Each write is one transaction.

A panel can be edited at any time, even while one of its runs is running: a run works
from the snapshot of the panel it took at start (evaluation.runs.snapshot)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from evaluation.judges.models import Judge, Panel, PanelMember
from evaluation.judging import client, connection, plan

JUDGE_FIELDS = frozenset(
    {
        "name", "kind", "base_url", "model", "api_key_env", "temperature", "max_tokens", "seed",
        "timeout", "rpm_limit", "tpm_limit", "prompt_price", "completion_price",
        "prompt_version", "context_tokens", "is_formality_judge", "criteria_per_call",
        "token_parameter", "response_format", "reasoning_effort", "cached_prompt_price",
    }
)  # fmt: skip
PANEL_FIELDS = frozenset({"name", "description", "method", "threshold", "graded", "conversation"})


def judge_endpoint(judge: Judge) -> client.Endpoint:
    """The judge's own settings, for calls outside runs (formality, drafting, tests): the
    endpoint a vote's plan uses, at the judge's own temperature."""
    return plan.endpoint(judge, judge.temperature)


def _set(instance: object, fields: dict[str, object], allowed: frozenset[str]) -> None:
    unknown = set(fields) - allowed
    if unknown:
        raise TypeError(f"Not a field: {', '.join(sorted(unknown))}")
    for field, value in fields.items():
        setattr(instance, field, value)


@transaction.atomic
def judge_save(
    *, judge: Judge | None = None, by: AbstractBaseUser | None = None, **fields: object
) -> Judge:
    """Create (judge=None) or change a judge. Verdicts keep the parameters they were made
    with (Verdict.judge_params), so editing a judge does not rewrite history. A judge holds
    configuration only: its instructions and examples are each dataset's
    (evaluation.judges.tuning.tuning_save)."""
    judge = judge or Judge()
    _set(judge, fields, JUDGE_FIELDS)
    judge.full_clean()
    judge.save()
    return judge


@transaction.atomic
def panel_save(*, panel: Panel | None = None, members: Sequence[dict], **fields: object) -> Panel:
    """Create or change a panel with its members (each {judge, samples, temperatures})."""
    if not members:
        raise ValueError("A panel needs at least one judge.")
    panel = panel or Panel()
    _set(panel, fields, PANEL_FIELDS)
    panel.full_clean()
    panel.save()
    keep = {m["judge"].pk for m in members}
    panel.members.exclude(judge__in=keep).delete()
    for member in members:
        PanelMember.objects.update_or_create(
            panel=panel,
            judge=member["judge"],
            defaults={"samples": member["samples"], "temperatures": member["temperatures"]},
        )
    return panel


def judge_test_connection(judge: Judge) -> connection.ConnectionResult:
    """One small real call, from the web process (its environment decides the key)."""
    if judge.kind != Judge.Kind.LLM:
        return connection.ConnectionResult(
            False, "error", f"A {judge.get_kind_display()} judge calls no endpoint."
        )
    return asyncio.run(connection.check_connection(judge_endpoint(judge)))
