"""What a run will cost before it starts: calls, prompt and completion tokens, and money, per
judge of its panel, for its answers, scope and each judge's criteria per call (issue 25).

The rule (docs/trials.md#cost-before-you-spend):

- calls: per graded answer and panel member, samples × ⌈criteria / k⌉ with k the judge's
  criteria per call (k = 0: one call for the whole checklist). Criteria decided by a
  deterministic check make no call; no-LLM judges make none. A graded panel adds one call
  per answer and sample (at most: a query without a reference answer makes none).
- prompt tokens: the characters every call sends (the fixed verdict prompt, the judge's
  instructions and examples, the query, the answer once per call, each criterion once)
  divided by prompts.CHARS_PER_TOKEN, plus MESSAGE_TOKENS per call for the two messages.
  Retrieved context, reference answers and earlier turns that some criteria add are not
  counted.
- completion tokens: typical, VERDICT_TOKENS per criterion vote (GRADE_TOKENS per grade),
  never above the judge's max tokens per call; and the bound, max tokens × calls.
- cost: those tokens at the judge's prices (evaluation.metrics.cost), typical and bound.
- the cache is not predicted: a call answered from the cache costs nothing, so a repeated
  run costs less than its estimate.

Sizes are summed in the database (Length sums per query), so a dataset of 100,000 answers
costs a handful of queries. A trial (scope "labelled") reads its items one by one: as many
as people labelled; a run of listed items (a canary's or a stability pass's sample), as
many as it lists.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from decimal import Decimal

from django.db.models import Count, Exists, OuterRef, Q, Sum
from django.db.models.functions import Coalesce, Length

from annotation.models import Criterion, Query
from evaluation.answers.models import Answer
from evaluation.checks.models import CriterionCheck
from evaluation.judges.models import Judge, Panel
from evaluation.judges.tuning import Tuning, current_of
from evaluation.judging import graded, prompts
from evaluation.kept import readers
from evaluation.kept.figures import remembered
from evaluation.metrics.cost import JudgeUsage
from evaluation.runs import scope
from evaluation.runs.models import GradedScore, Run, Verdict
from evaluation.runs.scope import Selection
from evaluation.runs.snapshot import MemberSnapshot, PanelSnapshot

MESSAGE_TOKENS = 8  # a system and a user message, about 4 tokens of framing each
VERDICT_TOKENS = 60  # a verdict's JSON with a one- or two-sentence rationale
GRADE_TOKENS = 150  # a 1–5 grade's JSON with its short reasoning
RULE = (
    "Prompt: characters sent / 4 + 8 per call. Completion: typical 60 tokens per verdict "
    "(150 per grade), at most max tokens × calls. Cache hits are not predicted."
)


@dataclass(frozen=True)
class Group:
    """Answers graded on the same criteria: one query's answers (scope "all") or one
    labelled answer (a trial)."""

    answers: int
    answer_chars: int  # summed over the answers
    query_chars: int
    reference_chars: int
    criteria: int  # judged by an LLM
    criterion_chars: int  # summed over those criteria
    checked: int  # decided by a deterministic check: no call


@dataclass(frozen=True)
class JudgeEstimate:
    judge: str
    judge_id: int
    samples: int
    criteria_per_call: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    completion_tokens_max: int
    cost: Decimal | None  # None: the judge calls an LLM and has no price
    cost_max: Decimal | None


@dataclass(frozen=True)
class Estimate:
    answers: int
    items: int  # (answer, criterion) items graded
    checked: int  # votes decided by deterministic checks
    judges: tuple[JudgeEstimate, ...] = field(default_factory=tuple)

    @property
    def calls(self) -> int:
        return sum(j.calls for j in self.judges)

    @property
    def prompt_tokens(self) -> int:
        return sum(j.prompt_tokens for j in self.judges)

    @property
    def completion_tokens(self) -> int:
        return sum(j.completion_tokens for j in self.judges)

    @property
    def completion_tokens_max(self) -> int:
        return sum(j.completion_tokens_max for j in self.judges)

    @property
    def unpriced(self) -> tuple[str, ...]:
        return tuple(sorted(j.judge for j in self.judges if j.cost is None))

    @property
    def cost(self) -> Decimal | None:
        return None if self.unpriced else sum((j.cost for j in self.judges), Decimal(0))

    @property
    def cost_max(self) -> Decimal | None:
        return None if self.unpriced else sum((j.cost_max for j in self.judges), Decimal(0))

    def as_json(self) -> dict:
        """What Run.estimate stores and the API returns: money as strings (exact)."""

        def money(value: Decimal | None) -> str | None:
            return None if value is None else str(value.quantize(Decimal("0.000001")))

        judges = []
        for j in self.judges:
            row = asdict(j)
            row["cost"], row["cost_max"] = money(j.cost), money(j.cost_max)
            judges.append(row)
        return {
            "answers": self.answers, "items": self.items, "checked": self.checked,
            "calls": self.calls, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "completion_tokens_max": self.completion_tokens_max,
            "cost": money(self.cost), "cost_max": money(self.cost_max),
            "unpriced": list(self.unpriced), "judges": judges, "cache_predicted": False,
            "rule": RULE,
        }  # fmt: skip


def panel_members(panel: Panel) -> PanelSnapshot:
    """What the estimate needs of a panel no run has frozen yet: its members and samples
    (one query). Not snapshot.of_panel, which records a tuned judge's version: an estimate
    writes nothing."""
    members = tuple(
        MemberSnapshot(
            judge_id=m.judge_id,
            name=m.judge.name,
            kind=m.judge.kind,
            samples=m.samples,
            temperatures=(),
        )
        for m in panel.members.select_related("judge").order_by("judge__name")
    )
    return PanelSnapshot(
        panel=panel.name, method=panel.method, threshold=panel.threshold, graded=panel.graded,
        members=members,
    )  # fmt: skip


def estimate_selection(fields: dict) -> Selection:
    """The selection a start request names (the fields run_create takes), before any run
    exists. ValueError for a query of another dataset, as run_create."""
    dataset = fields["dataset"]
    queries = list(fields.get("queries") or ())
    foreign = [q.pk for q in queries if q.dataset_id != dataset.pk]
    if foreign:
        raise ValueError(f"Queries {foreign} are not in dataset {dataset.pk}.")
    return Selection(
        dataset_id=dataset.pk,
        query_ids=tuple(q.pk for q in queries),
        system_ids=tuple(s.pk for s in fields.get("systems") or ()),
        answer_run_label=fields.get("answer_run_label", ""),
        scope=fields.get("scope") or Selection.scope,
    )


def run_estimate(
    selection: Selection, panel: PanelSnapshot, *, items: set[tuple[int, int]] | None = None
) -> Estimate:
    """The estimate of a run of `panel` over `selection` (a handful of queries), or over
    `items` when given: the (answer, criterion) items a run not created yet will list (a
    judge canary's sample, a stability pass's)."""
    if items is None:
        items = scope.items_of(selection)
    groups = _query_groups(selection) if items is None else _item_groups(items)
    judges = Judge.objects.in_bulk([m.judge_id for m in panel.members])
    tunings = current_of(judges.values(), selection.dataset_id)
    rows = []
    for member in panel.members:
        judge = judges.get(member.judge_id)
        if judge is not None:
            rows.append(
                _judge_estimate(
                    judge, tunings[judge.pk], member.samples, groups, graded=panel.graded
                )
            )
    return Estimate(
        answers=sum(g.answers for g in groups),
        items=sum(g.answers * (g.criteria + g.checked) for g in groups),
        checked=sum(g.answers * g.checked for g in groups) * panel.samples,
        judges=tuple(rows),
    )


def _fixed_chars(tuning: Tuning) -> int:
    """The characters of a verdict prompt with an empty query, answer and criterion: the
    system text with the dataset's instructions and worked examples for the judge as they
    are now."""
    empty = prompts.messages(
        query="", query_date=dt.date(2000, 1, 1), answer="", criterion="",
        tuning=tuning.system,
    )  # fmt: skip
    return sum(len(m["content"]) for m in empty)


def _grade_fixed_chars() -> int:
    empty = graded.messages(query="", query_date=dt.date(2000, 1, 1), references=[""], answer="")
    return sum(len(m["content"]) for m in empty)


def _judge_estimate(
    judge: Judge, tuning: Tuning, samples: int, groups: list[Group], *, graded: bool
) -> JudgeEstimate:
    calls = chars = votes = 0
    grade_calls = grade_chars = 0
    if judge.kind == Judge.Kind.LLM:
        fixed = _fixed_chars(tuning)
        k = judge.criteria_per_call
        for g in groups:
            if g.criteria:
                per_answer = 1 if k == 0 else math.ceil(g.criteria / k)
                calls += samples * g.answers * per_answer
                chars += samples * (
                    g.answers * per_answer * (fixed + g.query_chars)
                    + per_answer * g.answer_chars
                    + g.answers * g.criterion_chars
                )
                votes += samples * g.answers * g.criteria
            if graded:
                grade_calls += samples * g.answers
                grade_chars += samples * (
                    g.answers * (_grade_fixed_chars() + g.query_chars + g.reference_chars)
                    + g.answer_chars
                )
    all_calls = calls + grade_calls
    prompt = math.ceil((chars + grade_chars) / prompts.CHARS_PER_TOKEN) + MESSAGE_TOKENS * all_calls
    bound = judge.max_tokens * all_calls
    typical = min(VERDICT_TOKENS * votes + GRADE_TOKENS * grade_calls, bound)

    def cost(completion: int) -> Decimal | None:
        return JudgeUsage(
            name=judge.name, calls_llm=judge.kind == Judge.Kind.LLM, prompt_tokens=prompt,
            completion_tokens=completion, prompt_price=judge.prompt_price,
            completion_price=judge.completion_price,
        ).cost()  # fmt: skip

    return JudgeEstimate(
        judge=judge.name, judge_id=judge.pk, samples=samples,
        criteria_per_call=judge.criteria_per_call, calls=all_calls, prompt_tokens=prompt,
        completion_tokens=typical, completion_tokens_max=bound, cost=cost(typical),
        cost_max=cost(bound),
    )  # fmt: skip


def _criteria_with_checks():
    """Scored criteria annotated with whether a deterministic check decides them."""
    check = CriterionCheck.objects.filter(criterion=OuterRef("pk")).exclude(kind="")
    return scope.scored_criteria().annotate(checked=Exists(check))


def _query_groups(selection: Selection) -> list[Group]:
    """Scope "all": one group per query, every size summed in the database (3 queries)."""
    answers = scope.answers_of(selection)
    per_query = {
        q: (n, chars or 0)
        for q, n, chars in answers.order_by()
        .values("query_id")
        .annotate(n=Count("pk"), chars=Sum(Length("text")))
        .values_list("query_id", "n", "chars")
    }
    if not per_query:
        return []
    criteria: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])  # llm, chars, checked
    rows = (
        _criteria_with_checks()
        .filter(checklist__query__in=answers.order_by().values("query_id"))
        .values("checklist__query", "checked")
        .annotate(n=Count("pk"), chars=Sum(Length("text")))
        .values_list("checklist__query", "checked", "n", "chars")
        .order_by()
    )
    for query_id, checked, n, chars in rows:
        if checked:
            criteria[query_id][2] += n
        else:
            criteria[query_id][0] += n
            criteria[query_id][1] += chars or 0
    queries = _query_sizes(per_query)
    return [
        Group(
            answers=n,
            answer_chars=chars,
            query_chars=queries[q][0],
            reference_chars=queries[q][1],
            criteria=criteria[q][0],
            criterion_chars=criteria[q][1],
            checked=criteria[q][2],
        )
        for q, (n, chars) in per_query.items()
    ]


def _query_sizes(query_ids) -> dict[int, tuple[int, int]]:
    rows = (
        Query.objects.filter(pk__in=list(query_ids))
        .annotate(q=Length("text"), r=Coalesce(Length("reference_answer"), 0))
        .values_list("pk", "q", "r")
    )
    return {pk: (q or 0, r or 0) for pk, q, r in rows}


def _item_groups(items: set[tuple[int, int]]) -> list[Group]:
    """A trial, or a run of listed items: one group per answer, over its items only."""
    if not items:
        return []
    by_answer: dict[int, list[int]] = defaultdict(list)
    for answer_id, criterion_id in items:
        by_answer[answer_id].append(criterion_id)
    answers = {
        pk: (query_id, chars or 0)
        for pk, query_id, chars in Answer.objects.filter(pk__in=list(by_answer))
        .annotate(chars=Length("text"))
        .values_list("pk", "query_id", "chars")
    }
    criteria = {
        pk: (checked, chars or 0)
        for pk, checked, chars in Criterion.objects.filter(pk__in={c for _, c in items})
        .annotate(
            checked=Exists(
                CriterionCheck.objects.filter(criterion=OuterRef("pk")).exclude(kind="")
            ),
            chars=Length("text"),
        )
        .values_list("pk", "checked", "chars")
    }
    queries = _query_sizes({q for q, _ in answers.values()})
    groups = []
    for answer_id, criterion_ids in by_answer.items():
        query_id, answer_chars = answers[answer_id]
        llm = [criteria[c][1] for c in criterion_ids if not criteria[c][0]]
        groups.append(
            Group(
                answers=1,
                answer_chars=answer_chars,
                query_chars=queries[query_id][0],
                reference_chars=queries[query_id][1],
                criteria=len(llm),
                criterion_chars=sum(llm),
                checked=len(criterion_ids) - len(llm),
            )
        )
    return groups


def requests_made(run: Run) -> int:
    """The requests the run sent to its judges (count_requests), kept once the run has
    ended and for a live window while it runs, as its token sums are."""
    facts = readers.run_facts(run)  # as the token sums (runs.costs)
    state = readers.state(run.dataset_id, readers.TOKENS, run=run, part="requests", facts=facts)
    return remembered(state, lambda: count_requests(run))


def count_requests(run: Run) -> int:
    """The requests the run sent to its judges, retries included: the attempts of its votes
    and grades not answered from the cache (checks and no-LLM judges make none; a batched
    call's attempts are shared out over its verdicts, so they sum to the call's). A scan of
    the run's votes."""
    made = Q(cache_hit=False, attempts__gt=0)
    return sum(
        model.objects.filter(run=run).filter(made).aggregate(n=Sum("attempts"))["n"] or 0
        for model in (Verdict, GradedScore)
    )
