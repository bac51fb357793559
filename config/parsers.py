"""The API's JSON parser: DRF's, with the two inputs it would turn into a 500 refused as a
400 first: JSON nested past limits.JSON_DEPTH (the parser recurses: 1,000 levels raise
RecursionError) and NUL characters in strings (PostgreSQL cannot store them)."""

from __future__ import annotations

import json

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from config import limits


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
            data = json.loads(text, parse_constant=_refuse_constant)
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        if limits.has_nul(data):
            raise ParseError("JSON parse error: NUL characters (\\u0000) are not accepted.")
        return data


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")
