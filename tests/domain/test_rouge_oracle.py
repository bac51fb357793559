"""The rouge1 check held against the reference implementation, Google's `rouge-score`
package (the dev extra; a test oracle, never imported by the app): with its default
tokeniser the same tokens and the same F1, to the last bit, on a corpus of accents, digits,
punctuation, other scripts and empty strings, and on generated text. The "unicode" tokeniser
is the app's own and says so: it differs as soon as a word leaves a-z."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation.checks.trajectory import Trajectory, run_check, tokens

rouge_scorer = pytest.importorskip(
    "rouge_score.rouge_scorer", reason="rouge-score (the dev extra's ROUGE oracle) is not installed"
)
from rouge_score import tokenize as reference_tokenize  # noqa: E402

SCORER = rouge_scorer.RougeScorer(["rouge1"])  # no stemmer, the package's default tokeniser


def _fullwidth(word: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) for c in word)  # full-width forms: not a-z


# (answer, reference)
CORPUS = [
    ("Café résumé naïve straße", "Cafe resume naive strasse"),
    ("Revenue was $4.12 billion in FY2026, up 3.5%.", "FY2026 revenue: $4.12bn (+3.5%)"),
    ("Operating margin 7.8% (FY2023) → 9.6% (FY2025)", "margin rose from 7.8% to 9.6%"),
    ("Выручка выросла до 4,12 млрд долларов", "Revenue rose to $4.12 billion"),
    ("营收为41.2亿美元\uff0c同比增长3%", "营收 41.2 亿美元"),
    ("الإيرادات 4.12 مليار دولار", "Revenue 4.12 billion"),
    ("Ελληνικά και English 2026", "english 2026"),
    ("İstanbul, KELVIN \u212a", "istanbul kelvin k"),  # "İ".lower() is "i̇", "K" sign is "k"
    ("ﬁnance ﬂow", "finance flow"),  # ligatures are not a-z
    ("Ⅻ ① ² ٣", "12 1 2 3"),  # numerals outside 0-9
    (" ".join(map(_fullwidth, ["Fullwidth", "ABC"])), "Fullwidth ABC"),
    ("snake_case and kebab-case, O'Neil's", "snake case and kebab case o neil s"),
    ("The the THE tHe", "the"),  # counts clipped
    ("don't stop", "dont stop"),
    ("a\tb\nc\r\nd\u00a0e\u2003f", "a b c d e f"),
    ("", "The reference."),
    ("An answer.", ""),
    ("", ""),
    ("   ", "..."),
    ("!!!", "???"),
    ("   \n", "words here"),
    (
        "Northwind reported Q3 FY2026 revenue of $4.12 billion, above guidance of $4.0 "
        "billion; data-centre demand drove the beat. " * 20,
        "Q3 revenue was $4.12 billion, beating the $4.0 billion guidance on data-centre demand.",
    ),
]


def app_f1(answer: str, reference: str, tokenizer: str | None = None) -> float:
    params = {} if tokenizer is None else {"tokenizer": tokenizer}
    return run_check("rouge1", params, None, Trajectory(text=answer, reference=reference)).score


def package_f1(answer: str, reference: str) -> float:
    return SCORER.score(reference, answer)["rouge1"].fmeasure  # (target, prediction)


@pytest.mark.parametrize(("answer", "reference"), CORPUS)
def test_equal_to_rouge_score_on_the_corpus(answer, reference):
    assert tokens(answer) == reference_tokenize.tokenize(answer, None)
    assert tokens(reference) == reference_tokenize.tokenize(reference, None)
    assert app_f1(answer, reference) == package_f1(answer, reference)
    assert app_f1(answer, reference, "rouge_score") == package_f1(answer, reference)


def test_the_corpus_is_not_trivial():
    # The oracle compares real overlaps, not a row of zeros.
    scores = [package_f1(a, r) for a, r in CORPUS]
    assert sum(0 < s < 1 for s in scores) >= 8 and scores.count(0.0) >= 6


def test_the_unicode_tokenizer_is_the_apps_own():
    answer, reference = "Café résumé straße", "Café resume strasse"
    assert package_f1(answer, reference) == pytest.approx(0.25)  # caf, r, sum, stra, e
    assert app_f1(answer, reference) == package_f1(answer, reference)
    # café and strasse shared: P = R = 2/3.
    assert app_f1(answer, reference, "unicode") == pytest.approx(2 / 3)


_WORDS = st.sampled_from(
    ["revenue", "Revenue", "REVENUE", "4.12", "$4.12bn", "FY2026", "café", "cafe", "straße",
     "выручка", "营收", "دولار", "İ", "\u212a", "x_y", "a-b", "don't", "ﬁ", "²", "", " "]
)  # fmt: skip
_GLUE = st.sampled_from([" ", "  ", "\n", ", ", ".", "-", "_", "/", "\u00a0", "—", "(", ")"])


@st.composite
def texts(draw) -> str:
    """Word-like text from a shared vocabulary (so that answers and references overlap),
    or arbitrary Unicode."""
    if draw(st.booleans()):
        return draw(st.text(max_size=60))
    parts = draw(st.lists(st.tuples(_WORDS, _GLUE), max_size=25))
    return "".join(word + glue for word, glue in parts)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=texts(), reference=texts())
def test_equal_to_rouge_score_on_generated_text(answer, reference):
    assert tokens(answer) == reference_tokenize.tokenize(answer, None)
    assert app_f1(answer, reference) == package_f1(answer, reference)
