"""One plan for a judge's vote: the call that asks one judge whether one answer (or one
turn of it) meets one criterion, for one sample.

Runs (evaluation.runs.work: every run kind, trials and cross-evaluation included) and
rewards (evaluation.rewards.services) both plan their LLM votes here, so the same question
is the same call with the same cache key wherever it is asked: a reward is answered by a
run's verdict of the same question (evaluation.rewards.calls), and the two cannot drift
apart. The plan decides

- the endpoint: the judge's live connection settings at the caller's temperature;
- the prompt version: the tuning's version (the dataset's tuning of the judge, pinned as a
  version: evaluation.judges.tuning) plus the variants used (evidence, conversation);
- the evidence: the retrieved context or the reference answer a criterion is judged
  against, cut to the judge's budget (`evidence_for`);
- the cache key and the messages (evaluation.judging.prompts).

Plain Python with no model import: the callers pass in the judge (anything with its
fields), the tuning (its version and system text), the query, the criterion, the graded
text and its evidence. judging/ is the lower layer; it imports none of runs, rewards,
trials or cross_evaluation.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evaluation.judging import batched, client, engine, prompts
from evaluation.judging import conversation as conv


class JudgeSettings(Protocol):
    """The judge fields a plan reads (evaluation.judges.models.Judge has them all)."""

    base_url: str
    model: str
    api_key_env: str
    max_tokens: int
    seed: int | None
    timeout: float
    token_parameter: str
    response_format: str
    reasoning_effort: str
    criteria_per_call: int
    context_tokens: int


class TuningText(Protocol):
    """A judge's tuning as the prompt takes it (evaluation.judges.tuning.Tuning)."""

    @property
    def version(self) -> str: ...

    @property
    def system(self) -> str: ...


@dataclass(frozen=True)
class PlannedVote:
    """A vote's call, and the prompt version it was made with (the tuning's version plus
    the variants used), which verdicts record."""

    call: engine.Call
    prompt_version: str

    @property
    def cache_key(self) -> str:
        return self.call.cache_key


@dataclass(frozen=True)
class GradedTurn:
    """A turn a vote grades and the conversation before it, as the prompt shows it."""

    number: int
    content: str
    history: str  # "" for a plain answer or a first turn
    history_cut: bool  # older turns were left out of `history` (the judge's budget)


def endpoint(judge: JudgeSettings, temperature: float) -> client.Endpoint:
    """The judge's live connection settings with the caller's temperature (a run's, for
    this sample)."""
    return client.Endpoint(
        base_url=judge.base_url,
        model=judge.model,
        api_key_env=judge.api_key_env,
        temperature=temperature,
        max_tokens=judge.max_tokens,
        seed=judge.seed,
        timeout=judge.timeout,
        token_parameter=judge.token_parameter,
        response_format=judge.response_format,
        reasoning_effort=judge.reasoning_effort,
    )


def key_extra(judge: JudgeSettings) -> dict[str, object]:
    """What a verdict's cache key adds for how the judge calls (empty for a judge that
    grades one criterion per call without a reasoning effort, whose keys stay what they
    were): a batched verdict is never taken for a single one, nor one of another batch size;
    a rerun of the same batched run finds its own. The response format and token parameter
    change how the question is sent, not the question: they are not in the key."""
    extra: dict[str, object] = {}
    if judge.criteria_per_call != 1:
        extra["batch"] = [batched.BATCH_VERSION, judge.criteria_per_call]
    if judge.reasoning_effort:
        extra["reasoning_effort"] = judge.reasoning_effort
    return extra


def cache_extra(
    judge: JudgeSettings,
    version: str,
    evidence: prompts.Evidence | None = None,
    history: str = "",
) -> dict[str, object] | None:
    """All a verdict's cache key adds to a plain verdict's (None: nothing): what the prompt
    holds beyond it (evidence, the conversation before the graded turn, under the prompt
    `version` that puts them there) and how the judge calls (`key_extra`)."""
    extra: dict[str, object] = {}
    if evidence is not None or history:
        extra = {
            "prompt": version, "evidence": evidence.text if evidence else "",
            "conversation": history,
        }  # fmt: skip
    return {**extra, **key_extra(judge)} or None


