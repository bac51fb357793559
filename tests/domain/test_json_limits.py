"""The nesting check every JSON body and import line goes through (issue 13): exact at the
limit, blind to brackets inside strings, and cheap for ordinary lines."""

from config import limits


def test_nesting_up_to_the_limit_passes_and_one_more_is_refused():
    at_limit = "[" * limits.JSON_DEPTH + "]" * limits.JSON_DEPTH
    assert not limits.json_too_deep(at_limit)
    assert limits.json_too_deep("[" + at_limit + "]")
    assert limits.json_too_deep('{"a": ' * 40 + "1" + "}" * 40)


def test_brackets_inside_strings_do_not_count():
    text = '{"rationale": "' + "[{" * 100 + '", "x": [1, 2]}'
    assert text.count("[") > limits.JSON_DEPTH  # so the walk, not the count, decides
    assert not limits.json_too_deep(text)


def test_an_ordinary_line_is_settled_by_counting():
    line = '{"run": "r", "judge_params": "{\\"model\\": \\"m\\"}", "text": "' + "x" * 700 + '"}'
    assert not limits.json_too_deep(line)
