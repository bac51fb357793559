"""Text helpers behind the guideline rules: the sentence splitter above all."""

from __future__ import annotations

import pytest

from annotation.validation.text import (
    content_markers,
    first_word,
    jaccard,
    mask_protected,
    normalise,
    split_sentences,
    tokens,
)

ONE_SENTENCE = [
    # decimals and figures
    "States Q3 revenue of $4.12 billion.",
    "Reports a Q3 gross margin of 61.5%, above the 60% guided.",
    "Mentions the new Q4 revenue guidance of $4.3–4.45 billion.",
    "Computes the change from FY2023 to FY2025 as +0.6 percentage points",  # no final period
    # abbreviations
    "Mentions peers (e.g. Apex Systems, Orion Corp. and Delta Ltd.) by name.",
    "Mentions peers, e.g., Apex Systems and Orion.",
    "Defines free cash flow, i.e. operating cash flow minus capex.",
    "Compares Meridian vs. Apex on cloud growth.",
    "States U.S. revenue of $2.1 billion.",
    "Reports revenue of Apex Inc. and Orion Co. for the quarter.",
    "Uses the 10-K of Acme Corp. Ltd. for FY2025.",
    "Cites Note No. 7 of the annual report.",
    "States the approx. 4.1% yield at the query date.",
    "States the est. FY2026 EPS of $3.10.",
    "Covers the period from Jan. 1 to Mar. 31 2026.",
    "Mentions that the store on St. James Street closed.",
    "States revenue for Q3. 2025 was a record.",
    "Mentions the comments of Dr. Mortimer on liability.",
    # initials
    "Mentions J. P. Morgan's upgrade of the stock.",
    "Mentions the J.P. Morgan upgrade.",
    "Cites the report by A. B. Smith.",
    # ellipses, inside quotes and out
    'Quotes the CEO\'s remark "We are not done yet... More to come." in full.',
    "Quotes the CFO: “Demand was strong. Supply was tight.” as the reason.",
    "Mentions that margins rose... Notably in Q3.",
    # URLs and e-mail addresses
    "Cites the filing at https://www.sec.gov/Archives/edgar/data/1234/form10k.htm as the source.",
    "Cites the release at www.apex.example.com/ir/q3.html for the Q3 figures.",
    "Mentions the investor-relations contact ir@apex.example.com for questions.",
    # LaTeX and maths
    r"Computes CAGR as \( (V_1/V_0)^{1/n} - 1 \) for 2021–2025.",
    r"States the formula \[ W = P \Delta V. Q = nC_p \Delta T \] for the process.",
    r"Uses $\frac{a}{b}. X$ as the ratio.",
    r"Computes $$ r = \frac{E. P}{P} $$ as the yield.",
    # questions (the generic preset)
    "Does the response explain the drivers of the Q3 revenue beat?",
    "Does the sentence use archaic words? (e.g., 'Tis' for 'It is')",
    "Does the response convey the same message? (in this case, the importance of recycling)",
    "Does the response derive C(10, 3) = 10! / (3! \\times 7!) = 120?",
    "Does the response capture the public's view on nuclear energy?.",
    # numbered list marker
    "1. States Q3 revenue of $4.12 billion.",
]

TWO_SENTENCES = [
    "States X. Mentions Y.",
    "States Q3 revenue of $4.12 billion. Mentions the margin of 61.5%.",
    "States Q3 revenue of $4.12 billion! Mentions the margin.",
    "Does the response identify the error? The correct value is 54,400 grams.",
    "Are all calculations correct? Note that the final step is not necessary.",
    'Classifies the statement as "Unknown." Mentions the reason.',
    "Reports revenue for Q3. Mentions guidance for Q4.",
    "States revenue of $4.12 billion (up 12%). Explains the drivers.",
]


@pytest.mark.parametrize("text", ONE_SENTENCE)
def test_one_sentence(text: str) -> None:
    assert len(split_sentences(text)) == 1, split_sentences(text)


@pytest.mark.parametrize("text", TWO_SENTENCES)
def test_two_sentences(text: str) -> None:
    assert len(split_sentences(text)) == 2


def test_split_keeps_the_text_of_each_sentence() -> None:
    assert split_sentences("States X. Mentions Y.") == ("States X.", "Mentions Y.")


def test_three_sentences_and_a_question() -> None:
    text = "Does it explain X? It should. This matters."
    assert split_sentences(text) == ("Does it explain X?", "It should.", "This matters.")


def test_empty_text_has_no_sentence() -> None:
    assert split_sentences("   ") == ()


def test_first_word_strips_punctuation_and_list_markers() -> None:
    assert first_word("States revenue.") == "States"
    assert first_word("“States” revenue.") == "States"
    assert first_word("- States revenue.") == "States"
    assert first_word("1. States revenue.") == "States"
    assert first_word("  ") == ""


def test_normalise_ignores_case_whitespace_and_punctuation() -> None:
    assert normalise("States  Q3 revenue of $4.12 billion.") == normalise(
        "states q3 revenue, of $4.12 billion"
    )


def test_normalise_keeps_figures_apart() -> None:
    assert normalise("Q3 revenue of $4.12 billion") != normalise("Q4 revenue of $4.30 billion")
    assert normalise("$4.12") != normalise("$41.2")
    assert normalise("+0.6 points") != normalise("-0.6 points")
    assert normalise("$4.1 billion") != normalise("4.1 billion")


def test_tokens_keep_apostrophes_and_unify_curly_quotes() -> None:
    assert tokens("Meridian\u2019s cloud revenue") == ("meridian's", "cloud", "revenue")


def test_mask_protected_hides_quotes_and_maths_but_keeps_length() -> None:
    text = 'States "A; B" and \\( x; y \\) here; yes.'
    masked = mask_protected(text)
    assert len(masked) == len(text)
    assert masked.count(";") == 1


def test_dollar_amounts_are_not_mistaken_for_maths() -> None:
    text = "States revenue of $4.1 billion and $3.9 billion."
    assert mask_protected(text) == text


def test_content_markers_cover_figures_names_negations_and_quotes() -> None:
    assert content_markers("States Meridian's revenue of $8.2 billion.") != content_markers(
        "States Apex's revenue of $8.2 billion."
    )
    assert content_markers("Describes renewable energy.") != content_markers(
        "Describes non-renewable energy."
    )
    assert content_markers("Includes the term 'conditioned response'.") != content_markers(
        "Includes the term 'unconditioned response'."
    )
    assert content_markers("States the first-order effect.") != content_markers(
        "States the second-order effect."
    )
    # The first word is capitalised because it starts the sentence, not because it is a name.
    assert content_markers("States revenue.") == content_markers("Reports revenue.")


def test_jaccard() -> None:
    assert jaccard(frozenset("ab"), frozenset("ab")) == 1.0
    assert jaccard(frozenset("ab"), frozenset("bc")) == pytest.approx(1 / 3)
    assert jaccard(frozenset(), frozenset()) == 1.0
