"""The prompt a verdict was made with, rebuilt from the version it records (issue 25)."""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.judges.models import Judge, JudgeVersion
from evaluation.judges.tuning import tuning_of
from evaluation.judging import plan, prompts
from evaluation.runs import grading
from evaluation.runs.models import Verdict


def verdict_prompt(verdict: Verdict) -> list[dict[str, str]]:
    """The messages of the call that made `verdict`, rebuilt from the prompt version it
    records: the tuning of that version on the run's dataset (JudgeVersion; another
    dataset's version is never read), the query, answer and criterion as
    stored. Evidence is cut again with the judge's current evidence budget, and a
    conversation graded turn by turn gives its last graded turn's call (its other calls
    differ by the turn only). Raises JudgeVersion.DoesNotExist when the version's row is
    gone with its judge, ValueError for a verdict no judge prompt made (a check, an import).
    """
    params = verdict.judge_params or {}
    recorded = str(params.get("prompt_version") or "")
    if not recorded or params.get("kind") != Judge.Kind.LLM or "check" in params:
        raise ValueError("This verdict was not made by a judge prompt.")
    judge, answer, criterion = verdict.judge, verdict.answer, verdict.criterion
    query = answer.query
    tuning = tuning_of(judge, recorded, verdict.run.dataset_id)
    budget = judge.context_tokens
    mode = str(params.get("evidence") or "")
    evidence = plan.evidence_for(
        {mode} - {""}, context=answer.context, budget_tokens=budget,
        reference=lambda: next(iter(grading.references_for(query, excluding=answer.pk)), ""),
    ).get(mode)  # fmt: skip
    if mode and evidence is None:  # the reference is gone since: an empty one, as before
        evidence = prompts.reference_evidence("", budget_tokens=budget)
    turn = plan.GradedTurn(0, answer.text, "", False)
    if mode_of := params.get("conversation"):
        turns = plan.graded_turns(mode_of, answer.text, answer.turns, budget_tokens=budget)
        turn = turns[-1] if turns else turn
    # The plan of the call that made it (evaluation.judging.plan), for its messages.
    return plan.plan_vote(
        judge=judge, tuning=tuning, temperature=float(params.get("temperature") or 0.0),
        sample=verdict.sample, query=query.text, query_date=query.query_date,
        criterion_id=criterion.pk, criterion=criterion.text, turn=turn,
        conversation=bool(turn.history), evidence=evidence,
    ).call.messages  # fmt: skip


@dataclass(frozen=True)
class PromptSent:
    """What the page and the API show of a verdict's prompt: its messages (None when they
    cannot be rebuilt) and a note saying how exact they are, or why there are none."""

    version: str | None
    messages: list[dict[str, str]] | None
    note: str


def prompt_sent(verdict: Verdict) -> PromptSent:
    """`verdict_prompt`, with the reason when there is no prompt to show. The verdict comes
    with its judge, answer (and query) and criterion."""
    version = (verdict.judge_params or {}).get("prompt_version")
    try:
        sent = verdict_prompt(verdict)
    except ValueError:
        note = "This verdict was not made by a judge prompt (a check, an import)."
        return PromptSent(version, None, note)
    except JudgeVersion.DoesNotExist:
        note = "The instructions and examples of this version are not kept."
        return PromptSent(version, None, note)
    return PromptSent(
        version, sent,
        "Rebuilt from the version: exact for answers graded on themselves; evidence is cut "
        "again with the judge's current budget.",
    )  # fmt: skip
