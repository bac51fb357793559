"""A batch of rewards: every completion scored against its query's submitted checklists by
a panel, synchronously, with no Celery round trip (docs/rewards.md).

In order: the panel and the items are checked (one bad item refuses the request: nothing is
recorded, nothing called); the batch is recorded and admitted by the quota; no-LLM checks
answer their votes for free; every LLM vote is planned as one call per (completion,
criterion, judge, sample) by the plan runs use (evaluation.judging.plan); the caches
answer what they can and the rest goes out at once (evaluation.rewards.calls); the votes
become rewards (evaluation.rewards.reward, then shaping); the batch row gets its counts.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from annotation import scoring
from annotation.models import Criterion, Dataset, Query
from annotation.services import external_ids_fix
from evaluation.checks import trajectory
from evaluation.checks.deterministic import offline_verdict
from evaluation.judges import tuning
from evaluation.judges.models import Judge, Panel
from evaluation.judging import client, engine, plan
from evaluation.judging import conversation as conv
from evaluation.metrics import rubrics
from evaluation.metrics.aggregation import Vote
from evaluation.rewards import calls, quota, reward
from evaluation.rewards.length_shaping import Shaping, shaped, words
from evaluation.rewards.models import RewardAudit, RewardBatch
from evaluation.rewards.request_shapes import Item, Problem, RefusedInput, refuse_if
from evaluation.runs import grading, scope, snapshot, trees
from evaluation.runs.snapshot import MemberSnapshot
from evaluation.runs.work import checks_of


@dataclass(frozen=True)
class ItemResult:
    reward: float | None  # the shaped score; None when failed or nothing was decided
    score: float | None  # the checklist score before shaping
    failed: bool
    undecided: int
    words: int
    criteria: tuple[reward.CriterionResult, ...]


@dataclass(frozen=True)
class BatchResult:
    batch: RewardBatch
    items: list[ItemResult]


@dataclass(frozen=True)
class _Source:
    """Where one vote comes from: a no-LLM check's result, or a call's cache key."""

    member: MemberSnapshot | None  # None: a deterministic check, whichever judge votes
    sample: int
    key: str = ""
    # The vote when no call is made: a check's, a no-LLM judge's, or an error when the
    # call cannot be asked (a criterion judged against a reference the query lacks).
    check: reward.CastVote | None = None
    refused: bool = False  # `check` is the error of a vote that could not be asked
    prompt_version: str = ""  # an LLM vote's (evaluation.judging.plan.PlannedVote)


@dataclass(frozen=True)
class _Asked:
    """One completion as its votes are asked: the item, its query, the criteria's evidence
    settings and its query's reference answer (read once, when a criterion needs it)."""

    item: Item
    query: Query
    checks: dict
    reference: Callable[[], str]


def default_shaping() -> Shaping:
    return Shaping(
        length_reference=settings.REWARDS_LENGTH_REFERENCE,
        length_exponent=settings.REWARDS_LENGTH_EXPONENT,
        max_words=settings.REWARDS_MAX_WORDS,
        over_length_penalty=settings.REWARDS_OVER_LENGTH_PENALTY,
    )


def scoring_strategy(dataset: Dataset) -> str:
    """The dataset's scoring strategy (a checklist may override it: _strategies), by the one
    rule runs use (annotation.scoring.strategy_of)."""
    return scoring.strategy_of(dataset.scoring)


def _strategies(dataset: Dataset, criteria) -> tuple[dict, dict]:
    """The checklists' own strategies (those that override the dataset's) and their group
    trees, for the checklists these items are scored on: one query for the groups."""
    checklists = {c.checklist_id: c.checklist for _, listed in criteria for c in listed}
    blend = getattr(dataset, "blend_weight", rubrics.DEFAULT_BLEND_WEIGHT)
    overrides = {
        pk: reward.strategy_named(
            scoring.strategy_of(dataset.scoring, checklist.scoring),
            blend_weight=blend,
            undecided=scoring.undecided_of(dataset.undecided, checklist.undecided),
        )
        for pk, checklist in checklists.items()
        if checklist.scoring or checklist.undecided
    }
    return overrides, trees.trees_of(checklists)


