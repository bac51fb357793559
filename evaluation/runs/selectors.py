"""Reads of runs for pages, the API and commands: progress, errors, the actions a run's
status allows, and each answer's votes. Scores are in scores.py, costs in costs.py."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from django.db.models import Count, Exists, OuterRef, Q, Sum
from django.utils import timezone

from annotation.models import Checklist, Criterion, Dataset
from evaluation.answers.models import Answer
from evaluation.kept import readers
from evaluation.kept.figures import remembered
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.metrics import rubrics
from evaluation.metrics.aggregation import CriterionVerdict, Vote, aggregate
from evaluation.metrics.rubrics import GroupScore
from evaluation.runs import trees
from evaluation.runs.models import GradedScore, Run, RunTask, Verdict

# The runs the agreement and analytics pages offer: the latest ones.
OFFERED_RUNS = 50


def runs_of_system_answers(dataset: Dataset) -> list[Run]:
    """The dataset's runs that grade system answers or hold imported verdicts, newest first:
    the runs the agreement and analytics pages offer. Cross-evaluation runs grade perfect
    answers, which reviewers do not label and analytics do not score; a judge canary and a
    stability pass grade items again to check the judges, and show on the run they check
    (Run.objects.not_checks)."""
    return list(
        dataset.runs.exclude(kind=Run.Kind.CROSS_EVALUATION)
        .not_checks()
        .select_related("panel")
        .order_by("-created_at", "-id")[:OFFERED_RUNS]
    )


def choose_run(
    dataset: Dataset, run_id: int | None, runs: Sequence[Run], *, or_newest: bool = False
) -> Run | None:
    """The run the agreement and analytics pages and API show, from `runs`
    (runs_of_system_answers: the latest ones).

    The run asked for (Run.DoesNotExist unless it is one of the dataset's runs of system
    answers), else the latest finished one (Run.FINISHED: done, or done with errors), else,
    with `or_newest` (analytics, which say when a run is still collecting verdicts), the
    newest run; without it (agreement) None: the human-vs-human figures alone."""
    if run_id is not None:
        found = next((r for r in runs if r.pk == run_id), None)
        if found is None:
            found = (
                dataset.runs.exclude(kind=Run.Kind.CROSS_EVALUATION)
                .select_related("panel")
                .get(pk=run_id)
            )
        return found
    finished = [r for r in runs if r.status in Run.FINISHED]
    if finished:
        return max(finished, key=lambda r: (r.finished_at or r.created_at, r.pk))
    return runs[0] if or_newest and runs else None


@dataclass(frozen=True)
class Progress:
    expected: int
    done: int
    passed: int
    failed: int
    unparseable: int
    errors: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    errors_by_kind: dict[str, int]
    elapsed_s: float
    rate_per_s: float | None
    eta_s: float | None
    tasks: int = 0
    tasks_done: int = 0
    tasks_failed: int = 0

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.expected if self.expected else 0.0

    @property
    def imported(self) -> bool:
        """Verdicts with no task: made elsewhere and imported (a dataset or verdicts
        import). A run of this installation records its tasks before its first verdict."""
        return self.tasks == 0 and self.done > 0


def _verdict_totals(run: Run) -> dict:
    """Counts over the run's verdicts: a scan of all of them, so a running run's are kept
    for a few seconds (readers.live_window): its page polls them while its worker writes.
    An ended run's pages read them from its kept counts (runs.overview: never counted in
    a request); this is the way of the command line and of a running run's page."""
    state = readers.state(run.dataset_id, readers.PROGRESS, run=run, facts=readers.run_facts(run))
    return remembered(state, lambda: count_verdicts(run))


def count_verdicts(run: Run) -> dict:
    totals = Verdict.objects.filter(run=run).aggregate(
        done=Count("pk"),
        passed=Count("pk", filter=Q(outcome=Verdict.Outcome.PASS)),
        failed=Count("pk", filter=Q(outcome=Verdict.Outcome.FAIL)),
        unparseable=Count("pk", filter=Q(outcome=Verdict.Outcome.UNPARSEABLE)),
        errors=Count("pk", filter=Q(outcome=Verdict.Outcome.ERROR)),
        cache_hits=Count("pk", filter=Q(cache_hit=True)),
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
    )
    totals["by_kind"] = dict(
        Verdict.objects.filter(run=run, outcome=Verdict.Outcome.ERROR)
        .values_list("error_kind")
        .annotate(n=Count("pk"))
        .values_list("error_kind", "n")
    )
    return totals


