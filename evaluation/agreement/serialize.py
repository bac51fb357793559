"""An AgreementReport as plain JSON-ready data, for the API (GET /api/agreement/)."""

from __future__ import annotations

from dataclasses import asdict

from evaluation.agreement.selectors import AgreementReport, Figure
from evaluation.metrics.agreement import Agreement


def agreement_data(agreement: Agreement) -> dict:
    kappa = agreement.kappa
    matrix = agreement.confusion
    return {
        "n": agreement.n,
        "agree": agreement.agree,
        "percent": agreement.percent,
        "kappa": kappa.kappa,
        "kappa_se": kappa.se,
        "kappa_low": kappa.low,
        "kappa_high": kappa.high,
        "observed": kappa.observed,
        "expected": kappa.expected,
        "confusion": {
            "categories": list(matrix.categories),
            "counts": [list(row) for row in matrix.counts],
        },
    }


def figure_data(figure: Figure) -> dict:
    return {
        "label": figure.label,
        "figure": figure.key.figure,
        "value": figure.key.value,
        "other": figure.key.other,
        **agreement_data(figure.agreement),
    }


def report_data(report: AgreementReport) -> dict:
    run = report.run
    return {
        "dataset": report.dataset.pk,
        "run": None
        if run is None
        else {"id": run.pk, "name": str(run), "kind": run.kind, "panel": run.panel.name},
        "counts": asdict(report.counts),
        # Cold counts being counted in the background: every figure empty until then.
        "computing": report.computing,
        # The last try of that count failed: its kind and when the next starts.
        "refresh_failed": report.refresh_failed.as_dict() if report.refresh_failed else None,
        "judge_vs_human": {
            "overall": figure_data(report.overall),
            "judges": [figure_data(f) for f in report.judges],
            "kinds": [figure_data(f) for f in report.kinds],
            "source_types": [figure_data(f) for f in report.sources],
            "categories": [figure_data(f) for f in report.categories],
            "systems": [figure_data(f) for f in report.systems],
        },
        "human_vs_human": {
            "raters": report.raters,
            "alpha": report.alpha,
            "alpha_items": report.alpha_items,
            "pairs": [figure_data(f) for f in report.pairs],
        },
        "reviewers": [
            {
                "rater": r.rater,
                "labels": r.labels,
                "days": r.days,
                "per_day": r.per_day,
                "first": r.first.isoformat() if r.first else None,
                "last": r.last.isoformat() if r.last else None,
                "with_judges": agreement_data(r.with_judges.agreement),
                "with_others": agreement_data(r.with_others.agreement),
            }
            for r in report.reviewers
        ],
    }