@dataclass
class Prepared:
    """A batch up to its judge calls: recorded and admitted, its votes planned, the caches
    read. What `finish` needs once the misses' calls are made."""

    batch: RewardBatch
    dataset: Dataset
    panel: Panel
    items: Sequence[Item]
    criteria: list[tuple[Query, list[Criterion]]]
    sources: list[list[tuple[Criterion, list[_Source]]]]
    results: dict[str, engine.CallResult]  # answered by the caches so far
    misses: list[calls.Planned]  # the calls to make
    shaping: Shaping
    started: float


def reward_batch(**arguments: Any) -> BatchResult:
    """A batch graded in this thread: `prepare`'s arguments, its calls made on this thread's
    event loop, then `finish`. Raises RefusedInput (nothing recorded) or
    quota.QuotaExceeded (nothing kept)."""
    prepared = prepare(**arguments)
    made = client.run_sync(calls.judged(prepared.misses)) if prepared.misses else []
    return finish(prepared, made)


def prepare(
    *,
    dataset: Dataset,
    panel: Panel,
    items: Sequence[Item],
    by,
    token_id: int | None = None,
    shape: str = RewardBatch.Shape.NATIVE,
    shaping: Shaping | None = None,
    query_field: str = "query",
) -> Prepared:
    """The database half before the judge calls. Raises RefusedInput (nothing recorded) or
    quota.QuotaExceeded (nothing kept)."""
    started = time.monotonic()
    shaping = shaping or default_shaping()
    members = _members(panel)
    criteria = _criteria(dataset, items, query_field)
    batch = RewardBatch.objects.create(
        user=by, token_id=token_id, dataset=dataset, panel=panel, shape=shape, items=len(items)
    )
    quota.admit(batch, quota.Principal(by.pk, token_id))
    # A trainer now holds these queries' external ids: they may no longer change. Only the
    # first request naming a query writes (the loaded queries say which are fixed already).
    unfixed = {query.pk for query, _ in criteria if not query.external_id_fixed_by}
    if unfixed:
        external_ids_fix(queries=Query.objects.filter(pk__in=unfixed), by="rewards")

    judges = Judge.objects.in_bulk([m.judge_id for m in members])
    # The dataset's tuning of each judge as it is now, pinned as a version: the version a
    # run started now would snapshot, so a reward and that run make the same calls.
    tunings = tuning.pinned_of(judges.values(), dataset.pk)
    checks = checks_of({c.pk for _, listed in criteria for c in listed})
    planned: dict[str, calls.Planned] = {}
    sources: list[list[tuple[Criterion, list[_Source]]]] = []
    references: dict[int, str] = {}
    for item, (query, item_criteria) in zip(items, criteria, strict=True):
        checked = _checked(item, query, item_criteria, checks, references)
        asked = _Asked(item, query, checks, lambda q=query: _reference(q, references))
        sources.append(
            [
                (
                    c,
                    checked[c.pk]
                    if c.pk in checked
                    else _plan(c, asked, members, judges, tunings, planned),
                )
                for c in item_criteria
            ]
        )
    results = calls.cached(planned)
    return Prepared(
        batch, dataset, panel, items, criteria, sources, results,
        calls.missed(planned, results), shaping, started,
    )  # fmt: skip


