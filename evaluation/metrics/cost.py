"""Estimated cost of a run from its judges' token counts and prices. Pure Python.

    cost(judge)  = (prompt_tokens - cached_tokens) × prompt_price / 10⁶
                   + cached_tokens × cached_prompt_price / 10⁶      (the prompt price when unset)
                   + completion_tokens × completion_price / 10⁶
    so far       = Σ over the run's judges of cost(judge)
    projected    = so far / done × expected      (so far, once done ≥ expected)

Prices are per million tokens, in whatever currency the admin entered. Calls answered from
the cache store no tokens, so they cost nothing. Cached tokens are the prompt tokens the
provider reports it read from its prompt cache (a part of the prompt tokens); reasoning
tokens are part of the completion tokens as providers report them, and are billed as such.
A batched call's tokens are shared over its criteria's verdicts, so sums stay the call's.
A judge that calls an LLM but has no price makes both figures unknown (None) rather than
silently cheaper; judges that call nothing (no-LLM checks, imported verdicts) cost nothing.
See docs/metrics.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

PER_TOKENS = Decimal(1_000_000)
_CENT_FRACTIONS = Decimal("0.000001")


@dataclass(frozen=True)
class JudgeUsage:
    """One judge's tokens in a run and its prices (None: not entered)."""

    name: str
    calls_llm: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_price: Decimal | None = None
    completion_price: Decimal | None = None
    cached_tokens: int = 0  # of the prompt tokens
    cached_prompt_price: Decimal | None = None  # None: the prompt price

    @property
    def priced(self) -> bool:
        return not self.calls_llm or (
            self.prompt_price is not None and self.completion_price is not None
        )

    def cost(self) -> Decimal | None:
        if not self.calls_llm:
            return Decimal(0)
        if not self.priced:
            return None
        cached = min(max(self.cached_tokens, 0), self.prompt_tokens)
        cached_price = (
            self.prompt_price if self.cached_prompt_price is None else self.cached_prompt_price
        )
        return (
            (self.prompt_tokens - cached) * Decimal(self.prompt_price)
            + cached * Decimal(cached_price)
            + self.completion_tokens * Decimal(self.completion_price)
        ) / PER_TOKENS


@dataclass(frozen=True)
class CostEstimate:
    so_far: Decimal | None  # None: unknown (a judge has no price)
    projected: Decimal | None  # None: unknown, or nothing done yet to project from
    unpriced: tuple[str, ...]  # the LLM judges without a price

    @property
    def known(self) -> bool:
        return not self.unpriced


def run_cost(usages: Sequence[JudgeUsage], *, done: int, expected: int) -> CostEstimate:
    """`done` and `expected` count the run's results (verdicts and grades) so far and in all."""
    if done < 0 or expected < 0:
        raise ValueError(f"done and expected must be counts, got {done} and {expected}")
    unpriced = tuple(sorted(u.name for u in usages if not u.priced))
    if unpriced:
        return CostEstimate(None, None, unpriced)
    so_far = sum((u.cost() for u in usages), Decimal(0)).quantize(_CENT_FRACTIONS)
    if done >= expected:
        projected: Decimal | None = so_far
    elif done == 0:
        projected = None
    else:
        projected = (so_far / done * expected).quantize(_CENT_FRACTIONS)
    return CostEstimate(so_far, projected, ())
