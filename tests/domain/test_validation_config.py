"""GuidelineConfig (JSON round trip, rejection of bad values), presets, Report, cost."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from annotation.validation import (
    FINANCE,
    GENERIC,
    ChecklistInput,
    CitationInput,
    CriterionInput,
    Finding,
    GuidelineConfig,
    Report,
    RuleSetting,
    describe_rules,
    preset,
    validate_checklist,
    validate_criterion,
)

ROOT = Path(__file__).resolve().parents[2]


def test_round_trip_through_json() -> None:
    for config in (FINANCE, GENERIC, FINANCE.with_rule("compound", severity="error")):
        stored = json.loads(json.dumps(config.to_dict()))
        assert GuidelineConfig.from_dict(stored) == config


def test_to_dict_shape() -> None:
    data = GENERIC.to_dict()
    assert list(data) == [
        "action_verbs",
        "banned_source_types",
        "min_criteria",
        "max_criteria",
        "max_length",
        "near_duplicate_threshold",
        "rules",
    ]
    assert data["action_verbs"] == sorted(data["action_verbs"])
    assert data["rules"]["action-verb"] == {"enabled": False, "severity": None}
    assert "compound" not in data["rules"]  # unmentioned rules run with their defaults


def test_from_dict_with_a_base_overrides_one_rule() -> None:
    config = GuidelineConfig.from_dict(
        {"max_length": 250, "rules": {"compound": {"severity": "error"}}}, base=GENERIC
    )
    assert config.max_length == 250
    assert config.setting("compound") == RuleSetting(enabled=True, severity="error")
    assert not config.setting("action-verb").enabled  # kept from the base


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"rules": {"compund": {"enabled": False}}}, "rules.compund: unknown rule id"),
        ({"rules": {"compound": {"severity": "fatal"}}}, "rules.compound.severity"),
        ({"rules": {"compound": {"enabled": "no"}}}, "rules.compound.enabled"),
        ({"rules": {"compound": {"enbled": False}}}, "rules.compound.enbled: unknown key"),
        ({"rules": {"compound": False}}, "rules.compound: expected an object"),
        ({"rules": []}, "rules: expected an object"),
        ({"min_criteria": 0}, "min_criteria"),
        ({"min_criteria": True}, "min_criteria"),
        ({"max_criteria": 3}, "max_criteria: must be at least min_criteria (5)"),
        ({"max_length": "300"}, "max_length"),
        ({"near_duplicate_threshold": 1.5}, "near_duplicate_threshold"),
        ({"near_duplicate_threshold": 0}, "near_duplicate_threshold"),
        ({"action_verbs": "states"}, "action_verbs: expected a list"),
        ({"action_verbs": []}, "action_verbs: must list"),
        ({"action_verbs": ["breaks down"]}, "action_verbs: each entry must be one word"),
        ({"banned_source_types": [1]}, "banned_source_types"),
        ({"colour": "blue"}, "colour: unknown key"),
    ],
)
def test_from_dict_rejects_bad_values_naming_the_field(change: dict, field: str) -> None:
    data = {**FINANCE.to_dict(), **change}
    with pytest.raises(ValueError, match=re.escape(field)):
        GuidelineConfig.from_dict(data)


def test_from_dict_without_base_requires_every_field() -> None:
    data = FINANCE.to_dict()
    del data["max_length"]
    with pytest.raises(ValueError, match="max_length: missing"):
        GuidelineConfig.from_dict(data)


def test_constructor_rejects_unknown_rule_ids_too() -> None:
    with pytest.raises(ValueError, match=r"rules\.nope: unknown rule id"):
        GuidelineConfig(
            action_verbs=frozenset({"states"}),
            banned_source_types=frozenset(),
            min_criteria=1,
            max_criteria=2,
            max_length=10,
            near_duplicate_threshold=0.5,
            rules={"nope": RuleSetting()},
        )


def test_verbs_and_source_types_are_case_folded() -> None:
    config = GuidelineConfig.from_dict(
        {"action_verbs": ["States"], "banned_source_types": [" AI-Tools "]}, base=FINANCE
    )
    assert config.action_verbs == frozenset({"states"})
    assert config.banned_source_types == frozenset({"ai-tools"})


def test_config_is_immutable_and_hashable() -> None:
    with pytest.raises(TypeError):
        FINANCE.rules["compound"] = RuleSetting(enabled=False)  # type: ignore[index]
    copy = GuidelineConfig.from_dict(FINANCE.to_dict())
    assert hash(copy) == hash(FINANCE)
    assert len({FINANCE, copy, GENERIC}) == 2


def test_the_package_does_not_import_django() -> None:
    # A fresh interpreter: in this one pytest-django may already have imported Django.
    code = (
        "import sys, annotation.validation, annotation.validation.corpus_report; "
        "sys.exit(any(name.split('.')[0] == 'django' for name in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False)
    assert result.returncode == 0


def test_disabling_a_rule() -> None:
    criterion = CriterionInput("c1", "The revenue was $4.12 billion.", "fact", ("filings",))
    assert validate_criterion(criterion, FINANCE).rule_ids == {"action-verb"}
    quiet = FINANCE.with_rule("action-verb", enabled=False)
    assert validate_criterion(criterion, quiet).findings == ()


def test_overriding_a_severity() -> None:
    criterion = CriterionInput(
        "c1", "States revenue of $4.1bn and mentions the margin.", "fact", ("filings",)
    )
    assert not validate_criterion(criterion, FINANCE).blocking
    strict = GuidelineConfig.from_dict({"rules": {"compound": {"severity": "error"}}}, base=FINANCE)
    report = validate_criterion(criterion, strict)
    assert [(f.rule_id, f.severity) for f in report.findings] == [("compound", "error")]
    assert report.blocking
    lenient = FINANCE.with_rule("action-verb", severity="warning")
    bad_verb = CriterionInput("c1", "The Q3 revenue.", "fact", ("filings",))
    assert not validate_criterion(bad_verb, lenient).blocking


def test_report_blocking_only_with_errors() -> None:
    warning = Finding("compound", "warning", "Split it.", "c1", "text")
    error = Finding("action-verb", "error", "Start with a verb.", "c2", "text")
    assert not Report(()).blocking
    assert not Report((warning,)).blocking
    assert Report((warning, error)).blocking
    report = Report((warning, error))
    assert report.errors == (error,) and report.warnings == (warning,)
    assert report.to_dict()["blocking"] is True
    assert report.to_dict()["findings"][0]["rule_id"] == "compound"


def test_presets() -> None:
    assert preset("finance") is FINANCE and preset("generic") is GENERIC
    with pytest.raises(ValueError, match="preset: unknown 'legal'"):
        preset("legal")
    assert {"states", "provides", "includes", "breaks"} <= FINANCE.action_verbs
    assert FINANCE.banned_source_types == frozenset({"ai-tools"})
    assert (FINANCE.min_criteria, FINANCE.max_criteria, FINANCE.max_length) == (5, 60, 300)
    # Every rule is on in the finance preset but criterion-in-group, off in every preset.
    finance_off = {i["id"] for i in describe_rules() if not FINANCE.setting(i["id"]).enabled}
    assert finance_off == {"criterion-in-group"}
    off = {info["id"] for info in describe_rules() if not GENERIC.setting(info["id"]).enabled}
    assert off == {
        "criterion-in-group",
        "action-verb",
        "fact-anchor",
        "fact-source-type",
        "banned-source-type",
        "methodology-required",
        "citation-after-query-date",
        "citation-missing-date",
    }


def test_generic_accepts_question_criteria() -> None:
    checklist = ChecklistInput(
        (
            CriterionInput("q1", "Does the response explain the drivers of the beat?", "fact"),
            CriterionInput("q2", "Is the answer formatted as a table?", "format"),
        )
    )
    assert validate_checklist(checklist, GENERIC).findings == ()


def test_inputs_reject_unknown_kinds_and_duplicate_keys() -> None:
    with pytest.raises(ValueError, match="kind"):
        CriterionInput("c1", "States revenue.", "opinion")
    with pytest.raises(ValueError, match="duplicate criterion key 'c1'"):
        ChecklistInput((CriterionInput("c1", "A.", "fact"), CriterionInput("c1", "B.", "fact")))


def test_inputs_accept_lists() -> None:
    criterion = CriterionInput("c1", "States revenue.", "fact", ["filings"])  # type: ignore[arg-type]
    assert criterion.source_types == ("filings",)
    assert hash(criterion)


def forty_criteria() -> ChecklistInput:
    segments = ["data centre", "PC", "auto", "gaming", "networking"]
    criteria = [
        CriterionInput("m1", "Uses the Q3 FY2026 earnings call of 28 October 2026.", "methodology"),
        CriterionInput(
            "m2", "Compares Q3 results with the guidance from the Q2 call.", "methodology"
        ),
        CriterionInput("f1", "Presents guidance versus actuals in a table.", "format"),
    ]
    for n in range(37):
        segment = segments[n % len(segments)]
        criteria.append(
            CriterionInput(
                f"c{n}",
                f"States Q3 FY2026 {segment} revenue of ${1 + n / 10:.2f} billion, up {n + 3}% "
                f"year over year (e.g. versus ${0.9 + n / 10:.2f} billion in Q3 FY2025).",
                "fact",
                ("earnings-release", "filings"),
                (
                    CitationInput(
                        f"Q3 FY2026 earnings release, table {n}",
                        url=f"https://ir.northwind.example/q3-fy2026#{n}",
                        source_type="earnings-release",
                        published_on=date(2026, 10, 28),
                    ),
                ),
            )
        )
    return ChecklistInput(tuple(criteria), query_date=date(2026, 10, 30))


def test_forty_criteria_validate_cheaply_in_a_loop() -> None:
    checklist = forty_criteria()
    assert len(checklist.criteria) == 40
    for _ in range(50):
        report = validate_checklist(checklist, FINANCE)
    assert report.findings == ()
    # Live feedback re-validates one criterion at a time, with fresh text on every keystroke.
    for n in range(200):
        typed = CriterionInput("c0", f"States Q3 revenue of ${n}.1 billion", "fact", ("filings",))
        assert not validate_criterion(typed, FINANCE).findings