def run_progress(run: Run, totals: dict | None = None) -> Progress:
    """Read from the database, so any web process shows the same figures. `totals`: the
    verdict counts when the caller has them (an ended run's kept counts, runs.overview)."""
    totals = _verdict_totals(run) if totals is None else totals
    by_kind = totals["by_kind"]
    tasks = RunTask.objects.filter(run=run).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(done_at__isnull=False)),
        failed=Count("pk", filter=~Q(error="")),
    )
    end = run.finished_at or timezone.now()
    elapsed = (end - run.started_at).total_seconds() if run.started_at else 0.0
    done = totals["done"]
    rate = done / elapsed if elapsed > 0 and done else None
    remaining = max(run.expected - done, 0)
    eta = remaining / rate if rate and run.status == Run.Status.RUNNING else None
    return Progress(
        expected=run.expected, done=done, passed=totals["passed"], failed=totals["failed"],
        unparseable=totals["unparseable"], errors=totals["errors"],
        cache_hits=totals["cache_hits"], prompt_tokens=totals["prompt_tokens"] or 0,
        completion_tokens=totals["completion_tokens"] or 0, errors_by_kind=by_kind,
        elapsed_s=elapsed, rate_per_s=rate, eta_s=eta, tasks=tasks["total"],
        tasks_done=tasks["done"], tasks_failed=tasks["failed"],
    )  # fmt: skip


@dataclass(frozen=True)
class ErrorGroup:
    kind: str
    message: str
    count: int


def run_errors(
    run: Run,
    *,
    limit: int = 5,
    calls: bool = True,
    grades: bool = True,
    tasks: bool = True,
    counted: list[list] | None = None,
) -> list[ErrorGroup]:
    """The most frequent error messages of the run's failed calls and tasks. `calls`,
    `grades`, `tasks`: False when the caller's counts show none of that kind failed (the
    run page's progress), so that they are not grouped. `counted`: the failed calls'
    groups when the caller has them (call_errors, kept for an ended run: runs.overview)."""
    groups: dict[tuple[str, str], int] = defaultdict(int)
    # The failed calls are grouped over every verdict of the run (5,000 errors among
    # 1,000,000 verdicts: tens of ms on each run page): an ended run's are kept, as its
    # progress counts, until its state moves; a running run's for a live window. The tasks'
    # errors are read live, as their counts in run_progress.
    kinds = (calls, grades)
    found = counted
    if found is None:
        facts = [limit, kinds, *readers.run_facts(run)]
        state = readers.state(run.dataset_id, readers.ERRORS, run=run, facts=facts)
        found = remembered(state, lambda: call_errors(run, limit, kinds))
    for kind, message, n in found:
        groups[kind, message] += n
    if tasks:
        rows = (
            RunTask.objects.filter(run=run)
            .exclude(error="")
            .values_list("error")
            .annotate(n=Count("pk"))
            .order_by("-n")[:limit]
        )
        for message, n in rows:
            groups["task", message] += n
    ranked = sorted(groups.items(), key=lambda item: -item[1])[:limit]
    return [ErrorGroup(kind, message, n) for (kind, message), n in ranked]


def call_errors(run: Run, limit: int, kinds: tuple[bool, bool]) -> list[list]:
    """[error kind, message, calls] of the most frequent failed verdicts and grades."""
    found: list[list] = []
    both = ((Verdict, Verdict.Outcome.ERROR), (GradedScore, "error"))
    for (model, outcome), wanted in zip(both, kinds, strict=True):
        if not wanted:
            continue
        rows = (
            model.objects.filter(run=run, outcome=outcome)
            .values_list("error_kind", "error")
            .annotate(n=Count("pk"))
            .order_by("-n")[:limit]
        )
        found += [[kind, message, n] for kind, message, n in rows]
    return found


def run_actions(run: Run, *, has_errors: bool) -> list[str]:
    """What can be done to the run in its present status (page buttons and the API)."""
    if run.kind == Run.Kind.IMPORTED:
        return []
    if run.status in (Run.Status.PENDING, Run.Status.RUNNING):
        return ["cancel"]
    actions = []
    if run.status in (Run.Status.CANCELLED, Run.Status.FAILED):
        actions.append("resume")
    if has_errors and run.status != Run.Status.DONE:
        actions.append("retry-failed")
    return actions


@dataclass(frozen=True)
class CriterionVotes:
    criterion: Criterion
    votes: list[Verdict]
    verdict: CriterionVerdict
    # Set by answer_rubrics for the run's answer page: the adjudication that decides the
    # criterion ("pass"/"fail", "" when none) and the reviewers' labels (rater, label).
    adjudicated: str = ""
    labels: tuple[tuple[str, str], ...] = ()


