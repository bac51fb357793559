"""`bench.web --check` recounts in place whatever the cold rule says: with the rule on (as
in production), its recount after deleting the kept figures is a count, not a placeholder
left for a worker (the refresh it would queue is rolled back with the recount)."""

from __future__ import annotations

import pytest
from celery.canvas import Signature

from bench.web.check import check
from evaluation.analytics.tasks import warm_figures
from tests.evaluation.agreement.labelled import build_labelled

pytestmark = pytest.mark.django_db


def test_the_check_recounts_in_place_with_the_cold_rule_on(
    reviewed_dataset, owner, settings, monkeypatch
):
    settings.FIGURES_COLD_IN_REQUEST = False
    sent = []
    monkeypatch.setattr(Signature, "apply_async", lambda self, *a, **k: sent.append(self.task))
    build_labelled(reviewed_dataset, queries=2, criteria=3, systems=2, seed=131)
    warm_figures(reviewed_dataset.pk)
    sent.clear()
    result = check(reviewed_dataset.pk, owner.username)
    assert all(part["differences"] == 0 for part in result.values()), result
    assert result["labelling"]["items_recounted"] > 0
    assert result["agreement"]["compared"] > 10
    assert sent == []  # nothing queued: recounted here
