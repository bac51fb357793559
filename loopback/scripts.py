"""Ready-made responders, fault plans and latency functions for LoopbackOpenAI.

Everything here returns a plain callable, so tests can also write their own inline.
Responders run on the server's event-loop thread: keep sync ones fast (no I/O).
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Awaitable, Callable
from typing import Any

from loopback.server import (
    CRITERIA_HEADING,
    ChatRequest,
    Fault,
    FaultPlan,
    Responder,
    ResponderResult,
    default_responder,
    listed_criteria,
)

__all__ = [
    "always",
    "answer_of",
    "by_model",
    "checklist_responder",
    "default_responder",
    "fail_first",
    "first_fault",
    "jitter",
    "sequence_responder",
    "verdict_body",
    "verdict_responder",
]

VerdictFn = Callable[[ChatRequest], "str | bool | Fault | Awaitable[str | bool | Fault]"]


def verdict_body(
    verdict: str, *, failure_kind: str | None = None, rationale: str | None = None
) -> dict[str, Any]:
    """The JSON a judge returns: ``{"verdict", "failure_kind", "rationale"}``."""
    return {
        "verdict": verdict,
        "failure_kind": failure_kind if verdict != "pass" else None,
        "rationale": rationale or f"Loopback judge decided {verdict!r}.",
    }


def verdict_responder(fn: VerdictFn, *, failure_kind: str = "criterion_not_met") -> Responder:
    """Build verdict JSON from ``fn(request) -> "pass" | "fail"`` (bool and Fault allowed).

    ``fn`` may be sync or async. A Fault is passed through so one function can script both
    verdicts and failures; ``True``/``False`` mean pass/fail.
    """

    async def respond(request: ChatRequest) -> ResponderResult:
        outcome = fn(request)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if isinstance(outcome, Fault):
            return outcome
        verdict = ("pass" if outcome else "fail") if isinstance(outcome, bool) else outcome
        return verdict_body(verdict, failure_kind=failure_kind)

    return respond


CRITERION_LINE = "\n\nCriterion: "
Decide = Callable[[str, str], "str | bool | dict[str, Any]"]


def answer_of(request: ChatRequest) -> str:
    """The graded answer of a judge prompt, single or batched: what follows "Answer:" (or
    "Graded turn:") up to the criterion or the criteria."""
    text = request.last_user_text
    for marker in ("Graded turn:\n", "Answer:\n"):
        if marker in text:
            text = text.split(marker, 1)[1]
            break
    for end in (CRITERIA_HEADING, CRITERION_LINE):
        if end in text:
            return text.rsplit(end, 1)[0]
    return text


def _body(decided: str | bool | dict[str, Any]) -> dict[str, Any]:
    if isinstance(decided, dict):
        return decided
    verdict = ("pass" if decided else "fail") if isinstance(decided, bool) else decided
    return verdict_body(
        verdict, failure_kind="missing", rationale=f"Loopback judge decided {verdict!r}."
    )


def checklist_responder(
    decide: Decide,
    *,
    omit: Callable[[str], bool] | None = None,
    malform: Callable[[str], bool] | None = None,
) -> Responder:
    """A judge that answers single and batched prompts alike: `decide(criterion, answer)`
    gives a criterion's verdict ("pass"/"fail", a bool, or the whole verdict object), the
    same whichever way it is asked. In a batched reply, a criterion for which `omit` is true
    is left out, and one for which `malform` is true gets an item that is not a verdict
    (verdict "maybe"); asked alone, both are answered normally."""

    def respond(request: ChatRequest) -> ResponderResult:
        answer = answer_of(request)
        listed = listed_criteria(request)
        if not listed:
            criterion = request.last_user_text.rsplit(CRITERION_LINE, 1)[-1]
            return _body(decide(criterion, answer))
        items = []
        for number, criterion in listed:
            if omit is not None and omit(criterion):
                continue
            item = {"criterion": number, **_body(decide(criterion, answer))}
            if malform is not None and malform(criterion):
                item["verdict"] = "maybe"
            items.append(item)
        return {"verdicts": items}

    return respond


def sequence_responder(*results: ResponderResult, repeat_last: bool = True) -> Responder:
    """Answer the n-th call with ``results[n]``; afterwards repeat the last one (or raise).

    Note that fault-plan faults do not consume an entry: the responder is only called for
    requests the plan lets through.
    """
    if not results:
        raise ValueError("sequence_responder needs at least one result")
    remaining = list(results)

    def respond(request: ChatRequest) -> ResponderResult:
        if len(remaining) > 1 or (remaining and not repeat_last):
            return remaining.pop(0)
        if remaining:
            return remaining[0]
        raise IndexError("sequence_responder ran out of results")

    return respond


def always(result: ResponderResult) -> Responder:
    """A responder that always returns ``result`` (a dict, a str or a Fault)."""
    return lambda request: result


def fail_first(
    times: int,
    fault: Fault | str = "rate_limit",
    *,
    match: Callable[[ChatRequest], bool] | None = None,
) -> FaultPlan:
    """Fault plan: the first ``times`` calls of each distinct request body fail, later succeed.

    Retries resend the identical body, so with ``times`` below the client's ``max_retries``
    every request ends up succeeding: the way to assert "transient faults were retried".
    ``match`` restricts the plan to some requests (e.g. one model).
    """
    planned = Fault.coerce(fault)

    def plan(request: ChatRequest, attempt: int) -> Fault | None:
        if match is not None and not match(request):
            return None
        return planned if attempt < times else None

    return plan


def first_fault(*plans: FaultPlan) -> FaultPlan:
    """Combine plans: the first one returning a Fault wins."""

    def plan(request: ChatRequest, attempt: int) -> Fault | None:
        for candidate in plans:
            fault = candidate(request, attempt)
            if fault is not None:
                return fault
        return None

    return plan


def jitter(base: float, spread: float, *, seed: int = 0) -> Callable[[ChatRequest], float]:
    """Latency of ``base ± spread`` seconds, uniform, never negative.

    Seeded per request body (not one shared Random) so a run's latencies do not depend on
    the order in which concurrent requests arrive.
    """

    def latency(request: ChatRequest) -> float:
        rng = random.Random(f"{seed}|{request.key}")  # noqa: S311 - not crypto
        return max(0.0, rng.uniform(base - spread, base + spread))

    return latency


def by_model(responders: dict[str, Responder], default: Responder = default_responder) -> Responder:
    """Dispatch on ``request.model``: lets one server play several judges of a panel."""

    def respond(request: ChatRequest) -> ResponderResult | Awaitable[ResponderResult]:
        return responders.get(request.model, default)(request)

    return respond
