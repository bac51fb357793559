"""The comparison a request asks for, read once for the page and the API: the two sides,
every paired query, the pairs the filters keep (in order) and the shown page's pairs in
full. Reads only: the two runs' kept scores and the shown answers' verdicts."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator

from annotation.models import Dataset
from evaluation.runs.scores import RunScores
from evaluation.side_by_side import pairing, selectors
from evaluation.side_by_side.forms import SideBySideForm
from evaluation.side_by_side.pairing import Paired
from evaluation.side_by_side.selectors import PairDetail, Side

# A page shows every criterion of each query on both sides (60 at the full preset's three
# checklists of 15-25): five queries keep it within the page target at a million verdicts
# (docs/benchmarks.md).
PAIRS_PER_PAGE = 5


@dataclass
class SideBySide:
    side_a: Side
    side_b: Side
    scores_a: RunScores
    scores_b: RunScores
    paired: Paired  # every query both sides answered
    page: Page  # of the pairs the filters keep
    details: list[PairDetail]  # the page's pairs in full

    @property
    def updating(self) -> bool:
        """Either run's scores are those kept before its latest changes (a refresh runs)."""
        return self.scores_a.updating or self.scores_b.updating


def side_by_side(
    dataset: Dataset, form: SideBySideForm, page_number: object, per_page: int = PAIRS_PER_PAGE,
    *, strict: bool = False,
) -> SideBySide:  # fmt: skip
    """For a valid form: the comparison and the asked page of it (the last page past it;
    `strict`, the API: django.core.paginator.InvalidPage instead)."""
    side_a, scores_a, side_b, scores_b = form.sides
    paired = selectors.paired(side_a, scores_a, side_b, scores_b)
    kept = pairing.select_pairs(
        paired.pairs,
        min_difference=form.cleaned_data.get("min_difference"),
        queries=selectors.matching_queries(dataset, form.query_filter()),
        sort=form.ordering(),
    )
    paginator = Paginator(kept, per_page)
    page = paginator.page(page_number) if strict else paginator.get_page(page_number)
    details = selectors.pair_details(
        dataset, side_a, side_b, scores_a, scores_b, list(page.object_list)
    )
    return SideBySide(side_a, side_b, scores_a, scores_b, paired, page, details)
