from __future__ import annotations

from django.db import models

from annotation.models import Dataset


class ReviewRevision(models.Model):
    """A dataset's review counters: numbers that go up when something a kept figure is
    computed from changes. Writers move them through `evaluation.kept.events.bump` (which
    event moves which counter: `events.MOVES`); readers key their figures by the counters
    they read (`evaluation.kept.readers`), so a figure is never served after such a change.
    Each column is a `evaluation.kept.counters.Counter` of the same name."""

    dataset = models.OneToOneField(
        Dataset, on_delete=models.CASCADE, primary_key=True, related_name="review_revision"
    )
    # Every change any figure reads but a new system answer (Counter.NUMBER).
    number = models.BigIntegerField(default=0)
    # The same, less the labels and adjudications of system answers: what the
    # cross-evaluation figures (which read perfect answers only) are keyed by, so that
    # reviewers labelling system answers do not make the next reader recount them.
    cross_evaluation = models.BigIntegerField(default=0)
    # The same, less human labels (adjudications count): what run scores are keyed by. A
    # score reads verdicts and adjudications, never a label, so reviewers labelling all day
    # do not make the next reader of a run page count its votes again.
    scores = models.BigIntegerField(default=0)
    # New system answers, which change no figure (they carry no label, adjudication or
    # verdict of a finished run) but join the labelling queue: the queues are keyed by it
    # beside `number`, so that answers arriving one by one do not make every agreement and
    # analytics reader recount.
    # db_default: the upsert of the time (migration 0017) left the column out.
    answers = models.BigIntegerField(default=0, db_default=0)
    # Human labels of perfect answers (and every change that moves all counters): what the
    # cross-evaluation figures from reviewers' labels read beside `cross_evaluation`, which
    # such a label no longer moves.
    perfect_labels = models.BigIntegerField(default=0, db_default=0)

    def __str__(self) -> str:
        return f"Review revision {self.number} of dataset {self.dataset_id}"


