"""The guideline rules, one by one, on realistic finance criteria (FINANCE preset)."""

from __future__ import annotations

from datetime import date

import pytest

from annotation.validation import (
    FINANCE,
    GENERIC,
    RULES,
    ChecklistInput,
    CitationInput,
    CriterionInput,
    GuidelineConfig,
    validate_checklist,
    validate_criterion,
)

QUERY_DATE = date(2026, 10, 30)


def fact(text: str, key: str = "c1", **kwargs: object) -> CriterionInput:
    kwargs.setdefault("source_types", ("earnings-call-transcript",))
    return CriterionInput(key=key, text=text, kind="fact", **kwargs)  # type: ignore[arg-type]


def fired(
    criterion: CriterionInput, config: GuidelineConfig = FINANCE, **kwargs: object
) -> set[str]:
    report = validate_criterion(criterion, config, **kwargs)  # type: ignore[arg-type]
    return set(report.rule_ids)


def checklist(*texts: str, methodology: bool = True) -> ChecklistInput:
    criteria = [fact(text, key=f"c{index}") for index, text in enumerate(texts, start=1)]
    if methodology:
        criteria.insert(
            0,
            CriterionInput(
                key="m", text="Uses the Q3 FY2026 earnings call as the source.", kind="methodology"
            ),
        )
    return ChecklistInput(criteria=tuple(criteria), query_date=QUERY_DATE)


GOOD = [
    "States Q3 revenue of $4.12 billion.",
    "Reports a Q3 gross margin of 61.5%, above the 60% guided.",
    "Mentions the new Q4 revenue guidance of $4.3–4.45 billion.",
    "Explains that data-centre demand drove the Q3 revenue beat.",
    "Mentions the CFO's comment that inventory days fell to 98.",
    "States that Q3 revenue exceeded the top of the $3.9–4.0 billion guidance range.",
    "States the quarterly dividend was raised from $0.48 to $0.52 per share in February 2026.",
    "Computes the change from FY2023 to FY2025 as +0.6 percentage points.",
    "Compares Q3 revenue and margin with guidance.",
    "Presents revenue, margin and EPS in a table.",
    "Breaks down revenue by segment (data centre, PC, auto) for Q3 FY2026.",
    "Mentions peers, e.g. Apex Systems and Orion Corp., by name.",
]


@pytest.mark.parametrize("text", GOOD)
def test_careful_finance_criteria_pass_every_criterion_rule(text: str) -> None:
    assert fired(fact(text), query_date=QUERY_DATE) == set()


def test_every_rule_is_listed_with_its_metadata() -> None:
    ids = [info.id for info in RULES]
    assert ids == [
        "text-empty",
        "text-too-long",
        "action-verb",
        "single-sentence",
        "compound",
        "fact-source-type",
        "banned-source-type",
        "citation-after-query-date",
        "citation-missing-date",
        "vague-reference",
        "vague-wording",
        "fact-anchor",
        "criterion-in-group",
        "penalty-wording",
        "methodology-required",
        "min-criteria",
        "max-criteria",
        "duplicate",
        "near-duplicate",
    ]
    assert all(info.title and info.default_severity in ("error", "warning") for info in RULES)


# --- text-empty / text-too-long ----------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_text_empty_fails(text: str) -> None:
    report = validate_criterion(fact(text, source_types=()), FINANCE)
    assert report.rule_ids == {"text-empty"}  # no other rule piles on an empty field
    assert report.errors[0].field == "text"


def test_text_too_long() -> None:
    ok = "States Q3 revenue of $4.12 billion" + " in the quarter" * 17 + "."
    too_long = "States Q3 revenue of $4.12 billion" + " in the quarter" * 18 + "."
    assert len(ok) <= 300 < len(too_long)
    assert "text-too-long" not in fired(fact(ok))
    report = validate_criterion(fact(too_long), FINANCE)
    [finding] = [f for f in report.findings if f.rule_id == "text-too-long"]
    assert "300" in finding.message and str(len(too_long)) in finding.message


