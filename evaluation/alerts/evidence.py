"""What a regression alert says moved, told apart from the judge's own noise (issue 43, 4).

Two runs of one system are compared item by item, an item being (query, answer sample,
criterion), on the criteria unchanged between them: a criterion edited between the runs is
a new version (a new row, `previous_version`), so it is in one run only; it is left out,
and counted. Each item's outcome is the run's final one (an adjudication first, else the
panel's: evaluation.side_by_side.selectors.outcomes); items undecided in either run are
left out too.

Over those items, b went from pass to fail and c from fail to pass (a criterion belongs to
one query's checklist, so a criterion has one item per answer sample: the test pools them).
The system moved beyond noise when both hold:

- McNemar's paired test (evaluation.metrics.mcnemar) finds b and c different, p < ALPHA;
- the net drop (b - c) / n exceeds the judge's noise floor: the mean over the items of the
  judge's flip rate on their criterion, the share of items whose repeated verdicts disagree
  (evaluation.runs.stability), the higher of the two runs' measures, the criterion's own
  where it was measured, else the run's overall. Even if every noise flip went one way,
  noise explains at most that share.

Without a repeated sample in either run the noise is unmeasured: the floor is None, and
only the paired test decides. The evidence names the criteria that went from pass to fail
and the queries with the most of them. docs/metrics.md#regression-rule has an example.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from annotation.models import Criterion
from evaluation.answers.models import Answer
from evaluation.metrics.mcnemar import mcnemar
from evaluation.runs.models import Run, Verdict
from evaluation.runs.stability import run_stability
from evaluation.side_by_side.selectors import outcomes

ALPHA = 0.05
SHOWN = 20  # the criteria and queries an alert names; their counts are always whole

Item = tuple[int, int, int]  # query, sample, criterion


@dataclass(frozen=True)
class Moves:
    items: int  # decided in both runs, on criteria unchanged between them
    worse: tuple[Item, ...]  # b: pass, then fail
    better: int  # c: fail, then pass
    p_value: float
    floor: float | None  # the judge's mean flip rate over the items; None: not measured

    @property
    def net_drop(self) -> float:
        return (len(self.worse) - self.better) / self.items if self.items else 0.0

    @property
    def beyond_noise(self) -> bool:
        return (
            len(self.worse) > self.better
            and self.p_value < ALPHA
            and (self.floor is None or self.net_drop > self.floor)
        )


def item_moves(
    before: dict[Item, str],
    after: dict[Item, str],
    floors: dict[int, float],
    overall_floor: float | None,
) -> Moves:
    """The items both runs decided, compared. Pure: the outcomes ('pass', 'fail',
    'undecided') and the judge's flip rates are handed in."""
    decided = sorted(
        item
        for item in before.keys() & after.keys()
        if before[item] in ("pass", "fail") and after[item] in ("pass", "fail")
    )
    worse = tuple(i for i in decided if before[i] == "pass" and after[i] == "fail")
    better = sum(1 for i in decided if before[i] == "fail" and after[i] == "pass")
    floor = None
    if overall_floor is not None and decided:
        floor = sum(floors.get(c, overall_floor) for _, _, c in decided) / len(decided)
    return Moves(len(decided), worse, better, mcnemar(len(worse), better).p_value, floor)


def _system_outcomes(run: Run, system_id: int) -> dict[Item, str]:
    judged = Verdict.objects.filter(run=run).values("answer_id")
    answers = dict(
        (pk, (query, sample))
        for pk, query, sample in Answer.objects.filter(system_id=system_id, pk__in=judged)
        .values_list("pk", "query_id", "sample")
    )  # fmt: skip
    return {
        (*answers[answer], criterion): outcome
        for (answer, criterion), outcome in outcomes(run, list(answers)).items()
    }


def _floors(*runs: Run) -> tuple[dict[int, float], float | None]:
    """The judge's flip rate per criterion and overall, the higher of the runs' measures."""
    per_criterion: dict[int, float] = {}
    overall: float | None = None
    for run in runs:
        found = run_stability(run)
        if not found["items"]:
            continue
        rate = found["flips"]["rate"]
        overall = rate if overall is None else max(overall, rate)
        for row in found["criteria"]:
            if row["flips"]["rate"] is not None:
                c = row["criterion_id"]
                per_criterion[c] = max(per_criterion.get(c, 0.0), row["flips"]["rate"])
    return per_criterion, overall


def regression_evidence(previous: Run, run: Run, system_id: int) -> dict:
    """The alert's evidence, as kept in its payload: the paired counts and the noise floor,
    whether the drop is beyond it, the criteria left out as changed, and the criteria and
    queries that went from pass to fail."""
    before, after = _system_outcomes(previous, system_id), _system_outcomes(run, system_id)
    floors, overall = _floors(previous, run)
    moves = item_moves(before, after, floors, overall)
    criteria_before = {c for _, _, c in before}
    criteria_after = {c for _, _, c in after}
    by_query: dict[int, int] = defaultdict(int)
    for query, _, _ in moves.worse:
        by_query[query] += 1
    shown = moves.worse[:SHOWN]
    texts = dict(
        Criterion.objects.filter(pk__in=[c for _, _, c in shown]).values_list("pk", "text")
    )
    queries = sorted(by_query.items(), key=lambda q: (-q[1], q[0]))
    return {
        "noise_measured": overall is not None,
        "noise_floor": moves.floor,
        "beyond_noise": moves.beyond_noise,
        "items": moves.items,
        "worse": len(moves.worse),
        "better": moves.better,
        "net_drop": moves.net_drop,
        "p_value": moves.p_value,
        "criteria_left_out": len(criteria_before ^ criteria_after),
        "criteria": [
            {"criterion_id": c, "query_id": q, "sample": k, "text": texts.get(c, "")}
            for q, k, c in shown
        ],
        "queries": [{"query_id": q, "worse": n} for q, n in queries[:SHOWN]],
        "queries_moved": len(queries),
    }
