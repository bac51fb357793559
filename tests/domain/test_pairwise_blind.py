"""The blind rule of pairwise votes (evaluation/pairwise/blind.py): a choice on the page read
back as a side, and positions balanced over a pair's reviewers."""

from __future__ import annotations

import pytest

from evaluation.pairwise import blind


@pytest.mark.parametrize(
    ("choice", "first_is_a", "preference"),
    [("1", True, "a"), ("2", True, "b"), ("1", False, "b"), ("2", False, "a"),
     ("tie", True, "tie"), ("tie", False, "tie")],
)  # fmt: skip
def test_a_choice_is_read_back_as_the_side_shown_there(choice, first_is_a, preference):
    assert blind.preference_for(choice, first_is_a) == preference
    assert blind.choice_for(preference, first_is_a) == choice


@pytest.mark.parametrize("bad", ["", "3", "A", "a", "TIE", " 1"])
def test_anything_but_1_2_tie_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="choice must be one of 1, 2, tie"):
        blind.preference_for(bad, True)


def test_the_later_reviewers_get_the_side_shown_first_less_often():
    never = lambda: pytest.fail("no coin when one side leads")  # noqa: E731
    assert blind.draw_first_is_a(0, 1, flip=never) is True
    assert blind.draw_first_is_a(3, 1, flip=never) is False
    assert blind.draw_first_is_a(2, 2, flip=lambda: False) is False
    assert blind.draw_first_is_a(0, 0, flip=lambda: True) is True


def test_a_fair_coin_decides_the_first_reviewer():
    firsts = [blind.draw_first_is_a(0, 0) for _ in range(2000)]
    assert 900 < sum(firsts) < 1100  # 1000 ± 4.5 standard deviations


def test_keys_are_1_2_t_and_0():
    assert blind.KEYS == {"1": "1", "2": "2", "t": "tie", "0": "tie"}
