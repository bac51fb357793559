"""A trial run side by side with its baseline, the current judge's run, on the same items.

The items compared: those both runs graded that carry a human reference (the agreement
page's: the adjudication, else the majority of the labels; evaluation.agreement.cells
derives it, this module does not say it twice), on which both panels reached pass or fail,
less the items either run's judges were shown as worked examples
(evaluation.judges.tuning.excluded_items). On those: each side's agreement, Cohen's κ with
its interval and confusion matrix (evaluation.metrics.agreement), per criterion kind,
McNemar's paired test of the difference (evaluation.metrics.mcnemar), the cost and judge
time each spent per item, and the items whose verdict changed.

Reads: two item statements, two of votes, the judges' prices and the changed criteria's
texts, whatever the number of items (tests/evaluation/trials/test_comparison.py counts).
"""

# SQL text here is built from evaluation.agreement.cells; every value is a query parameter.
# ruff: noqa: S608

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from django.db import connection

from annotation.models import Criterion
from evaluation.agreement import cells
from evaluation.judges.models import Judge
from evaluation.judges.tuning import excluded_items
from evaluation.metrics.agreement import PASS_FAIL, Agreement, compare
from evaluation.metrics.cost import JudgeUsage
from evaluation.metrics.mcnemar import McNemar, mcnemar
from evaluation.runs.models import Run, Verdict

# The changed items listed on the page and in the API; their count is always given whole.
CHANGED_SHOWN = 500


@dataclass(frozen=True)
class ItemVerdict:
    kind: str
    human: str | None  # the reference: pass, fail, or None on a tie of the labels
    panel: str  # pass, fail or undecided


@dataclass(frozen=True)
class Side:
    run: Run
    agreement: Agreement
    kinds: dict[str, Agreement]
    calls: int  # requests its LLM judges sent for these items (retries included, no cache hit)
    prompt_tokens: int
    completion_tokens: int
    cost: Decimal | None  # None: a judge of the side calls an LLM and has no price
    unpriced: tuple[str, ...]
    latency_ms: int  # judge time over the compared items, summed over their votes
    items: int

    @property
    def cost_per_item(self) -> Decimal | None:
        if self.cost is None or not self.items:
            return None
        return (self.cost / self.items).quantize(Decimal("0.000001"))

    @property
    def latency_per_item_ms(self) -> float | None:
        return self.latency_ms / self.items if self.items else None


@dataclass(frozen=True)
class Changed:
    answer_id: int
    criterion_id: int
    criterion: str
    kind: str
    human: str
    baseline: str
    trial: str

    @property
    def now_right(self) -> bool:
        return self.trial == self.human


@dataclass(frozen=True)
class KindRow:
    kind: str
    label: str
    baseline: Agreement
    trial: Agreement


@dataclass(frozen=True)
class Comparison:
    trial: Run
    baseline: Run | None
    items: int  # compared
    excluded: int  # shown to either run's judges as examples: left out
    only_one: int  # a human reference and a verdict of one run only
    undecided: int  # either panel undecided, or the labels tied: left out
    baseline_side: Side | None
    trial_side: Side | None
    kinds: list[KindRow]
    test: McNemar | None
    changed: list[Changed]  # at most CHANGED_SHOWN, in (answer, criterion) order
    changed_count: int


def _item_verdicts(run: Run) -> dict[tuple[int, int], ItemVerdict]:
    """The labelled items the run holds votes on, with the human reference and the run
    panel's verdict (its own method), as the agreement figures derive them."""
    sql = cells.items_sql(with_run=True, method=run.panel_method, threshold=run.panel_threshold)
    query = f"""{sql}
SELECT i.answer_id, i.criterion_id, i.kind, i.human, i.panel FROM item i
WHERE i.panel IS NOT NULL"""
    with connection.cursor() as cursor:
        cursor.execute(query, {"dataset": run.dataset_id, "run": run.pk})
        return {(a, c): ItemVerdict(kind, human, panel) for a, c, kind, human, panel in cursor}