def finish(prepared: Prepared, made: list[engine.CallResult]) -> BatchResult:
    """The database half after the judge calls: the votes become rewards, the batch row
    gets its counts (and the sampled audits)."""
    batch, dataset, panel, items = prepared.batch, prepared.dataset, prepared.panel, prepared.items
    criteria, sources, shaping = prepared.criteria, prepared.sources, prepared.shaping
    answered = calls.settled(prepared.results, prepared.misses, made)

    strategy = reward.strategy_named(
        scoring_strategy(dataset),
        blend_weight=getattr(dataset, "blend_weight", rubrics.DEFAULT_BLEND_WEIGHT),
        undecided=scoring.undecided_of(getattr(dataset, "undecided", "")),
    )
    overrides, checklist_trees = _strategies(dataset, criteria)
    audit_share = settings.REWARDS_AUDIT_SAMPLE
    results = []
    audits = []
    cache_hits = checks = 0
    for index, (item, item_sources) in enumerate(zip(items, sources, strict=True)):
        votes = []
        audited = []
        for criterion, vote_sources in item_sources:
            cast = []
            for source in vote_sources:
                if source.refused:
                    # A vote that could not be asked (evaluation.judging.plan.NO_REFERENCE).
                    cast.append(source.check)
                    audited.append((criterion, source, source.check, "refused"))
                elif source.check is not None:
                    checks += 1
                    cast.append(source.check)
                    audited.append((criterion, source, source.check, "check"))
                else:
                    result = answered.results[source.key]
                    cache_hits += result.cache_hit
                    cast.append(_cast(source, result))
                    origin = "cache" if result.cache_hit else "call"
                    audited.append((criterion, source, cast[-1], origin))
            votes.append(
                reward.CriterionVotes(
                    criterion.pk,
                    criterion.checklist_id,
                    criterion.text,
                    tuple(cast),
                    criterion.weight,
                    criterion.is_core,
                    trees.group_key(criterion.group_id),
                )
            )
        scored = reward.item_reward(
            votes, method=panel.method, threshold=panel.threshold, strategy=strategy,
            overrides=overrides, trees=checklist_trees,
        )  # fmt: skip
        length = words(item.completion)
        result = ItemResult(
            shaped(scored.score, length, shaping), scored.score, scored.failed,
            scored.undecided, length, scored.criteria,
        )  # fmt: skip
        results.append(result)
        # A sample for audit, not a secret: the ordinary generator is right.
        if audit_share > 0 and random.random() < audit_share:  # noqa: S311
            audits.append(_audit(batch, index, criteria[index][0], item, result, audited))
    RewardAudit.objects.bulk_create(audits, batch_size=100)

    batch.failed_items = sum(r.failed for r in results)
    batch.calls = answered.made
    batch.cache_hits = cache_hits
    batch.checks = checks
    batch.prompt_tokens = answered.prompt_tokens
    batch.completion_tokens = answered.completion_tokens
    batch.cost = answered.cost
    batch.latency_ms = round((time.monotonic() - prepared.started) * 1000)
    batch.save(update_fields=[*_COUNTS])
    return BatchResult(batch, results)


_COUNTS = (
    "failed_items", "calls", "cache_hits", "checks", "prompt_tokens", "completion_tokens",
    "cost", "latency_ms",
)  # fmt: skip


def _members(panel: Panel) -> tuple[MemberSnapshot, ...]:
    members = snapshot.of_panel(panel).members
    if not members:
        raise RefusedInput([Problem(None, "panel", f"Panel “{panel.name}” has no judges.")])
    external = [m.name for m in members if m.kind == Judge.Kind.EXTERNAL]
    if external:
        raise RefusedInput(
            [
                Problem(
                    None,
                    "panel",
                    f"Panel “{panel.name}” has external judges (imported verdicts, never "
                    f"called): {', '.join(external)}. Choose a panel of judges that can grade.",
                )
            ]
        )
    return members


def _criteria(
    dataset: Dataset, items: Sequence[Item], query_field: str
) -> list[tuple[Query, list[Criterion]]]:
    """Each item's query and the criteria it is scored on: those of the query's submitted
    checklists, enabled and not archived (as runs grade them). Two queries in all."""
    wanted = {item.query for item in items}
    queries = {
        q.external_id: q for q in Query.objects.filter(dataset=dataset, external_id__in=wanted)
    }
    by_query = scope.criteria_of([q.pk for q in queries.values()])
    problems = []
    found = []
    for index, item in enumerate(items):
        query = queries.get(item.query)
        if query is None:
            problems.append(
                Problem(
                    index,
                    query_field,
                    f"No query with external id “{item.query}” in dataset {dataset.pk}.",
                )
            )
            continue
        if not by_query.get(query.pk):
            problems.append(
                Problem(
                    index,
                    query_field,
                    f"Query “{item.query}” has no submitted checklist with criteria to score.",
                )
            )
            continue
        found.append((query, by_query[query.pk]))
    refuse_if(problems)
    return found


def _checked(
    item: Item,
    query: Query,
    criteria: Sequence[Criterion],
    checks: dict,
    references: dict[int, str],
) -> dict[int, list[_Source]]:
    """The votes of the criteria a deterministic check decides (evaluation.checks.trajectory),
    as runs decide them: the check's verdict for every vote of every judge, no call. The
    completion's turns give the tool calls; ROUGE-1 reads the query's reference answer."""
    wanted = [c for c in criteria if c.pk in checks and checks[c.pk].kind]
    if not wanted:
        return {}

    results = trajectory.decide(
        [checks[c.pk] for c in wanted], text=item.completion, turns=item.turns, metadata={},
        reference=lambda: _reference(query, references),
    )  # fmt: skip
    votes = (reward.CastVote(Vote("check", 0, r.outcome), r.rationale) for r in results)
    return {c.pk: [_Source(None, 0, check=vote)] for c, vote in zip(wanted, votes, strict=True)}


