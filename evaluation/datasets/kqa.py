"""The K-QA dataset (Manes et al., 2024; MIT; evaluation/fixtures/kqa/) as a workbench dataset.

- `questions_w_answers.jsonl`: one query per question (query date QUERY_DATE), its
  physician-written free-form answer as the reference answer, and one submitted checklist
  authored by the dedicated user AUTHOR: `Must_have` statements as core criteria,
  `Nice_to_have` as supplementary, all of kind fact.
- `NLI_medical_annotator.csv`: the LLMs (`llm_x`) as systems (version SYSTEM_VERSION), their
  answers (run label RUN_LABEL), and the three physicians' labels `label_0..2` as imported
  human labels of raters `physician_0..2`: Entailment is pass, Neutral and Contradiction fail.

A CSV row names its question and statement by text. Both are matched exactly first, then
after normalising (whitespace collapsed, case folded, a final full stop dropped); rows that
still match nothing are reported and skipped: a statement that is two adjacent statements of
its question run together is reported as such ("joined statements"), the rest as matching no
criterion. In the published files 8 of the 399 rows do not match: 3 belong to a question
missing from the JSONL, 5 join two statements into one.

Importing again changes nothing: the dataset, queries, checklists and systems are found by
name or text, answers by system, query and run label, labels by item and rater.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation import roles
from annotation.models import Checklist, Criterion, Dataset, Query
from annotation.services import dataset_create, dataset_set_role
from evaluation.answers.models import Answer, System
from evaluation.datasets.review_imports import LabelsResult, import_label_rows

# The files, kept in the repository with their licence (evaluation/fixtures/README.md).
DIRECTORY = Path(__file__).resolve().parent.parent / "fixtures" / "kqa"
DATASET_NAME = "K-QA (medical questions, physician labels)"
AUTHOR = "kqa-physicians"
# The paper appeared in January 2024; the physicians' answers and the LLM answers predate
# it. A fixed date keeps the import reproducible.
QUERY_DATE = dt.date(2023, 12, 31)
SYSTEM_VERSION = "K-QA"
RUN_LABEL = "kqa"
RATERS = ("physician_0", "physician_1", "physician_2")
QUESTIONS_FILE = "questions_w_answers.jsonl"
LABELS_FILE = "NLI_medical_annotator.csv"


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold().rstrip(".").strip()


def _letters(text: str) -> str:
    """Only letters and digits: two statements run together ("…established yet.Ivermectin")
    compare equal to the two apart."""
    return re.sub(r"[\W_]+", "", text.casefold())


def joined_statements(claim: str, statements: list[str]) -> tuple[int, int] | None:
    """The positions (from 1) of two adjacent statements that `claim` runs together."""
    wanted = _letters(claim)
    for i in range(len(statements) - 1):
        if wanted and wanted == _letters(statements[i]) + _letters(statements[i + 1]):
            return i + 1, i + 2
    return None


def label_of(nli: str) -> str:
    return "pass" if nli.strip() == "Entailment" else "fail"


@dataclass
class KqaResult:
    dataset: Dataset
    queries_created: int = 0
    criteria_created: int = 0
    answers_created: int = 0
    answers_updated: int = 0
    rows: int = 0
    matched_exactly: int = 0
    matched_normalised: int = 0
    skipped: list[str] = field(default_factory=list)  # "row 17: why"
    joined: list[str] = field(default_factory=list)  # skipped rows that join two statements
    labels: LabelsResult | None = None


def read_questions(directory: Path) -> list[dict]:
    with (directory / QUESTIONS_FILE).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_nli(directory: Path) -> list[dict]:
    with (directory / LABELS_FILE).open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@transaction.atomic
def import_kqa(
    *,
    directory: Path,
    admins: list = (),  # type: ignore[assignment]
    reviewers: list = (),  # type: ignore[assignment]
    labelled_only: bool = False,
) -> KqaResult:
    """Build (or bring up to date) the K-QA dataset. `labelled_only` keeps only the
    questions that have physician labels (50 of 201), for quick tests."""
    questions = read_questions(directory)
    nli = read_nli(directory)
    author = _author()
    dataset = _dataset(author, admins=admins, reviewers=reviewers)
    result = KqaResult(dataset=dataset, rows=len(nli))

    labelled = {normalise(row["Question"]) for row in nli}
    # A question's external id is its line in the file: the same on every import.
    for number, question in enumerate(questions, start=1):
        question["external_id"] = f"kqa-{number}"
    if labelled_only:
        questions = [q for q in questions if normalise(q["Question"]) in labelled]
    queries = _queries(dataset, questions, result)
    criteria = _criteria(queries, questions, author, result)
    answers = _answers(queries, nli, result)
    ordered: dict[str, list[str]] = {}
    for key, query in queries.items():
        ordered[key] = list(
            Criterion.objects.filter(checklist__query=query, checklist__author=author)
            .order_by("position")
            .values_list("text", flat=True)
        )
    raw = _label_rows(nli, queries, criteria, ordered, answers, result)
    result.labels = import_label_rows(dataset=dataset, name=LABELS_FILE, raw=raw)
    return result


def _dataset(author, *, admins: list, reviewers: list) -> Dataset:
    """The K-QA dataset, made on the first import, with the roles asked for."""
    dataset = Dataset.objects.filter(name=DATASET_NAME).first()
    if dataset is None:
        dataset = dataset_create(
            name=DATASET_NAME,
            by=author,
            description="K-QA (Manes et al., 2024, MIT): patients' medical questions with "
            "physician-written statements, LLM answers and three physicians' labels.",
            experts_per_query=1,
        )
        dataset_set_role(dataset=dataset, user=author, role=roles.DatasetRole.EXPERT)
    for user in admins:
        dataset_set_role(dataset=dataset, user=user, role=roles.DatasetRole.ADMIN)
    for user in reviewers:
        dataset_set_role(dataset=dataset, user=user, role=roles.DatasetRole.REVIEWER)
    return dataset


def _label_rows(
    nli: list[dict],
    queries: dict[str, Query],
    criteria: dict[str, dict],
    ordered: dict[str, list[str]],
    answers: dict[tuple[str, str], int],
    result: KqaResult,
) -> list[tuple[int, dict]]:
    """The physicians' labels as rows of the labels import (line, row), each statement
    matched to its criterion exactly or once normalised; what cannot be matched is
    skipped and said in `result`."""
    raw: list[tuple[int, dict]] = []
    for line, row in enumerate(nli, start=2):
        where = f"row {row.get('', line)}"
        key = _find(queries, row["Question"])
        if key is None:
            result.skipped.append(f"{where}: question not in {QUESTIONS_FILE}")
            continue
        criterion_id = _criterion_for(row["claim"], criteria[key], ordered[key], where, result)
        if criterion_id is None:
            continue
        answer_id = answers[key, row["llm_x"]]
        for n, rater in enumerate(RATERS):
            label = {
                "answer": answer_id,
                "criterion": criterion_id,
                "rater": rater,
                "label": label_of(row[f"label_{n}"]),
            }
            raw.append((line, label))
    return raw


def _criterion_for(
    claim: str, statements: dict, ordered: list[str], where: str, result: KqaResult
) -> int | None:
    """The criterion a physician's statement labels: the same text, or the same once
    normalised; None (and why, in `result`) when it matches none."""
    criterion_id = statements.get(("exact", claim.strip()))
    if criterion_id is not None:
        result.matched_exactly += 1
        return criterion_id
    criterion_id = statements.get(("normalised", normalise(claim)))
    if criterion_id is not None:
        result.matched_normalised += 1
        return criterion_id
    pair = joined_statements(claim, ordered)
    if pair is not None:
        message = (
            f"{where}: joined statements: the statement runs together criteria "
            f"{pair[0]} and {pair[1]} of its question; label them one by one"
        )
        result.joined.append(message)
        result.skipped.append(message)
    else:
        result.skipped.append(f"{where}: statement matches no criterion of its question")
    return None


def _author():
    user, made = get_user_model().objects.get_or_create(
        username=AUTHOR, defaults={"first_name": "K-QA", "last_name": "physicians"}
    )
    if made:
        user.set_unusable_password()  # a placeholder author; nobody signs in as it
        user.save(update_fields=["password"])
    return user


def _find(queries: dict[str, Query], text: str) -> str | None:
    """The question text as imported, for a question as the CSV spells it."""
    if text in queries:
        return text
    wanted = normalise(text)
    return next((k for k in queries if normalise(k) == wanted), None)


def _queries(dataset: Dataset, questions: list[dict], result: KqaResult) -> dict[str, Query]:
    existing = {q.text: q for q in dataset.queries.all()}
    new = [
        Query(
            dataset=dataset,
            external_id=q["external_id"],
            text=q["Question"],
            query_date=QUERY_DATE,
            reference_answer=q.get("Free_form_answer", ""),
        )
        for q in questions
        if q["Question"] not in existing
    ]
    Query.objects.bulk_create(new)
    result.queries_created = len(new)
    by_text = {q.text: q for q in dataset.queries.all()}
    return {q["Question"]: by_text[q["Question"]] for q in questions}


def _criteria(
    queries: dict[str, Query], questions: list[dict], author, result: KqaResult
) -> dict[str, dict[tuple[str, str], int]]:
    """Per question text: its criteria by exact and by normalised statement."""
    now = timezone.now()
    existing = set(
        Checklist.objects.filter(query__in=queries.values(), author=author).values_list(
            "query_id", flat=True
        )
    )
    Checklist.objects.bulk_create(
        Checklist(
            query=query,
            author=author,
            status=Checklist.Status.SUBMITTED,
            first_submitted_at=now,
            submitted_at=now,
        )
        for query in queries.values()
        if query.pk not in existing
    )
    checklists = {
        c.query_id: c for c in Checklist.objects.filter(query__in=queries.values(), author=author)
    }
    new: list[Criterion] = []
    for q in questions:
        query = queries[q["Question"]]
        if query.pk in existing:  # its checklist and criteria came with an earlier import
            continue
        checklist = checklists[query.pk]
        statements = [(s, True) for s in q["Must_have"]] + [(s, False) for s in q["Nice_to_have"]]
        new.extend(
            Criterion(
                checklist=checklist,
                position=position,
                text=text.strip(),
                kind=Criterion.Kind.FACT,
                is_core=core,
            )
            for position, (text, core) in enumerate(statements, start=1)
        )
    Criterion.objects.bulk_create(new, batch_size=500)
    result.criteria_created = len(new)
    by_query: dict[int, dict[tuple[str, str], int]] = defaultdict(dict)
    for pk, query_id, text in Criterion.objects.filter(
        checklist__in=checklists.values()
    ).values_list("pk", "checklist__query_id", "text"):
        by_query[query_id]["exact", text] = pk
        by_query[query_id].setdefault(("normalised", normalise(text)), pk)
    return {text: by_query[query.pk] for text, query in queries.items()}


def _answers(
    queries: dict[str, Query], nli: list[dict], result: KqaResult
) -> dict[tuple[str, str], int]:
    """One answer per (question, LLM) of the CSV; the same text repeats on every row."""
    texts: dict[tuple[str, str], str] = {}
    for row in nli:
        key = _find(queries, row["Question"])
        if key is not None:
            texts.setdefault((key, row["llm_x"]), row["answer"])
    systems: dict[str, System] = {}
    ids: dict[tuple[str, str], int] = {}
    for (question, llm), text in texts.items():
        if llm not in systems:
            systems[llm], _ = System.objects.get_or_create(
                name=llm,
                version=SYSTEM_VERSION,
                defaults={"description": f"{llm} as answered in K-QA"},
            )
        answer, made = Answer.objects.update_or_create(
            system=systems[llm],
            query=queries[question],
            run_label=RUN_LABEL,
            defaults={"text": text, "external_id": f"kqa-{llm}-{queries[question].pk}"},
        )
        result.answers_created += made
        result.answers_updated += not made
        ids[question, llm] = answer.pk
    return ids
