"""The G-Eval style graded prompt: strict parsing and a cache key over every input."""

from __future__ import annotations

import datetime as dt

import pytest

from evaluation.judging import graded


@pytest.mark.parametrize("score", [1, 3, 5])
def test_parse_accepts_integers_from_1_to_5(score):
    parsed = graded.parse({"reasoning": "  Matches the reference.  ", "score": score})
    assert parsed == graded.ParsedGrade(score, "Matches the reference.")


@pytest.mark.parametrize(
    "data",
    [
        None,
        {},
        {"reasoning": "x", "score": 0},
        {"reasoning": "x", "score": 6},
        {"reasoning": "x", "score": 3.5},
        {"reasoning": "x", "score": 4.0},
        {"reasoning": "x", "score": "4"},
        {"reasoning": "x", "score": True},
        {"reasoning": "x"},
        {"score": 3},
        {"reasoning": 3, "score": 3},
    ],
)
def test_anything_else_is_unparseable(data):
    assert graded.parse(data) is None


def test_prompt_has_criteria_steps_references_and_the_answer_last():
    messages = graded.messages(
        query="Q3 revenue?", query_date=dt.date(2025, 1, 31), references=["R1", "R2"],
        answer="A",
    )  # fmt: skip
    system, user = messages[0]["content"], messages[1]["content"]
    assert "Evaluation criteria" in system and "Evaluation steps" in system
    assert system.index('"reasoning"') < system.index('"score"')  # reasoning first, then score
    assert "as of 2025-01-31" in user
    assert "Reference answer 1:\nR1" in user and "Reference answer 2:\nR2" in user
    assert user.endswith("Answer to evaluate:\nA")
    assert graded.SCHEMA["required"] == ["reasoning", "score"]


def test_cache_key_changes_with_every_input():
    base = {
        "base_url": "http://x/v1", "model": "m", "temperature": 0.0, "max_tokens": 512,
        "seed": None, "sample": 0, "query": "q", "query_date": dt.date(2025, 1, 1),
        "references": ["r"], "answer": "a",
    }  # fmt: skip
    key = graded.cache_key(**base)
    assert graded.cache_key(**{**base, "base_url": "http://x/v1/"}) == key  # same endpoint
    changes = {
        "base_url": "http://y/v1", "model": "m2", "temperature": 0.5, "max_tokens": 256,
        "seed": 1, "sample": 1, "query": "q2", "query_date": dt.date(2025, 1, 2),
        "references": ["r2"], "answer": "a2",
    }  # fmt: skip
    for field, value in changes.items():
        assert graded.cache_key(**{**base, field: value}) != key, field
