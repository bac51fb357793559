"""Pairwise sessions and votes in a dataset import (the export writes them in
evaluation.datasets.export): the tables `pairwise_sessions` and `pairwise_votes`, checked
against the answers and judges the import knows, then written after the labels.

A vote names its pair by session and query, and the pair's two answers by their keys (system,
version, query, run label, sample); every vote of one session and query must name the same
two answers, those of the session's sides. Reviewers' votes are matched by session, query and
rater, judges' replies by session, query, judge, sample and order, so importing the same
files again changes nothing. Files without these tables (exports before them) import as
before: nothing pairwise is read or written.

Checked once the other tables have passed (evaluation.datasets.importer calls `check` after
import_checks.check, which this module reads from): a file with errors elsewhere lists
those first, then these.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from annotation.models import Dataset
from evaluation.answers.models import System
from evaluation.datasets.import_checks import AnswerKey, Errors, Known, Plan, read_rows
from evaluation.datasets.source import Source
from evaluation.judges.models import Judge
from evaluation.pairwise.models import (
    PairwiseJudgeVote,
    PairwisePair,
    PairwiseSession,
    PairwiseVote,
)
from evaluation.pairwise.selectors import session_keys
from evaluation.tables.rows import ImportRejected

if TYPE_CHECKING:
    from evaluation.datasets.import_checks import ImportResult

SESSIONS, VOTES = "pairwise_sessions", "pairwise_votes"
REVIEWER, JUDGE = "reviewer", "judge"


def side_key(row: dict, side: str) -> AnswerKey:
    """The answer of side `side` ("a" or "b") a vote row names."""
    return (
        row[f"system_{side}"], row[f"system_{side}_version"], row["query"],
        row[f"run_label_{side}"], row[f"answer_{side}_sample"] or 0,
    )  # fmt: skip


# --- checking ------------------------------------------------------------------------


def check(source: Source, plan: Plan, dataset: Dataset | None) -> None:
    """Check both tables, after the answers (votes name them); keeps the sessions' rows in
    `plan.tables` and the votes' count in `plan.big`. Writes nothing; ImportRejected lists
    every error."""
    errors = Errors()
    _check(source, plan, plan.known, dataset, errors)
    if errors:
        raise ImportRejected(list(errors))


def _check(
    source: Source, plan: Plan, known: Known, dataset: Dataset | None, errors: Errors
) -> None:
    sessions = plan.tables[SESSIONS] = [
        (where, row) for where, _, row in read_rows(source, SESSIONS, errors)
    ]
    systems = {key[:2] for key in known.answers}
    sides: dict[str, tuple[tuple, tuple]] = {}
    if dataset is not None:
        stored = PairwiseSession.objects.filter(dataset=dataset).select_related(
            "system_a", "system_b"
        )
        keys = session_keys(dataset)
        for s in stored:
            sides[keys[s.pk]] = (
                (s.system_a.name, s.system_a.version, s.run_label_a),
                (s.system_b.name, s.system_b.version, s.run_label_b),
            )
    in_files: dict[str, str] = {}
    for where, row in sessions:
        a = (row["system_a"], row["system_a_version"], row["run_label_a"])
        b = (row["system_b"], row["system_b_version"], row["run_label_b"])
        if row["session"] in in_files:
            errors.add(f"{where}: same session as {in_files[row['session']]}; one row each")
        elif row["session"] in sides and sides[row["session"]] != (a, b):
            errors.add(
                f"{where}: field 'session': the dataset's session {row['session']!r} compares "
                "other sides"
            )
        in_files[row["session"]] = where
        if a == b:
            errors.add(f"{where}: field 'system_b': the two sides are one")
        for side, (system, version, _) in (("a", a), ("b", b)):
            if (system, version) not in systems:
                errors.add(
                    f"{where}: field 'system_{side}': no answer of {system!r} {version!r} "
                    "in answers or the dataset"
                )
        per_pair = row["reviewers_per_pair"]
        if per_pair is not None and not 1 <= per_pair <= 50:
            errors.add(f"{where}: field 'reviewers_per_pair' must be from 1 to 50")
        if row["created_by"]:
            plan.usernames.add(row["created_by"])
        sides[row["session"]] = (a, b)
    count = 0
    pairs = _stored_pairs(dataset, known) if dataset is not None else {}
    for where, _, row in read_rows(source, VOTES, errors):
        count += 1
        _check_vote(where, row, sides, pairs, plan, known, errors)
    plan.big[VOTES] = count


def _stored_pairs(dataset: Dataset, known: Known) -> dict[tuple[str, str], tuple]:
    """(session key, query) → the keys of the pair's two answers, for the dataset's stored
    pairs: a vote of the files naming one must name its answers."""
    if known.stored is None:
        return {}
    answer_keys = {pk: key for key, pk in known.stored.answers.items()}
    keys = session_keys(dataset)
    rows = PairwisePair.objects.filter(session__dataset=dataset).values_list(
        "session_id", "query__external_id", "answer_a_id", "answer_b_id"
    )
    return {
        (keys[session], query): (answer_keys.get(a), answer_keys.get(b))
        for session, query, a, b in rows
    }


def _check_vote(
    where: str, row: dict, sides: dict, pairs: dict, plan: Plan, known: Known, errors: Errors
) -> None:
    session = sides.get(row["session"])
    if session is None:
        errors.add(f"{where}: field 'session': no session {row['session']!r} in "
                   "pairwise_sessions or the dataset")  # fmt: skip
        return
    answers = (side_key(row, "a"), side_key(row, "b"))
    for side, answer, (system, version, run_label) in zip("ab", answers, session, strict=True):
        if answer[:2] + answer[3:4] != (system, version, run_label):
            errors.add(
                f"{where}: field 'system_{side}': not side {side.upper()} of session "
                f"{row['session']!r} ({system!r} {version!r}, run label {run_label!r})"
            )
        elif answer not in known.answers:
            errors.add(f"{where}: field 'answer_{side}_sample': no answer of {system!r} "
                       f"{version!r} to query {row['query']!r} with run label {run_label!r} "
                       f"and sample {answer[4]} in answers or the dataset")  # fmt: skip
    first = pairs.setdefault((row["session"], row["query"]), answers)
    if first != answers:
        errors.add(
            f"{where}: field 'query': the pair of session {row['session']!r} and query "
            f"{row['query']!r} has other answers (in the dataset or an earlier line)"
        )
    if row["voter"] == REVIEWER:
        if not row["rater"]:
            errors.add(f"{where}: field 'rater' is required for a reviewer's vote")
        if not row["preference"]:
            errors.add(f"{where}: field 'preference' is required for a reviewer's vote")
        if row["reviewer"]:
            plan.usernames.add(row["reviewer"])
        return
    if row["judge"] not in known.judges:
        errors.add(f"{where}: field 'judge': no judge {row['judge']!r}")
    if not row["order"]:
        errors.add(f"{where}: field 'order' is required for a judge's reply")
    if row["sample"] is not None and not 0 <= row["sample"] <= 1000:
        errors.add(f"{where}: field 'sample' must be from 0 to 1000")
    voted = row["outcome"] in ("", PairwiseJudgeVote.Outcome.VOTED)
    if voted != bool(row["preference"]):
        errors.add(f"{where}: field 'preference' is given exactly when the outcome is voted")


# --- writing -------------------------------------------------------------------------


def write(writer: Any, source: Source, plan: Plan, result: ImportResult) -> None:
    """Write the sessions, their pairs, and the votes (through the import's `_upsert`)."""
    if not plan.tables.get(SESSIONS) and not plan.big.get(VOTES):
        return
    dataset = writer.dataset
    sessions = _sessions(dataset, plan, writer.users, result)
    pairs = _pairs(source, sessions, writer.stored)
    stored = writer.stored

    def pair_of(r: dict) -> int:
        return pairs[(sessions[r["session"]], stored.queries[r["query"]])]

    def reviewer_rows() -> Iterator[tuple]:
        for _, line, r in read_rows(source, VOTES, Errors()):
            if r["voter"] == REVIEWER:
                at = r["voted_at"] or writer.now
                yield (
                    line, pair_of(r), r["rater"], writer.users.get(r["reviewer"]),
                    r["first_is_a"], r["preference"], r["reason"],
                    r["source"] or PairwiseVote.Source.IMPORT, at, at,
                )  # fmt: skip

    writer._upsert(
        VOTES, PairwiseVote, keys=("pair_id", "rater"),
        columns=("pair_id", "rater", "reviewer_id", "first_is_a", "preference", "reason",
                 "source", "voted_at", "shown_at"),
        keep_on_update=("shown_at",), rows=reviewer_rows(),
    )  # fmt: skip
    judges = dict(Judge.objects.values_list("name", "pk"))

    def judge_rows() -> Iterator[tuple]:
        for _, line, r in read_rows(source, VOTES, Errors()):
            if r["voter"] == JUDGE:
                yield (
                    line, pair_of(r), judges[r["judge"]], r["sample"] or 0, r["order"],
                    r["outcome"] or PairwiseJudgeVote.Outcome.VOTED, r["preference"],
                    r["reason"], r["raw_output"], r["prompt_version"], r["cache_key"],
                    r["prompt_tokens"] or 0, r["completion_tokens"] or 0, r["latency_ms"] or 0,
                    r["voted_at"] or writer.now,
                )  # fmt: skip

    writer._upsert(
        VOTES, PairwiseJudgeVote, keys=("pair_id", "judge_id", "sample", "order"),
        columns=("pair_id", "judge_id", "sample", "order", "outcome", "preference",
                 "rationale", "raw_output", "prompt_version", "cache_key", "prompt_tokens",
                 "completion_tokens", "latency_ms", "created_at"),
        json_columns=("judge_params",), keep_on_update=(), rows=judge_rows(),
    )  # fmt: skip


def _sessions(dataset: Dataset, plan: Plan, users: dict, result: ImportResult) -> dict[str, int]:
    """The sessions by key, those of the files made (a stored one is never rewritten: its
    votes were cast on it as it is)."""
    found = {key: pk for pk, key in session_keys(dataset).items()}
    systems = {(s.name, s.version): s.pk for s in System.objects.all()}
    for _, row in plan.tables[SESSIONS]:
        if row["session"] in found:
            result.count(SESSIONS, unchanged=1)
            continue
        session = PairwiseSession.objects.create(
            dataset=dataset, name=row["name"] or row["session"],
            system_a_id=systems[(row["system_a"], row["system_a_version"])],
            run_label_a=row["run_label_a"],
            system_b_id=systems[(row["system_b"], row["system_b_version"])],
            run_label_b=row["run_label_b"],
            reviewers_per_pair=row["reviewers_per_pair"] or 3,
            show_checklist=bool(row["show_checklist"]),
            created_by_id=users.get(row["created_by"]) if row["created_by"] else None,
        )  # fmt: skip
        if row["created_at"]:
            PairwiseSession.objects.filter(pk=session.pk).update(created_at=row["created_at"])
        found[row["session"]] = session.pk
        result.count(SESSIONS, created=1)
    return found


def _pairs(source: Source, sessions: dict[str, int], stored: Any) -> dict[tuple[int, int], int]:
    """(session id, query id) → pair id, making the pairs the votes name that are not
    stored (a session made by this import has none yet)."""
    pairs = dict(
        ((s, q), pk)
        for pk, s, q in PairwisePair.objects.filter(session_id__in=sessions.values()).values_list(
            "pk", "session_id", "query_id"
        )
    )
    new: dict[tuple[int, int], PairwisePair] = {}
    for _, _, r in read_rows(source, VOTES, Errors()):
        key = (sessions[r["session"]], stored.queries[r["query"]])
        if key not in pairs and key not in new:
            new[key] = PairwisePair(
                session_id=key[0], query_id=key[1],
                answer_a_id=stored.answers[side_key(r, "a")],
                answer_b_id=stored.answers[side_key(r, "b")],
            )  # fmt: skip
    for pair in PairwisePair.objects.bulk_create(new.values()):
        pairs[(pair.session_id, pair.query_id)] = pair.pk
    return pairs
