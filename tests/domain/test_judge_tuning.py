"""A judge's tuning as plain Python (evaluation.judges.tuning): its version, what it adds to
the prompt, its validation and the excerpt rule of examples from adjudications."""

from __future__ import annotations

import datetime as dt

from evaluation.judges import tuning
from evaluation.judging import prompts

EXAMPLE = {"criterion": "States revenue.", "excerpt": "Revenue was $4B.", "decision": "pass",
           "reason": "Stated."}  # fmt: skip


def test_an_untuned_judge_keeps_its_version_and_prompt():
    assert tuning.version("verdict-v1", "", []) == "verdict-v1"
    assert tuning.version("verdict-v1", "  \n", []) == "verdict-v1"
    assert tuning.system_addition("", []) == ""
    plain = prompts.messages(query="Q", query_date=dt.date(2025, 1, 2), answer="A", criterion="C")
    tuned_none = prompts.messages(
        query="Q", query_date=dt.date(2025, 1, 2), answer="A", criterion="C", tuning=""
    )
    assert plain == tuned_none
    assert plain[0]["content"] == prompts.SYSTEM


def test_the_version_is_a_digest_of_the_whole_tuning():
    one = tuning.version("verdict-v1", "Be exact.", [EXAMPLE])
    assert one == tuning.version("verdict-v1", "Be exact.", [dict(reversed(EXAMPLE.items()))])
    assert one.startswith("verdict-v1+tuned-") and len(one.rsplit("-", 1)[1]) == 12
    assert one != tuning.version("verdict-v1", "Be exact!", [EXAMPLE])
    assert one != tuning.version("verdict-v1", "Be exact.", [{**EXAMPLE, "decision": "fail"}])
    assert one != tuning.version("verdict-v1", "Be exact.", [EXAMPLE, EXAMPLE])
    # The judge's part of a recorded version, its variants left out.
    assert tuning.judge_version(f"{one}+conversation-v1+context-v1") == one
    assert tuning.judge_version("verdict-v1+context-v1") == "verdict-v1"


def test_the_tuning_follows_the_system_text_instructions_first():
    messages = prompts.messages(
        query="Q", query_date=dt.date(2025, 1, 2), answer="A", criterion="C",
        tuning=tuning.system_addition("Be exact.", [EXAMPLE]),
    )  # fmt: skip
    system = messages[0]["content"]
    assert system.startswith(prompts.SYSTEM + "\n\n" + tuning.INSTRUCTIONS_TITLE + "\nBe exact.")
    assert system.endswith(
        "Example 1\nCriterion: States revenue.\nAnswer excerpt: Revenue was $4B.\n"
        "Decision: pass\nReason: Stated."
    )
    assert messages[1]["content"].endswith("Criterion: C")


def test_validation_names_the_example_and_the_field():
    assert tuning.examples_problems([EXAMPLE]) == []
    assert tuning.examples_problems("x") == [
        "Examples must be a list of objects (criterion, excerpt, decision, reason)."
    ]
    problems = tuning.examples_problems(
        [EXAMPLE, 3, {**EXAMPLE, "excerpt": "x" * (tuning.MAX_EXCERPT + 1), "decision": "yes"}]
    )
    assert problems == [
        "Example 2: must be an object with criterion, excerpt, decision and reason.",
        f"Example 3: excerpt holds {tuning.MAX_EXCERPT + 1:,} characters; at most "
        f"{tuning.MAX_EXCERPT:,}.",
        'Example 3: decision must be "pass" or "fail".',
    ]
    big = [{**EXAMPLE, "excerpt": "x" * tuning.MAX_EXCERPT}] * 10
    assert tuning.examples_problems(big)[0].startswith("The examples take")
    assert tuning.instructions_problems("x" * tuning.MAX_INSTRUCTIONS) == []
    assert tuning.instructions_problems(4) == ["Instructions must be text."]


def test_the_excerpt_is_the_answer_or_the_window_the_reason_quotes():
    assert tuning.excerpt(" Short answer. ", criterion="C") == "Short answer."
    answer = "Filler words here. " * 200 + "Gross margin was 61.5% in Q3. " + "More filler. " * 200
    quoted = tuning.excerpt(answer, criterion="Reports the margin.",
                           reason='It says "Gross margin was 61.5% in Q3".', limit=300)  # fmt: skip
    assert "Gross margin was 61.5% in Q3." in quoted and len(quoted) <= 300
    assert quoted.startswith("[…] ") and quoted.endswith(" […]")
    matched = tuning.excerpt(answer, criterion="Reports the Q3 gross margin.", limit=300)
    assert "Gross margin was 61.5%" in matched
    start = tuning.excerpt("Gross margin 61.5%. " + "x " * 500, criterion="gross margin", limit=100)
    assert start.startswith("Gross margin") and start.endswith(" […]")


def test_example_items_are_the_sources_once_each():
    source = {"adjudication": 1, "answer": 2, "criterion": 3}
    examples = [EXAMPLE, {**EXAMPLE, "source": source}, {**EXAMPLE, "source": source}]
    assert tuning.example_items(examples) == [[2, 3]]