# --- action-verb ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "States Q3 revenue of $4.12 billion.",
        "states Q3 revenue of $4.12 billion.",  # case-insensitive
        "“Provides” the Q3 revenue.",  # punctuation stripped
        "Summarizes the Q3 call.",
        "Summarises the Q3 call.",
        "Breaks down revenue by segment.",
    ],
)
def test_action_verb_passes(text: str) -> None:
    assert "action-verb" not in fired(fact(text))


def test_action_verb_fails_and_names_the_word() -> None:
    report = validate_criterion(fact("The Q3 revenue was $4.12 billion."), FINANCE)
    [finding] = report.findings
    assert finding.rule_id == "action-verb" and finding.severity == "error"
    assert finding.message == (
        "Start with an action verb such as “States”, “Provides” or “Includes”; "
        "this criterion starts with “The”."
    )


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [
        ("Provide the Q3 revenue.", "Provides"),
        ("Identified the main risk.", "Identifies"),
        ("Used the 10-K as the source.", "Uses"),
        ("Discuss the guidance.", "Discusses"),
    ],
)
def test_action_verb_suggests_the_third_person(text: str, suggestion: str) -> None:
    [finding] = [
        f for f in validate_criterion(fact(text), FINANCE).findings if f.rule_id == "action-verb"
    ]
    assert f"Did you mean “{suggestion}”?" in finding.message


# --- single-sentence -----------------------------------------------------------------------------


def test_single_sentence_passes_with_decimals_and_abbreviations() -> None:
    text = "States U.S. revenue of $4.12 billion, approx. 61.5% of the total, vs. $3.9 billion."
    assert "single-sentence" not in fired(fact(text))


def test_single_sentence_fails_on_two_sentences() -> None:
    report = validate_criterion(fact("States X. Mentions Y."), FINANCE)
    [finding] = [f for f in report.findings if f.rule_id != "fact-anchor"]
    assert finding.rule_id == "single-sentence" and finding.severity == "error"
    assert "has 2" in finding.message and "“Mentions Y.”" in finding.message


# --- compound ------------------------------------------------------------------------------------

COMPOUND = [
    "States revenue of $4.1bn and mentions the margin of 61%.",
    "States the dividend and explains why it was raised.",
    "States Q3 revenue of $4.12 billion as well as mentions the 61.5% margin.",
    "Mentions the patent expiry of Solavex in 2028; also notes the FDA decision.",
    "Mentions the patent expiry in 2028; the FDA decision is pending.",
    "States Q3 revenue of $4.12 billion, gross margin of 61.5% and EPS of $1.20.",
    "Explains that demand drove the beat and that margins expanded.",
    "Lists the segments, details the revenue of each.",
    "Uses the notes and states the tax rate.",
]

NOT_COMPOUND = [
    # Noun-phrase conjunctions: one comparison or one presentation, documented as passing.
    "Compares revenue and margin with guidance.",
    "Presents revenue, margin and EPS in a table.",
    "Mentions pricing pressure from the US drug price negotiation programme.",
    # "estimates" and "limits" are nouns here.
    "Compares the revenue and estimates for FY2026.",
    "Mentions the risks and limits of the buyback programme.",
    # Two verbs sharing one object check one thing.
    "Compares and contrasts the two segments' margins.",
    "Identifies and quantifies the main risk to margins.",
    "Accurately and clearly describes the dividend policy.",
    # A range is one figure; a list after a colon is not two clauses.
    "Reports revenue between $3.9 and $4.0 billion, above consensus of $3.85 billion.",
    "Lists the risks: patent expiry; FDA decision; pricing pressure.",
    # "and that of" is a pronoun, not a second claim.
    "Compares Meridian's cloud growth and that of Apex.",
]