class KeptFigure(models.Model):
    """One figure (or one piece of one) kept between requests, as computed at one state.

    `kind`, `run_id` and `part` name its slot: the place one figure of one run lives (say
    the agreement counts of run 12, or chunk 3 of run 12's criterion health); keeping a new
    state of a figure replaces the rows of its slot (`evaluation.kept.figures`). `key` is the
    hash of the slot and of everything the figure was computed from (`readers.State`), so a
    changed state is a different key, never answered by the old row. `revision` is the
    review counter the figure was keyed by at that state (`readers.Figure.reads`), for the
    readers that ask which revision a figure reflects. The table kept its old name."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=40)
    # A plain id, not a foreign key: the row is a derived copy, replaced when its slot is
    # kept again, and must not slow the deletion of runs.
    run_id = models.BigIntegerField(null=True)
    part = models.CharField(max_length=100, blank=True)
    revision = models.BigIntegerField(null=True)
    key = models.CharField(max_length=200)
    cells = models.JSONField()
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "evaluation_agreementcache"
        constraints = [
            models.UniqueConstraint(fields=["dataset", "key"], name="one_agreement_cache_per_key")
        ]
        indexes = [
            models.Index(fields=["dataset", "kind", "run_id", "part"], name="kept_figure_slot"),
        ]

    def __str__(self) -> str:
        return f"Kept {self.kind} of dataset {self.dataset_id} (run {self.run_id}, {self.part!r})"


class KeptQueueRow(models.Model):
    """One item of a review queue in the order computed at one state: `kept` is the
    KeptFigure row (the queue's header) whose key holds everything the order depends on
    (the runs' states and methods, the label policy, the dataset's review counters), so a
    page reads one index range instead of ordering the whole queue on every request. A new
    state makes a new key; keeping it deletes the old header and its rows, so a stale order
    is never read (evaluation.review.kept). A label or an adjudication moves the header to
    the new state with the one row it changes (evaluation.review.moves)."""

    # No cascade by Django: it would make every figure deletion collect first (two queries
    # more per stored figure). evaluation.review.kept deletes the rows of the headers it
    # replaces, and rows whose header went another way (a dataset deleted, the figures
    # emptied) on its next write; ids are never reused (PostgreSQL sequences, SQLite
    # AUTOINCREMENT), so such rows are never read. Not indexed alone: it leads both indexes.
    kept = models.ForeignKey(
        KeptFigure, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="+",
    )  # fmt: skip
    # The item's place in the queue: fixed-width fields of digits whose string order is the
    # queue's order (evaluation.review.order). A key, not a 1..N position: a label changes
    # the key of the one item it moves, where a position would renumber every item after
    # it. "Item X of N" counts the keys before it (an index range).
    sort_key = models.CharField(max_length=80)
    adjudicated = models.BooleanField(default=False)
    # Plain ids, not foreign keys: the rows are a derived copy, replaced whenever what they
    # were computed from changes, and must not slow the deletion of answers or criteria.
    answer_id = models.BigIntegerField()
    criterion_id = models.BigIntegerField(null=True)
    run_id = models.BigIntegerField(null=True)
    # Disagreement items: the counted votes and human labels of the item.
    outcome = models.CharField(max_length=16, blank=True)
    passes = models.PositiveIntegerField(default=0)
    fails = models.PositiveIntegerField(default=0)
    invalid = models.PositiveIntegerField(default=0)
    human_pass = models.PositiveIntegerField(default=0)
    human_fail = models.PositiveIntegerField(default=0)
    # Labelling items: the answer's human labels (all raters) and the judges' uncertainty.
    labels = models.PositiveIntegerField(default=0)
    uncertainty = models.FloatField(null=True)

    class Meta:
        indexes = [
            models.Index(fields=["kept", "adjudicated", "sort_key"], name="kept_queue_order"),
            models.Index(fields=["kept", "answer_id"], name="kept_queue_answer"),
        ]

    def __str__(self) -> str:
        return f"Queue item {self.sort_key} of {self.kept_id}"


class KeptRefresh(models.Model):
    """The one recompute of a run's analytics figures under way, or the failure of the last
    one (evaluation.kept.refresh): a single-flight marker that readers race to take,
    and the back-off that keeps a failing recompute from being tried by every reader.
    Without a run, the marker is the dataset's: figures kept per dataset, not per run (the
    review queues, the cross-evaluation figures, the agreement counts without a run).

    `claimed_at`: when the recompute was taken (a marker older than the refresh timeout
    belongs to a worker that died). After a failure, `error` is the exception's kind,
    `failed_at` when, `tries` the failures in a row and `retry_at` when the next try may
    start; a new try clears the failure but keeps `tries`, so the next failure waits
    longer. The row goes when a recompute works."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    # The unique constraint below leads with the run: no index of its own. None: a
    # dataset's figure (one marker per dataset and group, the second constraint).
    run = models.ForeignKey(
        "evaluation.Run", on_delete=models.CASCADE, db_index=False, null=True, related_name="+"
    )
    # What one task computes from one load of the run (refresh.group_for), or of the
    # dataset (evaluation.kept.dataset_groups).
    group = models.CharField(max_length=100)
    claimed_at = models.DateTimeField()
    error = models.CharField(max_length=200, blank=True)
    failed_at = models.DateTimeField(null=True)
    tries = models.PositiveIntegerField(default=0)
    retry_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "group"], name="one_refresh_per_run_and_group"),
            # NULLs are distinct in the one above: a dataset's markers need their own.
            models.UniqueConstraint(
                fields=["dataset", "group"], condition=models.Q(run__isnull=True),
                name="one_refresh_per_dataset_and_group",
            ),
        ]  # fmt: skip

    def __str__(self) -> str:
        if self.run_id is None:
            return f"Refresh of dataset {self.dataset_id}'s figures ({self.group})"
        return f"Analytics refresh of run {self.run_id} ({self.group})"


class ScoresMove(models.Model):
    """One adjudication's move of its dataset's `scores` counter: the counter's value after
    the move and the answer the adjudication was written on, written in the adjudication's
    transaction (evaluation.kept.score_moves). A run's scores kept at counter O are brought
    to counter N by counting again only the answers moved in between, when every value in
    between has its row here; a value without one (a criterion edited, an import, a name)
    means the whole run is counted again."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    scores = models.BigIntegerField()  # the dataset's `scores` counter after the move
    # A plain id, not a foreign key: a derived note that must not slow deleting answers.
    answer_id = models.BigIntegerField()
    moved_at = models.DateTimeField(auto_now_add=True)  # old rows go (score_moves.KEPT_FOR)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "scores"], name="one_scores_move_per_value")
        ]

    def __str__(self) -> str:
        return f"Scores move {self.scores} of dataset {self.dataset_id} (answer {self.answer_id})"
