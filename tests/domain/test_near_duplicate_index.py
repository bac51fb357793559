"""The near-duplicate rule finds its candidates through an index (same markers, a shared
content word) instead of comparing every pair; it must report exactly what the pairwise
definition reports, first best match included."""

from __future__ import annotations

import dataclasses
import random

import pytest

from annotation.validation import rules
from annotation.validation import text as tx
from annotation.validation.presets import FINANCE, GENERIC
from annotation.validation.types import ChecklistInput, CriterionInput

WORDS = ["revenue", "growth", "the", "of", "margin", "states", "reports", "cost", "Apex",
         "Meridian", "2024", "$4.1", "three", "not", "q3", "profit", "and", "a"]  # fmt: skip


def pairwise(checklist: ChecklistInput, threshold: float) -> list[tuple[str, int, float]]:
    """(criterion key, the earlier criterion it nearly repeats, similarity), by definition:
    every earlier filled criterion compared (blank rows are skipped, and counted)."""
    found = []
    for n, criterion in enumerate(checklist.criteria):
        best = None
        for m in range(n):
            other = checklist.criteria[m]
            if not criterion.text.strip() or not other.text.strip():
                continue
            if tx.normalise(criterion.text) == tx.normalise(other.text):
                continue
            if tx.content_markers(criterion.text) != tx.content_markers(other.text):
                continue
            similarity = tx.jaccard(
                rules._content_words(criterion.text), rules._content_words(other.text)
            )
            if similarity >= threshold and (best is None or similarity > best[1]):
                best = (m + 1, similarity)
        if best:
            found.append((criterion.key, *best))
    return found


@pytest.mark.parametrize("threshold", [None, 0.01, 0.3])
@pytest.mark.parametrize("config", [FINANCE, GENERIC], ids=["finance", "generic"])
def test_the_index_reports_what_comparing_every_pair_reports(config, threshold):
    if threshold is not None:
        config = dataclasses.replace(config, near_duplicate_threshold=threshold)
    rng = random.Random(23)
    reported = 0
    for _ in range(150):
        texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6)))
                 for _ in range(rng.randint(1, 30))]  # fmt: skip
        checklist = ChecklistInput(
            criteria=[CriterionInput(key=f"c{n}", text=t, kind="fact") for n, t in enumerate(texts)]
        )
        issues = list(rules.near_duplicate(checklist, config))
        expected = pairwise(checklist, config.near_duplicate_threshold)
        assert [i.criterion_key for i in issues] == [key for key, _, _ in expected]
        for issue, (_, number, similarity) in zip(issues, expected, strict=True):
            assert f"criterion {number} (" in issue.message
            assert f"{similarity:.0%} of their words" in issue.message
        reported += len(issues)
    assert reported > 20  # the generated checklists do hold near duplicates
