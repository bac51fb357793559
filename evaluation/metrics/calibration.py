"""Which panel agrees best with people: every subset of a run's judges under every voting
rule, compared with the human reference on the labelled items, with what each costs.
Plain Python, no Django; see docs/metrics.md, "Judge calibration".

Each judge brings one label per item (the majority of its valid samples, as on the
agreement page); a candidate panel aggregates those labels with `aggregate`. So a judge
sampled five times counts once, as it would in a panel of several models.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import combinations

from evaluation.metrics.aggregation import Method, Vote, aggregate
from evaluation.metrics.agreement import Agreement, agreement_from_matrix, matrix_from_counts

METHODS = (Method.MAJORITY, Method.UNANIMITY)
MAX_JUDGES = 7  # 127 subsets × methods: beyond that, only the judges with most labels


@dataclass(frozen=True)
class CalibrationItem:
    human: str  # the human reference: pass or fail
    judges: Mapping[str, str | None]  # judge -> its label on the item (None: no valid vote)


@dataclass(frozen=True)
class PanelOption:
    judges: tuple[str, ...]
    method: str  # "single judge" for one judge: every rule gives its own label
    agreement: Agreement
    undecided: int  # labelled items the option leaves undecided (left out of agreement)
    cost: Decimal | None  # what these judges cost in the run; None: a judge has no price

    @property
    def kappa(self) -> float | None:
        return self.agreement.kappa.kappa

    def as_dict(self) -> dict:
        k = self.agreement.kappa
        return {
            "judges": list(self.judges),
            "method": self.method,
            "n": self.agreement.n,
            "percent": self.agreement.percent,
            "kappa": k.kappa,
            "kappa_low": k.low,
            "kappa_high": k.high,
            "undecided": self.undecided,
            "cost": None if self.cost is None else str(self.cost),
        }


def _rank(option: PanelOption) -> tuple:
    # Best kappa first (undefined last), then percent agreement, then the cheaper, then
    # the smaller panel; names break the last ties so the order never depends on input.
    return (
        option.kappa is None,
        -(option.kappa or 0.0),
        -(option.agreement.percent or 0.0),
        option.cost is None,
        option.cost or Decimal(0),
        len(option.judges),
        option.judges,
        option.method,
    )


def panel_options(
    items: Iterable[CalibrationItem],
    costs: Mapping[str, Decimal | None],
    *,
    methods: Sequence[Method] = METHODS,
    max_judges: int = MAX_JUDGES,
) -> list[PanelOption]:
    """Every non-empty subset of the judges × every rule, best first."""
    items = list(items)
    counts: dict[str, int] = {}
    for item in items:
        for judge, label in item.judges.items():
            counts[judge] = counts.get(judge, 0) + (label is not None)
    judges = sorted(counts, key=lambda j: (-counts[j], j))[:max_judges]
    judges.sort()
    # Items with the same human reference and the same judges' labels get the same outcome
    # under every option: each pattern is aggregated once and counted as often as it occurs
    # (a few dozen patterns for three judges, whatever the number of items).
    patterns = Counter((item.human, tuple(item.judges.get(j) for j in judges)) for item in items)
    position = {j: n for n, j in enumerate(judges)}
    options = []
    for size in range(1, len(judges) + 1):
        for subset in combinations(judges, size):
            for method in methods if size > 1 else (Method.MAJORITY,):
                cells: Counter = Counter()
                undecided = 0
                for (human, labels), times in patterns.items():
                    votes = [
                        Vote(j, 0, label)
                        for j in subset
                        if (label := labels[position[j]]) is not None
                    ]
                    outcome = aggregate(votes, method).outcome
                    if outcome == "undecided":
                        undecided += times
                    else:
                        cells[outcome, human] += times
                cost: Decimal | None = Decimal(0)
                for j in subset:
                    c = costs.get(j)
                    cost = None if c is None or cost is None else cost + c
                options.append(
                    PanelOption(
                        subset,
                        "single judge" if size == 1 else method.value,
                        agreement_from_matrix(matrix_from_counts(cells)),
                        undecided,
                        cost,
                    )
                )
    return sorted(options, key=_rank)
