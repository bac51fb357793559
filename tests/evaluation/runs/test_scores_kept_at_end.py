"""A run's scores are counted in the worker when it ends (issue 23, item 6): the first reader
of its page or its scores API finds them kept and counts no vote."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation.runs import scores
from evaluation.runs.models import Run
from evaluation.runs.signals import run_ended
from tests.factories import PanelFactory, external_judges
from tests.support.builders import checklisted_query, finished_run

pytestmark = pytest.mark.django_db


def test_the_end_of_a_run_keeps_its_scores_for_the_first_reader(dataset, eager_refresh):
    made = checklisted_query(dataset, criteria=3, answers=2)
    panel = PanelFactory(judges=external_judges(1))
    votes = {(a, c): ("pass",) for a in made.answers for c in made.criteria}
    run = finished_run(dataset, panel, votes)
    state = scores._scores_state(run)
    assert scores._summary(state) is None  # nothing kept before the end

    run_ended.send(sender=Run, run_id=run.pk)  # what lifecycle sends when a run ends

    assert scores._summary(state) is not None
    with CaptureQueriesContext(connection) as read:
        first = scores.run_scores(run)
        rows = first[0 : first.count]
    assert not any("evaluation_verdict" in q["sql"] for q in read.captured_queries)
    assert sorted(r.answer_id for r in rows) == sorted(a.pk for a in made.answers)
    assert [r.score for r in rows] == [1.0, 1.0]  # every criterion passed
    assert sum(s.answers for s in first.systems) == 2
    assert not first.updating


def test_an_imported_runs_scores_are_kept_once_the_import_commits(
    tmp_path, eager_refresh, django_capture_on_commit_callbacks
):
    from bench.data_io.generate import generate
    from evaluation.datasets.export import export_chunks
    from evaluation.datasets.importer import ImportOptions, import_dataset

    original = generate("Kept at import", queries=2, systems=2, criteria=3, judges=1)
    path = tmp_path / "export.zip"
    path.write_bytes(b"".join(export_chunks(original)))
    with django_capture_on_commit_callbacks(execute=True):
        copy = import_dataset(path, ImportOptions(as_copy="Kept at import (copy)")).dataset
    (run,) = Run.objects.filter(dataset=copy)
    assert scores._summary(scores._scores_state(run)) is not None
