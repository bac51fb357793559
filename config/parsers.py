"""The API's JSON parser: DRF's, with the inputs it would turn into a 500 refused as a 400
first: JSON nested past limits.JSON_DEPTH (the parser recurses: 1,000 levels raise
RecursionError), NUL characters in strings (PostgreSQL cannot store them), and numbers that
are not finite (see `loads`)."""

from __future__ import annotations

import json
import math
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError
from rest_framework.settings import api_settings

from config import limits

# A JSON integer of fewer digits always fits a float (the largest is about 1.8e308).
_FLOAT_DIGITS = 309


class NotFinite(ValueError):
    """Numbers that are not finite, each by the path of the field holding it (see `loads`)."""

    def __init__(self, found: list[tuple[str, str]]) -> None:
        super().__init__(f"{found[0][0] or 'the body'}: {_message(found[0][1])}")
        self.found = found

    def errors(self) -> dict[str, list[str]]:
        """{field path: [message]} for the first limits.ERRORS_LISTED; the body itself is
        DRF's non-field key."""
        errors: dict[str, list[str]] = {}
        for path, literal in self.found[: limits.ERRORS_LISTED]:
            key = path or api_settings.NON_FIELD_ERRORS_KEY
            errors.setdefault(key, []).append(_message(literal))
        return errors


class _Literal:
    """A number literal refused while parsing, kept where it stood until the walk names it."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def loads(text: str) -> Any:
    """json.loads where every number is finite, or NotFinite naming every field holding one
    that is not.

    The rule: NaN, Infinity and -Infinity (which Python's json reads, and JSON does not
    allow) are refused, and so is any number literal beyond the range of a float
    (about ±1.8e308): `1e999`, `-1e999`, an integer of 400 digits. Python would read the
    first as inf and the last as an int that raises OverflowError once made a float; either
    way a 500 further on (an `int()` of it, a comparison that is never true, a JSON column
    PostgreSQL refuses), so no view sees one.

    A field is named by its path from the body: an object's keys joined by dots, a list's
    positions in brackets (`length_reference`, `items[2].score`, `[0]` for a body that is a
    list); "" for a body that is itself a number. json's hooks see a literal without its
    key, so each refused literal is kept as a marker and the parsed value walked for them,
    only when there is one."""
    refused: list[_Literal] = []

    def refuse(literal: str) -> _Literal:
        refused.append(_Literal(literal))
        return refused[-1]

    def parse_float(literal: str) -> float | _Literal:
        value = float(literal)
        return value if math.isfinite(value) else refuse(literal)

    def parse_int(literal: str) -> int | _Literal:
        digits = len(literal.lstrip("-"))
        if digits < _FLOAT_DIGITS:
            return int(literal)
        if digits == _FLOAT_DIGITS:
            value = int(literal)
            try:
                float(value)
            except OverflowError:
                return refuse(literal)
            return value
        return refuse(literal)  # also spares int() a text past Python's 4,300 digits

    data = json.loads(text, parse_float=parse_float, parse_int=parse_int, parse_constant=refuse)
    if refused:
        found: list[tuple[str, str]] = []
        _walk(data, "", found)
        if found:  # none when a later duplicate key replaced every refused value
            raise NotFinite(found)
    return data


def _walk(value: Any, path: str, found: list[tuple[str, str]]) -> None:
    if isinstance(value, _Literal):
        found.append((path, value.text))
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, f"{path}.{key}" if path else key, found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", found)


def _message(literal: str) -> str:
    shown = literal if len(literal) <= 24 else f"{literal[:12]}… ({len(literal)} characters)"
    return f"A finite number, not {shown}."


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", "utf-8")
        try:
            text = stream.read().decode(encoding) if stream is not None else ""
        except UnicodeDecodeError:
            raise ParseError(f"JSON parse error: the body is not {encoding} text.") from None
        if limits.json_too_deep(text):
            raise ParseError(f"JSON parse error: nested deeper than {limits.JSON_DEPTH} levels.")
        try:
            data = loads(text)
        except NotFinite as refused:
            raise ParseError(refused.errors()) from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        if limits.has_nul(data):
            raise ParseError("JSON parse error: NUL characters (\\u0000) are not accepted.")
        return data
