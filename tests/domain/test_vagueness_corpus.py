"""The vagueness rules' counts on BiGGen-Bench and K-QA, recomputed from the corpus files and
checked against docs/guidelines.md, so that the page and the code cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from annotation.validation import GENERIC, validate_checklist
from annotation.validation.corpus_report import Corpus, load_corpus, load_kqa

ROOT = Path(__file__).resolve().parents[2]
BIGGEN = ROOT / "evaluation" / "fixtures" / "biggen" / "atomic_checklists.jsonl"
KQA = ROOT / "evaluation" / "fixtures" / "kqa" / "questions_w_answers.jsonl"
DOC = (ROOT / "docs" / "guidelines.md").read_text(encoding="utf-8")
WITH_ANCHORS = GENERIC.with_rule("fact-anchor", enabled=True)


def flagged(corpus: Corpus, rule_id: str) -> list[str]:
    config = WITH_ANCHORS if rule_id == "fact-anchor" else GENERIC
    return [
        finding.criterion_text
        for checklist in corpus.checklists
        for finding in validate_checklist(checklist, config).findings
        if finding.rule_id == rule_id
    ]


@pytest.fixture(scope="module")
def biggen() -> Corpus:
    return load_corpus(BIGGEN)


@pytest.fixture(scope="module")
def kqa() -> Corpus:
    return load_kqa(KQA)


def _row(name: str) -> tuple[int, int, int]:
    """(criteria, vague-wording, fact-anchor) from the counts table of the docs."""
    match = re.search(
        rf"^\| {re.escape(name)} \| (\d+) \| (\d+) \([\d.]+%\) \| (\d+) \([\d.]+%\) \|$",
        DOC,
        re.MULTILINE,
    )
    assert match, f"no counts row for {name} in docs/guidelines.md"
    return int(match[1]), int(match[2]), int(match[3])


def _share_in_docs(name: str, count: int, total: int) -> None:
    assert f"{count} ({count / total:.2%})" in DOC.split(name, 1)[1].split("\n", 1)[0]


@pytest.mark.parametrize(
    ("name", "fixture"),
    [("BiGGen-Bench atomic checklists", "biggen"), ("K-QA statements", "kqa")],
)
def test_the_documented_counts_are_what_the_rules_give(name, fixture, request) -> None:
    corpus: Corpus = request.getfixturevalue(fixture)
    criteria, vague, anchor = _row(name)
    assert corpus.criteria == criteria
    assert len(flagged(corpus, "vague-wording")) == vague
    assert len(flagged(corpus, "fact-anchor")) == anchor
    _share_in_docs(name, vague, criteria)


def test_false_alarms_stay_rare_on_human_criteria(biggen: Corpus, kqa: Corpus) -> None:
    # BiGGen's criteria are careful but often leave the bar open ("a comprehensive
    # understanding"); K-QA's are statements of fact, which the rule must leave alone.
    assert len(flagged(biggen, "vague-wording")) / biggen.criteria < 0.07
    assert len(flagged(kqa, "vague-wording")) / kqa.criteria < 0.005


def test_the_judged_sample_is_the_one_the_rule_flags(biggen: Corpus) -> None:
    texts = flagged(biggen, "vague-wording")
    sample = DOC.split("<!-- vagueness-sample:start -->", 1)[1].split(
        "<!-- vagueness-sample:end -->", 1
    )[0]
    rows = re.findall(r"^\| (\d+) \| (.+?) \| (true|false alarm: .+) \|$", sample, re.MULTILINE)
    assert len(rows) == 30
    step = len(texts) // 30
    assert [int(number) for number, _, _ in rows] == list(range(0, len(texts), step))[:30]
    for number, text, _ in rows:
        shown = text.replace("\\|", "|").rstrip("…")
        assert texts[int(number)].startswith(shown), number
    false_alarms = sum(verdict.startswith("false") for _, _, verdict in rows)
    assert false_alarms == 3
    assert f"{30 - false_alarms} of 30 true" in DOC
