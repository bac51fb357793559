"""bench.web's --only and --skip: page names comma-separated or repeated, a name holding a
comma taken whole, an unknown name refused by name (never a silent measurement of
something else)."""

from __future__ import annotations

import pytest

from bench.web.__main__ import page_names

KNOWN = {"answers list", "answers list, searched", "answer page", "run page"}


def test_a_name_with_a_comma_is_taken_whole():
    assert page_names(["answers list, searched"], KNOWN) == {"answers list, searched"}


def test_comma_separated_and_repeated_names():
    assert page_names(["run page,answer page", " answers list "], KNOWN) == {
        "run page", "answer page", "answers list",
    }  # fmt: skip


def test_an_unknown_name_stops_the_run_naming_it():
    with pytest.raises(SystemExit, match="No such page: answers"):
        page_names(["answers"], KNOWN)
