"""Loopback OpenAI-compatible server for tests and benchmarks (see docs/loopback.md).

No Django imports anywhere in this package: bench scripts use it without settings.
"""

from __future__ import annotations

from loopback.scripts import (
    always,
    answer_of,
    by_model,
    checklist_responder,
    fail_first,
    first_fault,
    jitter,
    sequence_responder,
    verdict_body,
    verdict_responder,
)
from loopback.server import (
    DEFAULT_FAULT_KINDS,
    DEFAULT_MALFORMED_CONTENT,
    DEFAULT_MODELS,
    TRANSIENT_FAULT_KINDS,
    ApiError,
    CallRecord,
    ChatRequest,
    Fault,
    FaultKind,
    FaultPlan,
    Latency,
    LoopbackOpenAI,
    Responder,
    ResponderResult,
    approx_tokens,
    default_responder,
    listed_criteria,
    request_key,
)

__all__ = [
    "DEFAULT_FAULT_KINDS",
    "DEFAULT_MALFORMED_CONTENT",
    "DEFAULT_MODELS",
    "TRANSIENT_FAULT_KINDS",
    "ApiError",
    "CallRecord",
    "ChatRequest",
    "Fault",
    "FaultKind",
    "FaultPlan",
    "Latency",
    "LoopbackOpenAI",
    "Responder",
    "ResponderResult",
    "always",
    "answer_of",
    "approx_tokens",
    "by_model",
    "checklist_responder",
    "default_responder",
    "fail_first",
    "first_fault",
    "jitter",
    "listed_criteria",
    "request_key",
    "sequence_responder",
    "verdict_body",
    "verdict_responder",
]
