"""The vague-wording and fact-anchor rules, their override and the numbered messages."""

from __future__ import annotations

import pytest

from annotation.validation import FINANCE, GENERIC, validate_checklist, validate_criterion
from annotation.validation import vagueness as vz
from annotation.validation.types import ChecklistInput, CriterionInput

VERBS = FINANCE.action_verbs


def fact(text: str, notes: str = "", key: str = "c1") -> CriterionInput:
    return CriterionInput(key=key, text=text, kind="fact", source_types=("filings",), notes=notes)


def fired(criterion: CriterionInput, config=FINANCE) -> dict[str, str]:
    return {f.rule_id: f.message for f in validate_criterion(criterion, config).findings}


# The examples, and vague criteria in the house style.
VAGUE = {
    "Provides a good and comprehensive overview of the relevant information.": (
        "good", "comprehensive", "relevant",
    ),
    "States some details about sales as appropriate.": ("some details", "as appropriate"),
    "Good answer.": ("Good",),
    "Explains the relevant risks of the Q3 FY2026 guidance.": ("relevant",),
    "Lists various risk factors of Apple etc.": ("various", "etc."),
    "Mentions several reasons for the 2025 margin decline.": ("several",),
    "Discusses Q3 revenue trends where appropriate.": ("where appropriate",),
    "Adequately explains the dividend policy of Apple.": ("Adequately",),
    "Does the response provide a thorough analysis of Apple's 2025 results?": ("thorough",),
}  # fmt: skip


@pytest.mark.parametrize(("text", "terms"), VAGUE.items())
def test_vague_words_are_found(text: str, terms: tuple[str, ...]) -> None:
    assert vz.vague_terms(text, VERBS) == terms


PRECISE = [
    "States Q3 revenue of $4.12 billion.",
    "States that the CEO called the plan “comprehensive”.",  # quoted: the answer's words
    'Mentions the "relevant period" as defined in the 10-K.',
    "States that management called the guidance comprehensive.",  # what was said
    "Names the Comprehensive Metabolic Panel (CMP).",  # a name, not a judgement
    "Lists various drug classes such as SSRIs, SNRIs and MAOIs.",  # the items follow
    "Explains the risks relevant to Apple's China revenue in FY2025.",  # names its yardstick
    "Compares Model A's comprehensive breakdown with Model B's summary.",  # named work
    "States that Apple acted in good faith.",  # fixed phrase
    # A statement of fact (K-QA style) describes the world: its "good" is the fact.
    "Metformin is considered a good first-line medication for type 2 diabetes.",
    "Meningitis can be caused by several types of fungi.",
]


@pytest.mark.parametrize("text", PRECISE)
def test_precise_criteria_pass(text: str) -> None:
    assert vz.vague_terms(text, VERBS) == ()


def test_vague_wording_is_an_error_naming_the_words_and_the_override() -> None:
    [finding] = validate_criterion(
        fact("Provides a good overview of Apple's Q3 FY2026 results."), FINANCE
    ).findings
    assert (finding.rule_id, finding.severity) == ("vague-wording", "error")
    assert "“good”" in finding.message
    assert "override vague-wording:" in finding.message


def test_a_justified_override_in_the_notes_silences_the_rule() -> None:
    text = "States whether Apple's Q3 cash position is sufficient for the buyback."
    assert "vague-wording" in fired(fact(text))
    notes = "Source: 10-K.\noverride vague-wording: sufficient is defined by the covenant test"
    assert "vague-wording" not in fired(fact(text, notes=notes))


@pytest.mark.parametrize(
    "notes",
    ["override vague-wording:", "override vague-wording: fine", "Override vague-wording: ok ok"],
)
def test_an_override_without_a_justification_is_refused(notes: str) -> None:
    findings = validate_criterion(
        fact("Provides a good overview of Apple's Q3 results.", notes=notes), FINANCE
    ).findings
    [finding] = findings
    assert (finding.rule_id, finding.severity, finding.field) == ("vague-wording", "error", "notes")
    assert "Justify the override" in finding.message and "at least 3 words" in finding.message


def test_an_override_of_another_rule_does_not_count() -> None:
    notes = "override fact-anchor: the whole checklist is about one filing"
    assert "vague-wording" in fired(fact("Provides a good overview of Apple's 2025.", notes=notes))


def test_fact_anchor_needs_a_figure_date_name_or_quoted_term() -> None:
    assert "fact-anchor" in fired(fact("Explains that demand drove the revenue beat."))
    for anchored in (
        "Explains that demand drove the Q3 revenue beat.",  # a figure / period
        "Explains that demand drove the beat in March.",  # a date
        "Explains that Nvidia's demand drove the beat.",  # a named entity
        "Explains that demand drove the “beat”.",  # a quoted term
        "Explains that demand from the EU drove the beat.",  # an acronym
    ):
        assert "fact-anchor" not in fired(fact(anchored)), anchored


def test_fact_anchor_is_for_fact_criteria_and_can_be_overridden() -> None:
    loose = "Explains that demand drove the revenue beat."
    methodology = CriterionInput(key="m", text="Uses the earnings call.", kind="methodology")
    assert "fact-anchor" not in fired(methodology)
    notes = "override fact-anchor: the query names the company and quarter already"
    assert "fact-anchor" not in fired(fact(loose, notes=notes))


def test_generic_switches_fact_anchor_off_but_keeps_vague_wording() -> None:
    loose = fact("Does the response explain why demand rose?")
    assert "fact-anchor" not in fired(loose, GENERIC)
    assert "vague-wording" in fired(fact("Does the response give a good summary?"), GENERIC)
    assert "vague-wording" not in fired(
        fact("Provides a good overview."), FINANCE.with_rule("vague-wording", enabled=False)
    )


def test_messages_name_the_criterion_by_number_and_text() -> None:
    criteria = (
        CriterionInput(key="41", text="Uses the Q3 FY2026 call.", kind="methodology"),
        fact("States Q3 revenue of $4.12 billion.", key="57"),
        fact("Provides a good overview of Apple's Q3.", key="60"),
        fact("States Q3 revenue of $4.12 billion.", key="73"),
    )
    report = validate_checklist(ChecklistInput(criteria=criteria), FINANCE)
    vague = next(f for f in report.findings if f.rule_id == "vague-wording")
    assert (vague.criterion_number, vague.criterion_key) == (3, "60")
    assert vague.criterion_label == "Criterion 3 (“Provides a good overview of Apple's Q3.”)"
    duplicate = next(f for f in report.findings if f.rule_id == "duplicate")
    assert duplicate.criterion_number == 4
    assert "repeats criterion 2 (“States Q3 revenue of $4.12 billion.”)" in duplicate.message
    assert "57" not in duplicate.message  # never a database id
    assert duplicate.to_dict()["criterion_number"] == 4
    checklist_level = [f for f in report.findings if f.criterion_key is None]
    assert all(f.criterion_number is None and f.criterion_label == "" for f in checklist_level)