def _fresh(extra: dict[str, object] | None, fresh: str) -> dict[str, object] | None:
    """The key's extra with {"fresh": fresh} added (a canary call); unchanged when empty."""
    return {**(extra or {}), "fresh": fresh} if fresh else extra


def graded_turns(
    mode: str, text: str, turns: Sequence[dict[str, Any]], *, budget_tokens: int
) -> list[GradedTurn]:
    """The turns an answer's votes grade under the panel's conversation mode
    (evaluation.judging.conversation), each with the conversation before it within the
    judge's budget; a plain answer is one turn with no history."""
    found = []
    for turn in conv.graded_turns(mode, text, list(turns)):
        history, cut = ("", False)
        if turn.before:
            history, cut = prompts.transcript(list(turn.before), budget_tokens=budget_tokens)
        found.append(GradedTurn(turn.number, turn.content, history, cut))
    return found


def evidence_for(
    modes: set[str],
    *,
    context: Sequence[dict[str, Any]],
    reference: Callable[[], str],
    budget_tokens: int,
) -> dict[str, prompts.Evidence]:
    """The evidence each mode the criteria ask for puts in the prompt, built once per
    answer: "context" from the passages the system retrieved (none: a prompt saying so),
    "reference" from `reference()` (read only when asked), absent when that is empty: the
    vote cannot be asked (`NO_REFERENCE`)."""
    found: dict[str, prompts.Evidence] = {}
    if "context" in modes:
        found["context"] = prompts.context_evidence(list(context), budget_tokens=budget_tokens)
    if "reference" in modes and (text := reference()):
        found["reference"] = prompts.reference_evidence(text, budget_tokens=budget_tokens)
    return found


NO_REFERENCE = (
    "The criterion is judged against the reference answer, and the query has no reference "
    "answer nor perfect answer."
)


def plan_vote(
    *,
    judge: JudgeSettings,
    tuning: TuningText,
    temperature: float,
    sample: int,
    query: str,
    query_date: dt.date,
    criterion_id: int,
    criterion: str,
    turn: GradedTurn,
    conversation: bool = False,
    evidence: prompts.Evidence | None = None,
    fresh: str = "",
) -> PlannedVote:
    """The call of one vote: `turn` is the graded text (a plain answer's whole text, or one
    turn with the conversation before it); `conversation` says whether the answer is graded
    as a conversation (some graded turn has turns before it), which its prompt version
    names for every turn; `evidence` is what the criterion is judged against (None: the
    answer itself). `fresh`, when not empty (a judge canary: the run's id), joins the key so
    that this call misses every cached verdict of earlier runs while the other calls of the
    run still find theirs; empty, the key is what it always was. A plain answer of an
    untuned judge keeps the verdict-v1 prompt and the key it always had."""
    version = prompts.prompt_version(
        tuning.version, evidence=evidence.mode if evidence else "", conversation=conversation
    )
    target = endpoint(judge, temperature)
    extra = _fresh(cache_extra(judge, version, evidence, turn.history), fresh)
    key = prompts.cache_key(
        base_url=target.base_url, model=target.model, prompt_version=tuning.version,
        temperature=target.temperature, max_tokens=target.max_tokens, seed=target.seed,
        sample=sample, query=query, query_date=query_date, criterion=criterion,
        answer=turn.content, extra=extra,
    )  # fmt: skip
    # The criterion comes last: the instructions, query and answer are one prefix for every
    # criterion of the answer (providers' prompt caches).
    messages = prompts.messages(
        query=query, query_date=query_date, answer=turn.content, criterion=criterion,
        evidence=evidence, conversation=turn.history, tuning=tuning.system,
    )  # fmt: skip
    call = engine.Call(
        criterion_id, sample, key, messages, target, criterion=criterion,
        per_call=judge.criteria_per_call,
    )  # fmt: skip
    return PlannedVote(call, version)