@pytest.mark.parametrize("text", COMPOUND)
def test_compound_warns(text: str) -> None:
    report = validate_criterion(fact(text), FINANCE)
    [finding] = [f for f in report.findings if f.rule_id == "compound"]
    assert finding.severity == "warning"
    assert finding.message.startswith("Split this into one criterion per")


@pytest.mark.parametrize("text", NOT_COMPOUND)
def test_compound_stays_quiet_on_single_claims(text: str) -> None:
    assert "compound" not in fired(fact(text))


def test_compound_names_the_join() -> None:
    report = validate_criterion(fact("States revenue of $4.1bn and mentions the margin."), FINANCE)
    assert "(“States” … “and mentions”)" in report.warnings[0].message


def test_compound_on_generic_questions() -> None:
    question = fact("Does the response explain the beat and mention the new guidance?")
    assert "compound" in fired(question, GENERIC)
    assert "compound" not in fired(fact("Does the response explain the revenue beat?"), GENERIC)


# --- fact-source-type ----------------------------------------------------------------------------


def test_fact_source_type() -> None:
    assert "fact-source-type" not in fired(fact("States Q3 revenue of $4.12 billion."))
    untagged = fact("States Q3 revenue of $4.12 billion.", source_types=())
    [finding] = validate_criterion(untagged, FINANCE).findings
    assert finding.rule_id == "fact-source-type" and finding.field == "source_types"


def test_fact_source_type_suggests_the_citations_types() -> None:
    citation = CitationInput("Q3 call", source_type="earnings-call-transcript")
    untagged = fact("States Q3 revenue.", source_types=(" ",), citations=(citation,))
    report = validate_criterion(untagged, FINANCE)
    [finding] = [f for f in report.findings if f.rule_id == "fact-source-type"]
    assert "Its citations suggest “earnings-call-transcript”." in finding.message


def test_fact_source_type_ignores_methodology_and_format() -> None:
    for kind in ("methodology", "format"):
        criterion = CriterionInput("c1", "Presents the margins in a table.", kind)
        assert "fact-source-type" not in fired(criterion)


# --- banned-source-type --------------------------------------------------------------------------


def test_banned_source_type_on_the_criterion_and_on_a_citation() -> None:
    criterion = fact(
        "States Q3 revenue of $4.12 billion.",
        source_types=("filings", "AI-Tools"),
        citations=(
            CitationInput("10-Q", source_type="filings", published_on=date(2026, 10, 28)),
            CitationInput("Chatbot answer", source_type="ai-tools", published_on=date(2026, 10, 1)),
        ),
    )
    report = validate_criterion(criterion, FINANCE, query_date=QUERY_DATE)
    assert [(f.rule_id, f.field) for f in report.findings] == [
        ("banned-source-type", "source_types[1]"),
        ("banned-source-type", "citations[1].source_type"),
    ]
    assert "“Chatbot answer”" in report.findings[1].message


def test_allowed_source_types_pass() -> None:
    criterion = fact("States Q3 revenue.", source_types=("filings", "consensus-data"))
    assert "banned-source-type" not in fired(criterion)


# --- citation-after-query-date / citation-missing-date -------------------------------------------


def test_citation_after_query_date() -> None:
    citations = (
        CitationInput("Q3 call transcript", published_on=date(2026, 10, 28)),
        CitationInput("Q3 call transcript", published_on=QUERY_DATE),  # on the day is fine
        CitationInput("Q4 preview", published_on=date(2026, 11, 2)),
    )
    report = validate_criterion(
        fact("States Q3 revenue.", citations=citations), FINANCE, query_date=QUERY_DATE
    )
    [finding] = report.findings
    assert finding.rule_id == "citation-after-query-date"
    assert finding.field == "citations[2].published_on"
    assert "2026-11-02" in finding.message and "2026-10-30" in finding.message


def test_citation_after_query_date_is_skipped_without_dates() -> None:
    late = (CitationInput("Q4 preview", published_on=date(2026, 11, 2)),)
    assert "citation-after-query-date" not in fired(fact("States Q3 revenue.", citations=late))


