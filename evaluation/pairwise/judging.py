"""Pairwise judges: a panel's LLM judges asked which answer of each pair is better, each
pair in both orders, through the one pair plan (evaluation.judging.pair_plan) and the same
call controls as a run's verdicts (evaluation.runs.calls: the judge's rate limits, our
retries, the worker's cap on calls in flight, the judge's circuit).

A reply whose cache key an earlier voted reply has is reused, not paid again; an
unparseable output or a failed call is kept as such (never a preference) and asked again
next time. Thin callers: the Celery task evaluation.pairwise.tasks.judge_pairs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from evaluation.judges import tuning
from evaluation.judges.models import Judge, Panel
from evaluation.judging import client, pair_plan
from evaluation.metrics import preference
from evaluation.pairwise.models import PairwiseJudgeVote, PairwiseSession, PairwiseVote
from evaluation.runs import calls

# What a reused reply copies from the one that had the key.
_REUSED = ("outcome", "preference", "rationale", "raw_output", "prompt_version")


# Calls asked at once, and written together: a session of 10,000 pairs is asked a wave at a
# time (memory and connections stay flat, and an interrupted judging keeps the waves done).
WAVE = 64


def judge_session(*, session: PairwiseSession, panel: Panel, wave: int = WAVE) -> int:
    """Ask every LLM judge of the panel about every pair of the session, every sample, both
    orders; returns the number of calls made (reused replies cost none)."""
    members = list(panel.members.select_related("judge").filter(judge__kind=Judge.Kind.LLM))
    tunings = tuning.current_of([m.judge for m in members], session.dataset_id)
    pairs = list(session.pairs.select_related("query", "answer_a", "answer_b"))
    made = 0
    for member in members:
        judge = member.judge
        planned: dict[tuple[int, int, str], pair_plan.PlannedPair] = {}
        for pair in pairs:
            texts = {"ab": (pair.answer_a.text, pair.answer_b.text),
                     "ba": (pair.answer_b.text, pair.answer_a.text)}  # fmt: skip
            for sample in range(member.samples):
                for order in pair_plan.ORDERS:
                    planned[(pair.pk, sample, order)] = pair_plan.plan_pair(
                        judge=judge, tuning=tunings[judge.pk],
                        temperature=member.temperature(sample), sample=sample,
                        query=pair.query.text, query_date=pair.query.query_date,
                        first=texts[order][0], second=texts[order][1], order=order,
                    )  # fmt: skip
        cached = _voted_replies({p.cache_key for p in planned.values()})
        _write(judge, [(item, plan, cached[plan.cache_key]) for item, plan in planned.items()
                       if plan.cache_key in cached])  # fmt: skip
        misses = [(item, plan) for item, plan in planned.items() if plan.cache_key not in cached]
        controls = calls.call_controls(judge)
        for start in range(0, len(misses), wave):
            chunk = misses[start : start + wave]
            asked = client.run_sync(
                pair_plan.ask_pairs(
                    [plan for _, plan in chunk], limiter=controls.limiter,
                    policy=controls.policy, gate=controls.gate, circuit=controls.circuit,
                )
            )  # fmt: skip
            _write(
                judge,
                [(item, plan, result) for (item, plan), result in zip(chunk, asked, strict=True)],
            )
            made += len(chunk)
    return made


def _voted_replies(keys: set[str]) -> dict[str, PairwiseJudgeVote]:
    rows = PairwiseJudgeVote.objects.filter(
        cache_key__in=keys, outcome=PairwiseJudgeVote.Outcome.VOTED
    ).only("cache_key", *_REUSED)
    return {row.cache_key: row for row in rows}


def _write(judge: Judge, replies: list[tuple]) -> None:
    """Upsert the replies, (item, plan, reply): a reply is a PairResult made now, or an
    earlier PairwiseJudgeVote with the same cache key (a cache hit)."""
    rows = []
    for (pair_id, sample, order), plan, r in replies:
        params = {"base_url": judge.base_url, "model": judge.model,
                  "temperature": plan.endpoint.temperature, "max_tokens": judge.max_tokens,
                  "seed": judge.seed}  # fmt: skip
        common = {"pair_id": pair_id, "judge": judge, "sample": sample, "order": order,
                  "cache_key": plan.cache_key, "judge_params": params}  # fmt: skip
        if isinstance(r, PairwiseJudgeVote):
            rows.append(PairwiseJudgeVote(
                **common, cache_hit=True, **{f: getattr(r, f) for f in _REUSED}
            ))  # fmt: skip
            continue
        rows.append(PairwiseJudgeVote(
            **common, outcome=r.outcome, prompt_version=plan.prompt_version,
            preference=pair_plan.side_of(r.better, order) if r.outcome == "voted" else "",
            rationale=calls.text_of(r.rationale), raw_output=calls.text_of(r.raw_output),
            error_kind=r.error_kind, error=calls.text_of(r.error),
            prompt_tokens=r.prompt_tokens, completion_tokens=r.completion_tokens,
            latency_ms=r.latency_ms, attempts=r.attempts, cache_hit=False,
        ))  # fmt: skip
    PairwiseJudgeVote.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["pair", "judge", "sample", "order"],
        update_fields=[
            "outcome", "preference", "rationale", "raw_output", "error_kind", "error",
            "cache_key", "prompt_version", "judge_params", "prompt_tokens",
            "completion_tokens", "latency_ms", "attempts", "cache_hit", "created_at",
        ],
    )  # fmt: skip


@dataclass(frozen=True)
class JudgeFigures:
    judge: str
    bias: preference.PositionBias
    verdicts: dict[int, str]  # pair id → its verdict (the samples' majority; a flip is a tie)
    agreement: object  # metrics.agreement.Kappa with the reviewers' majority


def judge_verdicts(by_item: dict[tuple[int, int], dict[str, str]]) -> tuple[dict, dict[int, str]]:
    """One judge's replies, (pair id, sample) → order → side, read as figures read them:
    the (ab, ba) replies of the items asked in both orders, and per pair its verdict (the
    samples' majority, a flip counting as a tie; a pair whose samples split evenly has
    none)."""
    both = {item: (o["ab"], o["ba"]) for item, o in by_item.items() if len(o) == 2}
    per_pair: dict = defaultdict(list)
    for (pair_id, _sample), (ab, ba) in both.items():
        per_pair[pair_id].append(preference.both_orders(ab, ba)[0])
    verdicts = {
        pair_id: majority
        for pair_id, sides in per_pair.items()
        if (majority := preference.majority(sides)) is not None
    }
    return both, verdicts


def judge_figures(session: PairwiseSession) -> list[JudgeFigures]:
    """Per judge: the position-flip share and its agreement with the reviewers. Two
    queries."""
    replies: dict = defaultdict(lambda: defaultdict(dict))
    names = {}
    rows = PairwiseJudgeVote.objects.filter(
        pair__session=session, outcome=PairwiseJudgeVote.Outcome.VOTED
    ).values_list("judge_id", "judge__name", "pair_id", "sample", "order", "preference")
    for judge_id, name, pair_id, sample, order, side in rows:
        names[judge_id] = name
        replies[judge_id][(pair_id, sample)][order] = side
    reviewers: dict = defaultdict(dict)
    votes = PairwiseVote.objects.filter(pair__session=session).exclude(preference="")
    for pair_id, rater, side in votes.values_list("pair_id", "rater", "preference"):
        reviewers[pair_id][rater] = side
    found = []
    for judge_id, by_item in sorted(replies.items(), key=lambda kv: names[kv[0]]):
        both, verdicts = judge_verdicts(by_item)
        found.append(JudgeFigures(
            names[judge_id], preference.position_bias(both.values()), verdicts,
            preference.judge_agreement(verdicts, reviewers),
        ))  # fmt: skip
    return found