def _side(
    run: Run,
    verdicts: dict[tuple[int, int], ItemVerdict],
    items: list[tuple[int, int]],
    judges: dict[int, Judge],
    usage: dict[int, list[int]],
    latency: int,
) -> Side:
    kinds: dict[str, list[tuple[str, str]]] = defaultdict(list)
    pairs = []
    for item in items:
        v = verdicts[item]
        pairs.append((v.panel, v.human))
        kinds[v.kind].append((v.panel, v.human))
    usages = [
        JudgeUsage(
            name=judges[j].name,
            calls_llm=judges[j].kind == Judge.Kind.LLM,
            prompt_tokens=p,
            completion_tokens=c,
            prompt_price=judges[j].prompt_price,
            completion_price=judges[j].completion_price,
        )
        for j, (p, c, _) in usage.items()
        if j in judges
    ]
    unpriced = tuple(sorted(u.name for u in usages if not u.priced))
    cost = None if unpriced else sum((u.cost() for u in usages), Decimal(0))
    llm = {j for j, judge in judges.items() if judge.kind == Judge.Kind.LLM}
    calls = sum(requests for j, (_, _, requests) in usage.items() if j in llm)
    return Side(
        run=run, agreement=compare(pairs, PASS_FAIL),
        kinds={k: compare(v, PASS_FAIL) for k, v in kinds.items()}, calls=calls,
        prompt_tokens=sum(p for p, _, _ in usage.values()),
        completion_tokens=sum(c for _, c, _ in usage.values()), cost=cost, unpriced=unpriced,
        latency_ms=latency, items=len(items),
    )  # fmt: skip


def _usage(run: Run, items: set[tuple[int, int]]) -> tuple[dict[int, list[int]], int]:
    """Per judge [prompt tokens, completion tokens, requests], and the summed latency, over
    the run's votes on `items` (one query: the items' answers' votes). Requests are the
    attempts of the votes not answered from the cache, as on the run page
    (evaluation.runs.estimate.requests_made): a batched call's are shared over its votes."""
    usage: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    latency = 0
    rows = Verdict.objects.filter(run=run, answer_id__in={a for a, _ in items}).values_list(
        "answer_id",
        "criterion_id",
        "judge_id",
        "prompt_tokens",
        "completion_tokens",
        "latency_ms",
        "cache_hit",
        "attempts",
    )
    for a, c, judge_id, prompt, completion, ms, cache_hit, attempts in rows:
        if (a, c) not in items:
            continue
        usage[judge_id][0] += prompt
        usage[judge_id][1] += completion
        usage[judge_id][2] += 0 if cache_hit else attempts
        latency += ms
    return usage, latency


def comparison(trial: Run) -> Comparison:
    """The trial beside its baseline (its own `baseline`); without one, nothing compared."""
    baseline = trial.baseline
    if baseline is None:
        return Comparison(trial, None, 0, 0, 0, 0, None, None, [], None, [], 0)
    excluded = excluded_items(trial) | excluded_items(baseline)
    ours, theirs = _item_verdicts(trial), _item_verdicts(baseline)
    both = ours.keys() & theirs.keys()
    kept = both - excluded
    items = sorted(
        item
        for item in kept
        if ours[item].human in PASS_FAIL
        and ours[item].panel in PASS_FAIL
        and theirs[item].panel in PASS_FAIL
    )
    compared = set(items)
    b = sum(1 for i in items if theirs[i].panel == ours[i].human != ours[i].panel)
    c = sum(1 for i in items if ours[i].panel == ours[i].human != theirs[i].panel)
    changed_keys = [i for i in items if ours[i].panel != theirs[i].panel]
    shown = changed_keys[:CHANGED_SHOWN]
    texts = dict(Criterion.objects.filter(pk__in={c for _, c in shown}).values_list("pk", "text"))
    trial_usage = _usage(trial, compared)
    baseline_usage = _usage(baseline, compared)
    judges = Judge.objects.in_bulk({*trial_usage[0], *baseline_usage[0]})
    trial_side = _side(trial, ours, items, judges, *trial_usage)
    baseline_side = _side(baseline, theirs, items, judges, *baseline_usage)
    labels = dict(Criterion.Kind.choices)
    kinds = [
        KindRow(k, labels.get(k, k), baseline_side.kinds[k], trial_side.kinds[k])
        for k in labels
        if k in trial_side.kinds
    ]
    return Comparison(
        trial=trial, baseline=baseline, items=len(items), excluded=len(both & excluded),
        only_one=len((ours.keys() ^ theirs.keys()) - excluded), undecided=len(kept) - len(items),
        baseline_side=baseline_side, trial_side=trial_side, kinds=kinds, test=mcnemar(b, c),
        changed=[
            Changed(a, cr, texts.get(cr, ""), ours[(a, cr)].kind, ours[(a, cr)].human or "",
                    theirs[(a, cr)].panel, ours[(a, cr)].panel)
            for a, cr in shown
        ],
        changed_count=len(changed_keys),
    )  # fmt: skip
