"""The analytics' judge agreement and panel calibration of a run leave out the items its
judges were shown as worked examples (issue 25), like the Agreement page."""

from __future__ import annotations

from evaluation.analytics import selectors as sel
from evaluation.analytics import summaries
from tests.evaluation.analytics.known import human


def test_example_items_are_out_of_the_judge_agreement(known):
    run = known.run
    before = summaries.calibration_items(sel.load_run(run))
    labelled = sorted(k for k in known.votes if human(known, k) is not None)
    shown = labelled[:3]
    assert set(shown) <= set(before)
    members = [dict(m) for m in run.snapshot["members"]]
    members[0]["example_items"] = [list(k) for k in shown]
    run.snapshot = {**run.snapshot, "members": members}
    run.save(update_fields=["snapshot"])
    data = sel.load_run(run)
    after = summaries.calibration_items(data)
    assert set(after) == set(before) - set(shown)
    overall = next(
        a for a in summaries.judge_agreement(data)
        if a.rater == summaries.PANEL and a.group == "all"
    )  # fmt: skip
    assert overall.agreement.n <= len(after)
