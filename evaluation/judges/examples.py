"""Worked examples for a judge, taken from a dataset's adjudicated items (issue 25, point 2),
kept in that dataset's tuning of the judge (evaluation.judges.tuning, issue 38).

An adjudication is the final decision on one (answer, criterion), with the adjudicator's
reason: as a worked example it shows the judge the criterion, the part of the answer that
decided it (evaluation.judges.tuning.excerpt), the decision and the reason. Examples are
picked by hand, or automatically (`auto_pick`): the most recent decisions first, pass and
fail in turn (and, asked, each criterion kind in turn) within a token budget, counted as
the rest of the project counts prompt tokens (characters / prompts.CHARS_PER_TOKEN).

Each example keeps where it came from ("source": adjudication, answer, criterion): a run
records those items (evaluation.judges.tuning.snapshot_fields) and its agreement figures
leave them out.

Only criteria of submitted checklists make examples: an example is shown to the dataset's
reviewers and admins and sent in its prompts, and a draft's criteria are hidden from every
other expert until the draft is submitted (the blind rule).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from annotation.models import Checklist, Dataset
from evaluation.judges import tuning
from evaluation.judges.models import Judge, JudgeTuning
from evaluation.judging import prompts
from evaluation.labels.models import Adjudication

EXCERPT_CHARS = 1200  # an example's answer excerpt: enough for the passage that decided it
LIST_LIMIT = 300  # adjudications listed on the page, most recent first
DEFAULT_BUDGET = 2000  # tokens, for an automatic pick
MAX_BUDGET = tuning.MAX_EXAMPLES_CHARS // prompts.CHARS_PER_TOKEN


@dataclass(frozen=True)
class Candidate:
    """One adjudicated item as a worked example."""

    adjudication_id: int
    answer_id: int
    criterion_id: int
    kind: str
    system: str
    decided_at: datetime
    example: dict[str, Any]  # criterion, excerpt, decision, reason, source

    @property
    def decision(self) -> str:
        return str(self.example["decision"])

    @property
    def tokens(self) -> int:
        """What it adds to every prompt, as the project estimates tokens."""
        text = tuning.render_example(tuning.MAX_EXAMPLES, self.example)
        return -(-len(text) // prompts.CHARS_PER_TOKEN)


def candidates(dataset: Dataset, *, kind: str = "", limit: int = LIST_LIMIT) -> list[Candidate]:
    """The dataset's adjudicated items of submitted checklists as examples, most recent
    decision first (one query)."""
    rows = _examplable(dataset).order_by("-decided_at", "-pk")
    if kind:
        rows = rows.filter(criterion__kind=kind)
    return [candidate(a) for a in rows[:limit]]


def _examplable(dataset: Dataset):
    """The dataset's adjudications that may become examples: those of submitted checklists."""
    return Adjudication.objects.filter(
        answer__query__dataset=dataset, criterion__checklist__status=Checklist.Status.SUBMITTED
    ).select_related("answer__system", "criterion")


def candidate(adjudication: Adjudication) -> Candidate:
    criterion, answer = adjudication.criterion, adjudication.answer
    reason = adjudication.reason.strip()
    example = {
        "criterion": criterion.text[: tuning.MAX_CRITERION],
        "excerpt": tuning.excerpt(
            answer.text, criterion=criterion.text, reason=reason, limit=EXCERPT_CHARS
        )
        or "(empty answer)",
        "decision": adjudication.label,
        "reason": reason[: tuning.MAX_REASON],
        "source": {
            "adjudication": adjudication.pk, "answer": answer.pk, "criterion": criterion.pk,
        },
    }  # fmt: skip
    return Candidate(
        adjudication.pk, answer.pk, criterion.pk, criterion.kind, answer.system.name,
        adjudication.decided_at, example,
    )  # fmt: skip


def auto_pick(
    found: Sequence[Candidate], *, budget_tokens: int, by_kind: bool = False
) -> list[Candidate]:
    """Balanced examples within the budget: the most recent first, pass and fail in turn
    (with `by_kind`, each criterion kind in turn, and pass and fail in turn within it); a
    candidate that would overrun the budget is passed over for a smaller one; at most
    tuning.MAX_EXAMPLES. Plain Python: the candidates come in most recent first."""
    buckets: dict[tuple[str, str], list[Candidate]] = {}
    for c in found:
        buckets.setdefault((c.kind if by_kind else "", c.decision), []).append(c)
    order = sorted(buckets, key=lambda k: (k[0], tuning.DECISIONS.index(k[1])))
    queues = [list(buckets[k]) for k in order]
    chosen: list[Candidate] = []
    used = 0
    while any(queues) and len(chosen) < tuning.MAX_EXAMPLES:
        for queue in queues:
            while queue:
                c = queue.pop(0)
                if used + c.tokens <= budget_tokens:
                    chosen.append(c)
                    used += c.tokens
                    break
            if len(chosen) >= tuning.MAX_EXAMPLES:
                break
    return chosen


def chosen_ids(examples: Iterable[object]) -> set[int]:
    """The adjudications the examples came from."""
    return {source for e in examples if (source := _source_of(e)) is not None}


def examples_set(
    *,
    judge: Judge,
    dataset: Dataset,
    chosen: Iterable[int],
    among: Iterable[int],
    by: AbstractBaseUser,
) -> JudgeTuning:
    """Make the dataset's examples for the judge, among the adjudications `among` (those
    the page listed), exactly those `chosen`, in the order of the most recent first after
    the examples kept: typed ones and those from adjudications not listed. Raises
    Adjudication.DoesNotExist for an id that is not one of this dataset's examplable
    adjudications, and ValidationError (naming the example) when the result breaks the
    bounds; a change is a new prompt version (tuning.tuning_save)."""
    wanted = set(chosen)
    rows = _examplable(dataset).filter(pk__in=wanted).order_by("-decided_at", "-pk")
    picked = [candidate(a) for a in rows]
    if len(picked) != len(wanted):
        raise Adjudication.DoesNotExist("An adjudication chosen is not this dataset's.")
    replaced = wanted | set(among)
    row = tuning.stored(judge, dataset.pk)
    kept = [e for e in (row.examples if row else []) if _source_of(e) not in replaced]
    examples = kept + [c.example for c in picked]
    return tuning.tuning_save(judge=judge, dataset=dataset, examples=examples, by=by)


def _source_of(example: object) -> int | None:
    if isinstance(example, dict) and isinstance(example.get("source"), dict):
        value = example["source"].get("adjudication")
        return value if isinstance(value, int) else None
    return None
