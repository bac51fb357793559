"""The prompt a verdict was made with, rebuilt from the version it records (issue 25)."""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.judges.tuning import tuning_of
from evaluation.judging import conversation as conv
from evaluation.judging import prompts
from evaluation.models import Judge, JudgeVersion, Verdict
from evaluation.runs import grading


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
    evidence = None
    if mode := params.get("evidence"):
        if mode == "context":
            evidence = prompts.context_evidence(answer.context, budget_tokens=judge.context_tokens)
        else:
            references = grading.references_for(query, excluding=answer.pk)
            evidence = prompts.reference_evidence(
                references[0] if references else "", budget_tokens=judge.context_tokens
            )
    text, history = answer.text, ""
    if mode_of := params.get("conversation"):
        turns = conv.graded_turns(mode_of, answer.text, answer.turns)
        if turns:
            text = turns[-1].content
            if turns[-1].before:
                history = prompts.transcript(
                    list(turns[-1].before), budget_tokens=judge.context_tokens
                )[0]
    return prompts.messages(
        query=query.text, query_date=query.query_date, answer=text, criterion=criterion.text,
        evidence=evidence, conversation=history, tuning=tuning.system,
    )  # fmt: skip


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
