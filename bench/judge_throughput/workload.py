"""The benchmark's texts, shared by the app side and the Inspect AI side so that both send
the very same prompts. Plain Python (no Django), deterministic, every answer distinct (a
repeated text would be served from the verdict cache and make no call)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from evaluation.judging import prompts

QUERY_DATE = dt.date(2026, 10, 30)
QUERY = (
    "Summarise Example Corp's third-quarter 2026 earnings call and compare the results with "
    "the guidance it gave in the second quarter."
)
# About 1,300 characters: a short long-form answer, so a call counts about 1,000 tokens
# against a TPM limit (prompt / 4 plus the judge's max_tokens of 512).
_PARAGRAPH = (
    "Revenue of ${b}.{c} billion rose {p}% year on year, above the ${lo}–{hi} billion range "
    "guided in July; the gross margin was {m}%, while operating expenses grew more slowly "
    "than revenue. Management raised the full-year outlook and named data-centre demand, "
    "pricing and a recovering consumer segment as the drivers. "
)


@dataclass(frozen=True)
class Workload:
    answers: int
    criteria: int
    judges: int
    # KB of retrieved context per answer (0: plain answers). With context, every criterion
    # is judged against it (CriterionCheck evidence "context", docs/judging.md).
    context_kb: int = 0

    @property
    def judgments(self) -> int:
        return self.answers * self.criteria * self.judges

    def answer_text(self, a: int) -> str:
        body = "".join(
            _PARAGRAPH.format(b=3 + (a + i) % 5, c=(a * 7 + i) % 10, p=5 + (a + 3 * i) % 20,
                              lo=3 + i % 3, hi=4 + i % 3, m=40 + (a + i) % 15)
            for i in range(4)
        )  # fmt: skip
        return f"Answer {a} (system {a}).\n\n{body.strip()}"

    def criterion_text(self, c: int) -> str:
        return f"States the figure {c} reported for the quarter and compares it with guidance."

    def judge_model(self, j: int) -> str:
        return f"judge-model-{j}"

    def context(self, a: int) -> list[dict[str, str]]:
        """About `context_kb` KB of passages of 1 KB, distinct per answer."""
        return [
            {"id": f"doc-{a}-{i}", "title": f"Filing {i} for answer {a}", "source": "SEC",
             "text": (f"Passage {i} of answer {a}. " + 4 * _PARAGRAPH.format(
                 b=3 + i % 5, c=i % 10, p=5 + i % 20, lo=3, hi=4, m=40 + i % 15))[:1024]}
            for i in range(self.context_kb)
        ]  # fmt: skip

    def evidence(self, a: int) -> prompts.Evidence | None:
        if not self.context_kb:
            return None
        return prompts.context_evidence(self.context(a), budget_tokens=BUDGET_TOKENS)

    def messages(self, a: int, c: int) -> list[dict[str, str]]:
        return prompts.messages(
            query=QUERY, query_date=QUERY_DATE, answer=self.answer_text(a),
            criterion=self.criterion_text(c), evidence=self.evidence(a),
        )  # fmt: skip


# The judges' evidence budget in the benchmark: 20 KB of context fits whole (5,000 tokens).
BUDGET_TOKENS = 8000