def test_citation_missing_date_warns() -> None:
    undated = (CitationInput("Q3 call transcript"),)
    report = validate_criterion(
        fact("States Q3 revenue.", citations=undated), FINANCE, query_date=QUERY_DATE
    )
    [finding] = report.findings
    assert (finding.rule_id, finding.severity) == ("citation-missing-date", "warning")
    assert finding.field == "citations[0].published_on"


# --- vague-reference -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "States the revenue shown in the table.",
        "Mentions the margin as mentioned above.",
        "States this company's Q3 revenue.",
        "Uses the figures from the document provided.",
        "Repeats the above figures for Q4.",
        "Mentions the risks in the aforementioned filing.",
    ],
)
def test_vague_reference_warns(text: str) -> None:
    report = validate_criterion(fact(text), FINANCE)
    assert [f.rule_id for f in report.warnings] == ["vague-reference"]


@pytest.mark.parametrize(
    "text",
    [
        "Presents guidance versus actuals in a table.",
        "Uses the risk factors section of the 2025 annual report.",
        "States the company's Q3 revenue of $4.12 billion.",
        "Mentions the margin as stated in the Q3 10-Q.",
        "Uses the table of segment revenue in the 10-K.",
        "Compares the margin with the prior year.",
    ],
)
def test_vague_reference_passes(text: str) -> None:
    assert "vague-reference" not in fired(fact(text))


# --- checklist scope -----------------------------------------------------------------------------

FIVE = (
    "States Q3 revenue of $4.12 billion.",
    "Reports a Q3 gross margin of 61.5%.",
    "Mentions the new Q4 revenue guidance of $4.3–4.45 billion.",
    "Explains that data-centre demand drove the Q3 revenue beat.",
)


def test_good_checklist_has_no_findings() -> None:
    report = validate_checklist(checklist(*FIVE), FINANCE)
    assert report.findings == ()
    assert not report.blocking


def test_methodology_required() -> None:
    report = validate_checklist(
        checklist(*FIVE, "Highlights the Q3 margins.", methodology=False), FINANCE
    )
    [finding] = report.findings
    assert finding.rule_id == "methodology-required"
    assert finding.criterion_key is None and finding.field == "criteria"


def test_min_criteria() -> None:
    report = validate_checklist(checklist(*FIVE[:3]), FINANCE)
    [finding] = report.findings
    assert finding.rule_id == "min-criteria" and finding.severity == "error"
    assert "at least 5 and has 4" in finding.message


def test_min_criteria_ignores_blank_rows() -> None:
    report = validate_checklist(checklist(*FIVE[:3], "  "), FINANCE)
    assert {f.rule_id for f in report.findings} == {"text-empty", "min-criteria"}


def test_max_criteria_warns() -> None:
    many = [f"States the revenue of segment {n} in Q3 FY2026." for n in range(60)]
    report = validate_checklist(checklist(*many), FINANCE)
    [finding] = report.findings
    assert (finding.rule_id, finding.severity) == ("max-criteria", "warning")
    assert "it has 61" in finding.message
    assert not validate_checklist(checklist(*many[:59]), FINANCE).findings


def test_duplicate_is_reported_on_the_later_criterion() -> None:
    report = validate_checklist(checklist(*FIVE, "states q3 revenue of $4.12 billion"), FINANCE)
    [finding] = report.findings
    assert finding.rule_id == "duplicate" and finding.severity == "error"
    # Named by row number and text (the methodology criterion is row 1), never by key.
    assert finding.criterion_key == "c5" and finding.criterion_number == 6
    assert "repeats criterion 2 (“States Q3 revenue of $4.12 billion.”)" in finding.message
    assert finding.criterion_label == "Criterion 6 (“states q3 revenue of $4.12 billion”)"