def _plan(
    criterion: Criterion,
    asked: _Asked,
    members: Sequence[MemberSnapshot],
    judges: dict[int, Judge],
    tunings: dict[int, tuning.Tuning],
    planned: dict[str, calls.Planned],
) -> list[_Source]:
    """The sources of one criterion's votes on one completion, planned as a run plans them
    (evaluation.judging.plan) on the completion's last assistant turn; LLM calls join
    `planned` by cache key, so an identical call anywhere in the batch is made once."""
    item, query = asked.item, asked.query
    check = asked.checks.get(criterion.pk)
    mode = check.evidence if check is not None else ""
    found = []
    for member in members:
        judge = judges[member.judge_id]
        for sample in range(member.samples):
            if member.kind == Judge.Kind.NO_LLM:
                offline = offline_verdict(
                    criterion=criterion.text, kind=criterion.kind, answer=item.completion
                )
                vote = Vote(str(member.judge_id), sample, offline.outcome)
                cast = reward.CastVote(vote, offline.rationale)
                found.append(_Source(member, sample, check=cast))
                continue
            budget = judge.context_tokens
            [turn] = plan.graded_turns(
                conv.LAST_TURN, item.completion, item.turns, budget_tokens=budget
            )
            evidence = plan.evidence_for(
                {mode} - {""}, context=item.context, reference=asked.reference,
                budget_tokens=budget,
            )  # fmt: skip
            if mode and mode not in evidence:
                vote = Vote(str(member.judge_id), sample, "error")
                refused = reward.CastVote(vote, plan.NO_REFERENCE)
                found.append(_Source(member, sample, check=refused, refused=True))
                continue
            vote_plan = plan.plan_vote(
                judge=judge, tuning=tunings[judge.pk], temperature=member.temperature(sample),
                sample=sample, query=query.text, query_date=query.query_date,
                criterion_id=criterion.pk, criterion=criterion.text, turn=turn,
                conversation=bool(turn.history), evidence=evidence.get(mode),
            )  # fmt: skip
            planned.setdefault(vote_plan.cache_key, calls.Planned(judge, vote_plan.call))
            found.append(
                _Source(member, sample, key=vote_plan.cache_key,
                        prompt_version=vote_plan.prompt_version)
            )  # fmt: skip
    return found


def _reference(query: Query, references: dict[int, str]) -> str:
    """The query's reference answer, else its first perfect answer ("": none), read once
    per query and batch (as runs read it: evaluation.runs.grading.references_for)."""
    if query.pk not in references:
        found = grading.references_for(query)
        references[query.pk] = found[0] if found else ""
    return references[query.pk]


def _cast(source: _Source, result: engine.CallResult) -> reward.CastVote:
    vote = Vote(str(source.member.judge_id), source.sample, result.outcome)  # type: ignore[arg-type]
    if result.outcome in calls.DECIDED:
        return reward.CastVote(vote, result.rationale)
    if result.outcome == "unparseable":
        return reward.CastVote(vote, "The judge's output could not be parsed, after retries.")
    return reward.CastVote(vote, f"The judge call failed ({result.error_kind}): {result.error}")


def _audit(
    batch: RewardBatch,
    index: int,
    query: Query,
    item: Item,
    result: ItemResult,
    audited: list[tuple[Criterion, _Source, reward.CastVote, str]],
) -> RewardAudit:
    """The sampled item with every vote: who cast it, what it said and where it came from
    ("check", "cache" or "call")."""
    votes: dict[int, list[dict[str, object]]] = {}
    for criterion, source, cast, origin in audited:
        votes.setdefault(criterion.pk, []).append(
            {
                "judge": source.member.judge_id if source.member else None,
                "sample": source.sample,
                "outcome": cast.vote.outcome,
                "rationale": cast.rationale,
                "source": origin,
                **({"prompt_version": source.prompt_version} if source.prompt_version else {}),
            }
        )
    verdicts = [
        {"criterion": c.criterion_id, "outcome": c.outcome, "votes": votes.get(c.criterion_id, [])}
        for c in result.criteria
    ]
    return RewardAudit(
        batch=batch, item=index, query=query, completion=item.completion,
        reward=result.reward, failed=result.failed, verdicts=verdicts,
    )  # fmt: skip
