"""Importing preference labels made outside the workbench (a peer tool's pairwise queue, a
spreadsheet) into a pairwise session, by the queries' external ids. Same contract as the
review imports (evaluation.datasets.review_imports): every row is checked before anything
is written, then all are written in one transaction or none; each error names the file, the
line and the field; importing the same file again changes nothing.

A row is `query` (the query's external id, as exports write it), `rater` (a name),
`preference` (`a`, `b` or `tie`: A and B are the session's sides) and optionally `reason`.
The position the rater saw is unknown: `first_is_a` stays empty. A rater's vote made in the
app is never overwritten by an import (that row is refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation.models import Query
from annotation.services import external_ids_fix
from evaluation.answers.upload import decode_upload, read_rows
from evaluation.metrics.preference import PREFERENCES
from evaluation.pairwise.models import PairwiseSession, PairwiseVote
from evaluation.tables.rows import Checked, ImportRejected, check_rows, field_text

REASON_MAX = 2000


@dataclass(frozen=True)
class PreferencesResult:
    created: int
    updated: int
    unchanged: int
    raters: int


@dataclass(frozen=True)
class _Row:
    line: int
    pair_id: int
    query_id: int
    rater: str
    preference: str
    reason: str


def import_preferences(*, session: PairwiseSession, name: str, content: str) -> PreferencesResult:
    raw = read_rows(name, content)
    if not raw:
        raise ImportRejected([f"{name}: no rows"])
    pairs = dict(
        session.pairs.filter(query__external_id__gt="").values_list("query__external_id", "pk")
    )
    queries = dict(session.pairs.values_list("pk", "query_id"))
    # App votes, by (pair, rater): an import must not overwrite a vote its rater made here.
    in_app = set(
        PairwiseVote.objects.filter(
            pair__session=session, source=PairwiseVote.Source.APP
        ).values_list("pair_id", "rater")
    )

    def check(line: int, row: dict, where: str) -> Checked[_Row] | list[str]:
        problems = []
        query, rater = field_text(row, "query"), field_text(row, "rater")
        preference, reason = field_text(row, "preference").lower(), field_text(row, "reason")
        pair_id = pairs.get(query)
        if not query:
            problems.append(f"{where}: field 'query' is required (the query's external id)")
        elif pair_id is None:
            problems.append(f"{where}: field 'query': no pair of this session has query {query!r}")
        if not rater:
            problems.append(f"{where}: field 'rater' is required")
        elif len(rater) > 150:
            problems.append(f"{where}: field 'rater' is longer than 150 characters")
        if preference not in PREFERENCES:
            problems.append(f"{where}: field 'preference' must be one of {', '.join(PREFERENCES)}")
        if len(reason) > REASON_MAX:
            problems.append(f"{where}: field 'reason' is longer than {REASON_MAX} characters")
        if pair_id is not None and (pair_id, rater) in in_app:
            problems.append(f"{where}: field 'rater': {rater} voted on this pair in the app")
        if problems:
            return problems
        return Checked(
            _Row(line, pair_id, queries[pair_id], rater, preference, reason), (pair_id, rater)
        )

    rows = check_rows(
        name, raw, check, duplicate="same query and rater as line {line}; one vote each"
    )
    return _write(session, rows)


@transaction.atomic
def _write(session: PairwiseSession, rows: list[_Row]) -> PreferencesResult:
    existing = {
        (v.pair_id, v.rater): v
        for v in PairwiseVote.objects.select_for_update().filter(
            pair__session=session, source=PairwiseVote.Source.IMPORT
        )
    }
    users = {
        u.get_username(): u
        for u in get_user_model().objects.filter(username__in={r.rater for r in rows})
    }
    now = timezone.now()
    new, changed = [], []
    for row in rows:
        vote = existing.get((row.pair_id, row.rater))
        if vote is None:
            new.append(PairwiseVote(
                pair_id=row.pair_id, rater=row.rater, reviewer=users.get(row.rater),
                first_is_a=None, preference=row.preference, reason=row.reason,
                source=PairwiseVote.Source.IMPORT, voted_at=now,
            ))  # fmt: skip
        elif (vote.preference, vote.reason) != (row.preference, row.reason):
            vote.preference, vote.reason, vote.voted_at = row.preference, row.reason, now
            changed.append(vote)
    PairwiseVote.objects.bulk_create(new)
    PairwiseVote.objects.bulk_update(changed, ["preference", "reason", "voted_at"])
    # The file named these queries by their external ids: fixed from now on.
    external_ids_fix(queries=Query.objects.filter(pk__in={r.query_id for r in rows}), by="labels")
    return PreferencesResult(
        created=len(new), updated=len(changed),
        unchanged=len(rows) - len(new) - len(changed), raters=len({r.rater for r in rows}),
    )  # fmt: skip


def import_preferences_file(*, session: PairwiseSession, path: Path) -> PreferencesResult:
    try:
        content = decode_upload(path.name, path.read_bytes())
    except OSError as exc:
        raise ImportRejected([f"{path.name}: cannot be read ({exc})"]) from exc
    return import_preferences(session=session, name=path.name, content=content)
