"""bench.web's app worker summary: each refresh group's count and seconds, read from the
lines a real refresh task logs (what FIGURES_REFRESH_PAUSE is measured by)."""

from __future__ import annotations

import logging

from bench.web.__main__ import AppWorker
from evaluation.analytics.tasks import refresh_analytics
from evaluation.kept import refresh
from evaluation.runs import scores
from tests.evaluation.analytics.known import build_known


class Logged:
    """A worker whose log is the given text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def log(self) -> str:
        return self.text


def test_the_refreshes_by_group_are_counted_with_their_seconds(reviewed_dataset, caplog):
    known = build_known(reviewed_dataset)
    with caplog.at_level(logging.INFO, logger="evaluation.analytics.recount"):
        assert refresh_analytics(known.run.pk, refresh.DEFAULT) is True
        assert refresh_analytics(known.run.pk, scores.REFRESH_GROUP) is True
        assert refresh_analytics(known.run.pk, refresh.DEFAULT) is True
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Refreshed")]
    assert len(lines) == 3 and f"Refreshed run {known.run.pk} (default) in " in lines[0]
    worker_log = "\n".join(
        [f"[2026-11-29 17:00:00,000: INFO/MainProcess] {line}" for line in lines]
        + ["[2026-11-29 17:00:01,000: INFO/MainProcess] Task evaluation.refresh_analytics"
           "[5d1c] succeeded in 0.31s: True"]
    )  # fmt: skip
    summary = AppWorker(Logged(worker_log)).summary()
    groups = summary["refreshes (count, seconds) by group"]
    assert groups.keys() == {"default", "scores"}
    assert groups["default"][0] == 2 and groups["scores"][0] == 1
    assert all(seconds > 0 for _, seconds in groups.values())
    assert summary["tasks succeeded"] == {"evaluation.refresh_analytics": 1}
