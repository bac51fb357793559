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
    ChatRequest,
    Fault,
    FaultPlan,
    Responder,
    ResponderResult,
    default_responder,
)

__all__ = [
    "always",
    "by_model",
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