def answer_verdicts(run: Run, answer: Answer) -> list[tuple[str, list[CriterionVotes]]]:
    """Per checklist (by author), each criterion with its votes in this run and the run's
    verdict (the panel's method as the run was started). Two queries."""
    # The checklist as it stands, plus any archived criterion this run judged on the
    # answer: a run keeps what it was started with, so its verdicts on an old wording stay
    # visible. An index probe per archived criterion, where a join read every run's
    # verdicts on every criterion of the query (7,200 rows at 30 nightly runs) to dedupe.
    judged = Verdict.objects.filter(run=run, answer=answer, criterion=OuterRef("pk"))
    criteria = (
        Criterion.objects.filter(
            Q(archived_at__isnull=True) | Q(Exists(judged)),
            checklist__query=answer.query_id,
            checklist__status=Checklist.Status.SUBMITTED,
            scoring_enabled=True,
        )
        .select_related("checklist__author")
        .order_by("checklist_id", "position", "id")
    )
    votes: dict[int, list[Verdict]] = defaultdict(list)
    for verdict in (
        Verdict.objects.filter(run=run, answer=answer)
        .select_related("judge")
        .order_by("judge__name", "sample")
    ):
        votes[verdict.criterion_id].append(verdict)
    by_checklist: dict[str, list[CriterionVotes]] = {}
    for criterion in criteria:
        own = votes.get(criterion.pk, [])
        verdict = aggregate(
            [Vote(str(v.judge_id), v.sample, v.outcome) for v in own],
            run.panel_method,
            threshold=run.panel_threshold,
        )
        author = criterion.checklist.author.get_username()
        by_checklist.setdefault(author, []).append(CriterionVotes(criterion, own, verdict))
    return list(by_checklist.items())


@dataclass(frozen=True)
class RubricSection:
    """A group's heading (None: the criteria in no group) and its own criteria's rows."""

    group: GroupScore | None
    rows: list[CriterionVotes]


@dataclass(frozen=True)
class ChecklistRubric:
    author: str
    scoring: str
    value: float | None
    sections: list[RubricSection]
    undecided: int = 0  # its undecided criteria
    undecided_as: str = rubrics.DEFAULT_UNDECIDED  # what they counted as in `value`


def answer_rubrics(
    run: Run, answer: Answer, checklists: list[tuple[str, list[CriterionVotes]]]
) -> list[ChecklistRubric]:
    """answer_verdicts' checklists laid out by group, with each checklist's strategy value and
    each group's score for this answer, an adjudication deciding its criterion as in the run's
    scores (evaluation.metrics.rubrics), and the reviewers' labels beside each criterion.
    Three queries: adjudications, labels and groups."""
    adjudicated = dict(
        Adjudication.objects.filter(answer=answer).values_list("criterion_id", "label")
    )
    labels: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for criterion_id, rater, label in (
        HumanLabel.objects.filter(answer=answer)
        .order_by("rater", "pk")
        .values_list("criterion_id", "rater", "label")
    ):
        labels[criterion_id].append((rater, label))
    checklists = [
        (author, [
            replace(row, adjudicated=adjudicated.get(row.criterion.pk) or "",
                    labels=tuple(labels.get(row.criterion.pk, ())))
            for row in rows
        ])
        for author, rows in checklists
    ]  # fmt: skip
    ids = {rows[0].criterion.checklist_id for _, rows in checklists if rows}
    checklist_trees = trees.trees_of(ids) if ids else {}
    out = []
    for author, rows in checklists:
        checklist = rows[0].criterion.checklist
        tree = checklist_trees.get(checklist.pk, rubrics.EMPTY_TREE)
        scoring = trees.strategy_of(run.dataset, checklist.scoring)
        criteria = [
            rubrics.RubricCriterion(
                adjudicated.get(row.criterion.pk) or row.verdict.outcome,
                row.criterion.weight,
                trees.group_key(row.criterion.group_id),
            )
            for row in rows
        ]
        undecided = trees.undecided_of(run.dataset, checklist.undecided)
        score = rubrics.score_rubric(
            criteria, tree, scoring, blend_weight=run.dataset.blend_weight, undecided=undecided
        )
        own: dict[str | None, list[CriterionVotes]] = defaultdict(list)
        for row in rows:
            own[trees.group_key(row.criterion.group_id)].append(row)
        sections = [RubricSection(None, own[None])] if own[None] else []
        sections += [RubricSection(g, own[g.key]) for g in score.groups]
        out.append(
            ChecklistRubric(author, scoring, score.value, sections, score.undecided, undecided)
        )
    return out
