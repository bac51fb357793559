"""K-QA, real data: three physicians' labels imported and their agreement shown by the app,
held to scikit-learn and the krippendorff package computed straight from the CSV."""

from __future__ import annotations

import csv
import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from itertools import combinations
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotation.models import Dataset
from evaluation.agreement.selectors import agreement_report
from evaluation.answers.models import Answer
from evaluation.datasets.kqa import DATASET_NAME, import_kqa
from evaluation.labels.models import HumanLabel
from tests.support.celery_worker import ROOT, database_url

KQA = Path(settings.BASE_DIR) / "evaluation" / "fixtures" / "kqa"  # in the repository
# CSV rows (first column) that match no criterion, read off the published files: 3 rows of
# a question missing from the JSONL and 5 statements that join two criteria into one.
SKIPPED = {"17", "99", "103", "113", "179", "369", "370", "371"}


def oracle_rows() -> list[dict]:
    with (KQA / "NLI_medical_annotator.csv").open(encoding="utf-8", newline="") as handle:
        return [row for row in csv.DictReader(handle) if row[""] not in SKIPPED]


def physician(row: dict, n: int) -> int:
    return 1 if row[f"label_{n}"] == "Entailment" else 0


@pytest.fixture
def kqa(db, owner, reviewer):
    start = time.monotonic()
    result = import_kqa(directory=KQA, admins=[owner], reviewers=[reviewer], labelled_only=True)
    assert time.monotonic() - start < 20
    return result


def test_import_maps_rows_to_criteria_and_reports_the_rest(kqa):
    skipped = {line.split(":")[0].removeprefix("row ") for line in kqa.skipped}
    assert skipped == SKIPPED
    joined = {line.split(":")[0].removeprefix("row ") for line in kqa.joined}
    assert joined == {"17", "99", "103", "113", "179"}
    assert "row 17: joined statements: the statement runs together criteria 4 and 5" in (
        "\n".join(kqa.joined)
    )
    assert (kqa.matched_exactly, kqa.matched_normalised) == (390, 1)  # docs/data-formats.md
    assert kqa.queries_created == 49  # 50 questions in the CSV, one absent from the JSONL
    assert Answer.objects.filter(query__dataset=kqa.dataset).count() == 49
    assert kqa.labels.created == 3 * (399 - len(SKIPPED))
    assert set(HumanLabel.objects.values_list("rater", flat=True)) == {
        "physician_0",
        "physician_1",
        "physician_2",
    }
    assert not HumanLabel.objects.exclude(source=HumanLabel.Source.IMPORT).exists()


def test_importing_again_changes_nothing(kqa):
    again = import_kqa(directory=KQA, labelled_only=True)
    assert again.dataset == kqa.dataset
    assert (again.queries_created, again.criteria_created, again.answers_created) == (0, 0, 0)
    assert (again.labels.created, again.labels.updated) == (0, 0)
    assert HumanLabel.objects.count() == 3 * (399 - len(SKIPPED))


def test_human_agreement_equals_the_oracles(kqa):
    rows = oracle_rows()
    report = agreement_report(kqa.dataset)
    assert report.raters == ["physician_0", "physician_1", "physician_2"]
    pairs = {(p.key.value, p.key.other): p.agreement for p in report.pairs}
    for a, b in combinations(range(3), 2):
        first = [physician(r, a) for r in rows]
        second = [physician(r, b) for r in rows]
        figure = pairs[f"physician_{a}", f"physician_{b}"]
        assert figure.n == len(rows)
        assert figure.kappa.kappa == pytest.approx(cohen_kappa_score(first, second), abs=1e-12)
        assert figure.percent == pytest.approx(np.mean(np.array(first) == np.array(second)))
    data = np.array([[physician(r, n) for r in rows] for n in range(3)], dtype=float)
    expected_alpha = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert report.alpha == pytest.approx(expected_alpha, abs=1e-12)
    assert report.alpha_items == len(rows)


def test_agreement_page_shows_the_physicians_agreement(kqa, client, reviewer):
    client.force_login(reviewer)
    response = client.get(reverse("dataset-agreement", args=[kqa.dataset.pk]))
    assert response.status_code == 200
    rows = oracle_rows()
    kappa = cohen_kappa_score([physician(r, 0) for r in rows], [physician(r, 1) for r in rows])
    assert f"{kappa:.3f}" in response.content.decode()
    assert "physician_0 – physician_1" in response.content.decode()


def test_command_is_idempotent_and_lists_skipped_rows(db, owner, capsys):
    call_command("import_kqa", "--directory", str(KQA), "--labelled-only", "--admin", "owner")
    first = capsys.readouterr().out
    assert "skipped row 369" in first and "skipped 8" in first
    assert "Joined statements (5), skipped:" in first and "row 17: joined statements" in first
    call_command("import_kqa", "--directory", str(KQA), "--labelled-only")
    second = capsys.readouterr().out
    assert "0 new queries" in second and "Human labels: 0 new, 0 changed" in second


def readme_import_kqa(env: dict[str, str]) -> None:
    """`python3.11 dev.py manage import_kqa` in its own process, from another directory."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "dev.py"), "manage", "import_kqa"],
        cwd="/", env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "201 new queries" in done.stdout, done.stdout[:2000]


def test_the_readme_command_with_no_argument_imports_the_files_in_the_repository(
    transactional_db,
):
    """`python3.11 dev.py manage import_kqa`, as the README gives it, on a fresh clone: no
    argument, the files found in the repository (evaluation/fixtures/kqa/), from any working
    directory. Run as a separate process against this test's database."""
    readme_import_kqa({**os.environ, "DATABASE_URL": database_url(connection.settings_dict)})
    dataset = Dataset.objects.get(name=DATASET_NAME)
    assert dataset.queries.count() == 201
    # Each question is named by its line in the file, the same on every import.
    first = dataset.queries.get(external_id="kqa-1")
    assert first.text.startswith("Alright so I dont know much about Lexapro")
    assert HumanLabel.objects.filter(answer__query__dataset=dataset).count() > 1000


def test_the_readme_command_works_before_any_database_exists(tmp_path):
    """A fresh clone has no database until something migrates it: `dev.py manage` migrates
    first, as `dev.py run` does, so `python3.11 dev.py manage import_kqa` is the first
    command one may type. Run as a separate process, with none of the test run's settings,
    on SQLite in an empty folder (where `dev.py run` would keep it: VAR_DIR)."""
    test_only = {"PYTEST_VERSION", "DJANGO_ALLOW_ASYNC_UNSAFE", "DEBUG", "SECRET_KEY",
                 "DATABASE_URL", "CELERY_BROKER_URL", "VAR_DIR"}  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in test_only}
    readme_import_kqa({**env, "VAR_DIR": str(tmp_path)})
    with closing(sqlite3.connect(tmp_path / "db.sqlite3")) as made:
        (queries,) = made.execute(
            "SELECT count(*) FROM annotation_query q JOIN annotation_dataset d"
            " ON q.dataset_id = d.id WHERE d.name = ?",
            [DATASET_NAME],
        ).fetchone()
    assert queries == 201
