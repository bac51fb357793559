"""bench.seed_scale (PostgreSQL only: it writes with COPY): the tiny preset makes what it
says, the same rows again for the same seed, and its agreement figures computed in SQL
equal the previous Python code's."""

from __future__ import annotations

import io

import pytest
from django.db import connection

from evaluation.agreement import selectors
from evaluation.agreement.serialize import report_data
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.runs.models import Verdict
from tests.evaluation.agreement import oracle as agreement_oracle

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="bench.seed_scale writes with PostgreSQL's COPY"
)


def content(dataset_id: int) -> tuple:
    verdicts = Verdict.objects.filter(run__dataset=dataset_id).order_by("pk")
    labels = HumanLabel.objects.filter(answer__query__dataset=dataset_id).order_by("pk")
    return (
        list(verdicts.values_list("outcome", flat=True)),
        list(labels.values_list("rater", "label")),
        Adjudication.objects.filter(answer__query__dataset=dataset_id).count(),
    )


@pytest.mark.django_db(transaction=True)
def test_tiny_preset_is_reproducible_and_its_figures_match_the_oracle():
    from bench.seed_scale import PRESETS, seed

    first = seed("tiny", seed_value=3, out=io.StringIO())
    preset = PRESETS["tiny"]
    assert first["labels"] == preset.labels and first["adjudications"] == preset.adjudications
    assert first["queries"] == preset.queries and first["checklists"] == 3 * preset.queries
    again = content(first["dataset"])
    second = seed("tiny", seed_value=3, out=io.StringIO())  # replaces the dataset
    assert content(second["dataset"]) == again
    from annotation.models import Dataset

    dataset = Dataset.objects.get(pk=second["dataset"])
    expected = report_data(agreement_oracle.agreement_report(dataset))
    found = report_data(selectors.agreement_report(dataset))
    assert found.keys() == expected.keys()
    assert found["counts"] == expected["counts"]
    assert found["judge_vs_human"]["overall"]["kappa"] == pytest.approx(
        expected["judge_vs_human"]["overall"]["kappa"]
    )
    assert found["human_vs_human"]["alpha"] == pytest.approx(expected["human_vs_human"]["alpha"])


@pytest.mark.django_db(transaction=True)
def test_the_month_preset_seeds_one_run_a_night_and_queues_no_warm_up_in_tests():
    """Issue 44's month preset at a tiny size (3 nights): one finished run a night, each of
    every judge on every item, the newest finished last; the warm-up is not queued in the
    test suite (FIGURES_WARM_UP off), and says so."""
    from bench.seed_scale import PRESETS, seed
    from evaluation.runs.models import Run

    preset = PRESETS["month-tiny"]
    found = seed("month-tiny", seed_value=5, out=io.StringIO())
    runs = list(Run.objects.filter(dataset=found["dataset"]).order_by("finished_at"))
    assert len(runs) == found["runs"] == preset.runs == 3
    per_run = preset.queries * preset.systems * preset.experts * 3 * preset.judges
    assert [Verdict.objects.filter(run=r).count() for r in runs] == [per_run] * 3
    assert found["verdicts"] == 3 * per_run and found["run"] == runs[-1].pk
    days = [(runs[-1].finished_at - r.finished_at).days for r in runs]
    assert days == [2, 1, 0]
    assert found["warm_up_queued"] is False
    month = PRESETS["month"]  # 21.6 million verdicts: 3,000 × 2 × 20 × 2 × 3 × 30
    assert (
        month.queries
        * month.experts
        * month.criteria[0]
        * month.systems
        * month.judges
        * (month.runs)
        == 21_600_000
    )


def verdict_foreign_keys() -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname, pg_get_constraintdef(oid), convalidated, condeferrable, condeferred"
            " FROM pg_constraint WHERE conrelid = 'evaluation_verdict'::regclass"
            " AND contype = 'f' ORDER BY conname"
        )
        return cursor.fetchall()


@pytest.mark.django_db(transaction=True)
def test_the_seeded_verdicts_keep_their_foreign_keys_checked():
    """The seeder drops the verdicts' foreign keys while it copies them and adds them back
    checked once each (bench.seed_scale._foreign_keys_checked_once): afterwards they are
    the keys Django made, valid and deferred as before, and a verdict naming no answer is
    refused at commit as it was."""
    from django.db import IntegrityError, transaction

    from bench.seed_scale import seed

    before = verdict_foreign_keys()
    assert len(before) == 4 and all(valid and deferrable for _, _, valid, deferrable, _ in before)
    found = seed("month-tiny", seed_value=5, out=io.StringIO())
    assert verdict_foreign_keys() == before
    verdict = Verdict.objects.filter(run=found["run"]).first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Verdict.objects.filter(pk=verdict.pk).update(answer_id=10**9)  # checked at commit
