"""The comparison as JSON: the API's `GET /api/runs/{id}/comparison/` (docs/api.md)."""

from __future__ import annotations

from decimal import Decimal

from evaluation.metrics.agreement import Agreement
from evaluation.trials.selectors import Comparison, Side


def _money(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def agreement_data(a: Agreement) -> dict:
    k = a.kappa
    return {
        "items": a.n,
        "agree": a.agree,
        "percent": a.percent,
        "kappa": k.kappa,
        "kappa_low": k.low,
        "kappa_high": k.high,
        # rows: the panel's verdict (pass, fail); columns: the human reference
        "confusion": {"categories": list(a.confusion.categories), "counts": a.confusion.counts},
    }


def side_data(side: Side | None) -> dict | None:
    if side is None:
        return None
    return {
        "run": side.run.pk,
        "name": str(side.run),
        "panel": side.run.snapshot.get("panel", ""),
        "agreement": agreement_data(side.agreement),
        "calls": side.calls,
        "prompt_tokens": side.prompt_tokens,
        "completion_tokens": side.completion_tokens,
        "cost": _money(side.cost),
        "cost_per_item": _money(side.cost_per_item),
        "unpriced": list(side.unpriced),
        "latency_ms_per_item": side.latency_per_item_ms,
    }


def comparison_data(c: Comparison) -> dict:
    test = c.test
    return {
        "trial": c.trial.pk,
        "baseline": c.baseline.pk if c.baseline else None,
        "items": c.items,
        "excluded_examples": c.excluded,
        "only_one_run": c.only_one,
        "undecided": c.undecided,
        "baseline_side": side_data(c.baseline_side),
        "trial_side": side_data(c.trial_side),
        "kinds": [
            {
                "kind": row.kind,
                "baseline": agreement_data(row.baseline),
                "trial": agreement_data(row.trial),
            }
            for row in c.kinds
        ],
        "mcnemar": None
        if test is None
        else {
            "baseline_right_trial_wrong": test.b,
            "baseline_wrong_trial_right": test.c,
            "method": test.method,
            "statistic": test.statistic,
            "p_value": test.p_value,
        },
        "changed_count": c.changed_count,
        "changed": [
            {
                "answer": item.answer_id,
                "criterion": item.criterion_id,
                "criterion_text": item.criterion,
                "kind": item.kind,
                "human": item.human,
                "baseline": item.baseline,
                "trial": item.trial,
            }
            for item in c.changed
        ],
    }