def test_different_figures_are_not_duplicates() -> None:
    report = validate_checklist(
        checklist(
            *FIVE, "States Q4 revenue of $4.30 billion.", "States Q3 revenue of $41.2 billion."
        ),
        FINANCE,
    )
    assert report.findings == ()


def test_near_duplicate_names_the_earlier_criterion() -> None:
    report = validate_checklist(checklist(*FIVE, "Reports the Q3 gross margin of 61.5%"), FINANCE)
    [finding] = report.findings
    assert (finding.rule_id, finding.severity) == ("near-duplicate", "warning")
    assert finding.criterion_key == "c5" and "criterion 3 (“Reports a Q3 gross" in finding.message


def test_near_duplicate_is_suppressed_by_different_figures_and_names() -> None:
    report = validate_checklist(
        checklist(
            *FIVE,
            "States Q4 revenue of $4.30 billion.",
            "States Meridian's cloud revenue grew 24% year over year.",
            "States Apex's cloud revenue grew 24% year over year.",
            "States the FY2023 operating margin of 7.8%.",
            "States the FY2025 operating margin of 8.4%.",
        ),
        FINANCE,
    )
    assert report.findings == ()


def test_findings_come_in_checklist_order_then_checklist_level() -> None:
    report = validate_checklist(
        checklist(
            "The revenue was $4.12 billion.",
            "States Q3 revenue. Mentions margin.",
            methodology=False,
        ),
        FINANCE,
    )
    assert [(f.criterion_key, f.rule_id) for f in report.findings] == [
        ("c1", "action-verb"),
        ("c2", "single-sentence"),
        (None, "methodology-required"),
        (None, "min-criteria"),
    ]
    assert [f.rule_id for f in report.for_criterion("c2")] == ["single-sentence"]
    assert len(report.checklist_level) == 2


# --- criterion-in-group / penalty-wording (issue 23) -------------------------------------------


def test_criterion_in_group_is_off_unless_switched_on() -> None:
    loose = fact("States Q3 revenue of $4.12 billion.", in_group=False)
    assert "criterion-in-group" not in validate_criterion(loose, FINANCE).rule_ids
    strict = FINANCE.with_rule("criterion-in-group", enabled=True)
    report = validate_criterion(loose, strict)
    assert report.rule_ids == {"criterion-in-group"} and report.errors
    grouped = fact("States Q3 revenue of $4.12 billion.", in_group=True)
    unknown = fact("States Q3 revenue of $4.12 billion.")  # a payload that does not say
    assert not validate_criterion(grouped, strict).rule_ids
    assert not validate_criterion(unknown, strict).rule_ids


@pytest.mark.parametrize(
    "text",
    [
        "Does not recommend a drug the patient is allergic to.",
        "Doesn't state a figure from after the query date.",
        "Avoids speculative price targets.",
        "Never mentions the unaudited figures.",
        "Is not vague about the guidance.",
    ],
)
def test_a_penalty_worded_as_an_avoidance_is_flagged(text: str) -> None:
    report = validate_criterion(
        fact(text, weight=-2), FINANCE.with_rule("action-verb", enabled=False)
    )
    findings = [f for f in report.findings if f.rule_id == "penalty-wording"]
    assert len(findings) == 1 and findings[0].severity == "warning"
    assert "punishes the good answers" in findings[0].message


@pytest.mark.parametrize(
    "text",
    ["Recommends a drug the patient is allergic to.", "States a revenue figure from 2027.",
     "Omits the boxed warning.", "Notes a guidance figure that was never given."],
)  # fmt: skip
def test_a_penalty_describing_the_bad_behaviour_passes(text: str) -> None:
    assert "penalty-wording" not in validate_criterion(fact(text, weight=-1), FINANCE).rule_ids


def test_a_positive_criterion_may_say_does_not() -> None:
    text = "Does not exceed one page."
    assert "penalty-wording" not in validate_criterion(fact(text, weight=1), FINANCE).rule_ids
