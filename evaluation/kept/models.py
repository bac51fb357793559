from __future__ import annotations

from django.db import models

from annotation.models import Dataset


class ReviewRevision(models.Model):
    """A number that goes up whenever something an agreement figure is computed from
    changes in the dataset: a human label, an adjudication, a criterion's kind or source
    types, a query's category, a system's or judge's name (evaluation.agreement.revision).
    Cached figures are keyed by it, so they are never served after such a change."""

    dataset = models.OneToOneField(
        Dataset, on_delete=models.CASCADE, primary_key=True, related_name="review_revision"
    )
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
    answers = models.BigIntegerField(default=0, db_default=0)  # raw upserts leave it out

    def __str__(self) -> str:
        return f"Review revision {self.number} of dataset {self.dataset_id}"


class AgreementCache(models.Model):
    """The counted cells of a dataset's agreement figures for one run, as computed at one
    revision of its labels (`key`: the run, its state and method, and the revision). A
    later change makes a new key; old rows are replaced (evaluation.agreement.selectors)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    cells = models.JSONField()
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "key"], name="one_agreement_cache_per_key")
        ]

    def __str__(self) -> str:
        return f"Agreement cells of dataset {self.dataset_id} ({self.key})"


class KeptQueueRow(models.Model):
    """One item of a review queue in the order computed at one state: `kept` is the
    AgreementCache row whose key holds everything the order depends on (the runs' states and
    methods, the label policy, the dataset's review revision), so a page reads
    one index range of positions instead of ordering the whole queue on every request. A new
    state makes a new key; keeping it deletes the old header and its rows, so a stale order
    is never read (evaluation.review.kept)."""

    # No cascade by Django: it would make every figure cache deletion collect first (two
    # queries more per stored figure). evaluation.review.kept deletes the rows of the
    # headers it replaces, and rows whose header went another way (a dataset deleted, the
    # cache emptied) on its next write; ids are never reused (PostgreSQL sequences, SQLite
    # AUTOINCREMENT), so such rows are never read. Not indexed alone: it leads both indexes.
    kept = models.ForeignKey(
        AgreementCache, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="+",
    )  # fmt: skip
    # 1-based and gapless among the open items (adjudicated ones are numbered apart), so
    # that an unfiltered queue's "item X of N" is the position itself.
    position = models.PositiveIntegerField()
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
            models.Index(fields=["kept", "adjudicated", "position"], name="kept_queue_order"),
            models.Index(fields=["kept", "answer_id"], name="kept_queue_answer"),
        ]

    def __str__(self) -> str:
        return f"Queue item {self.position} of {self.kept_id}"
