"""The structured fields of an answer from an agent: `turns`, `context` and `metadata`.
Plain Python, no Django: every way in (the answers upload, `POST /api/answers/`, the
dataset import) checks them here, so that a value refused by one is refused by all.

    turns     [{"role": "user" | "assistant" | "tool", "content": "…",
                "tool_calls": [{"id": "c1", "name": "search", "arguments": {…}}],  # assistant
                "tool_call_id": "c1", "name": "search"}]                            # tool
    context   [{"id": "doc-1", "title": "…", "source": "…", "text": "…"}]
    metadata  {"model": "…", "latency_ms": 1234, "cost": 0.0123, "steps": ["plan", …], …}

Each is optional: `[]`, `[]` and `{}` when absent. `check_*` return the value normalised
(an OpenAI-style `{"type": "function", "function": {…}}` tool call, or arguments given as
JSON text, become `{"name", "arguments"}` with an object), or the problems found, each
naming the field and the item ("field 'turns': turn 3: …"). The bounds below are in
docs/data-formats.md#answers.
"""

from __future__ import annotations

import json
from typing import Any

# Bounds: an answer row is read whole into memory and shown on one page.
MAX_TURNS = 500
MAX_TOOL_CALLS = 1_000  # over all turns
MAX_CONTEXT_ITEMS = 500
MAX_TURNS_CHARS = 1_000_000  # the turns as JSON text
MAX_CONTEXT_CHARS = 1_000_000  # the context as JSON text
MAX_METADATA_CHARS = 20_000  # the metadata as JSON text
MAX_NAME = 200  # a tool's name, a call's id, a passage's id

ROLES = ("user", "assistant", "tool")
FIELDS = ("turns", "context", "metadata")
EMPTY: dict[str, Any] = {"turns": [], "context": [], "metadata": {}}


def parse_cell(field: str, value: Any) -> tuple[Any, list[str]]:
    """A field's value from a file or request: JSON text (a CSV cell) is decoded; empty or
    missing is the field's empty value."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return _empty(field), []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            return None, [f"field {field!r}: not valid JSON ({exc.msg})"]
    return value, []


def _empty(field: str) -> Any:
    return {} if field == "metadata" else []


def check_fields(row: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The three fields of a row, parsed and checked; problems name the field."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for field, check in (
        ("turns", check_turns),
        ("context", check_context),
        ("metadata", check_metadata),
    ):
        value, found = parse_cell(field, row.get(field))
        if not found:
            value, found = check(value)
        values[field] = value
        problems.extend(found)
    return values, problems


def _size(field: str, value: Any, limit: int) -> list[str]:
    chars = len(json.dumps(value, ensure_ascii=False))
    if chars > limit:
        return [f"field {field!r} is {chars:,} characters of JSON; at most {limit:,} are accepted"]
    return []


def _text(value: Any) -> bool:
    return isinstance(value, str)


def check_turns(value: Any) -> tuple[list[dict[str, Any]], list[str]]:
    if not isinstance(value, list):
        return [], ["field 'turns' must be a list of turns"]
    if len(value) > MAX_TURNS:
        return [], [f"field 'turns' has {len(value):,} turns; at most {MAX_TURNS:,} are accepted"]
    problems = _size("turns", value, MAX_TURNS_CHARS)
    if problems:
        return [], problems
    turns: list[dict[str, Any]] = []
    calls = 0
    for number, turn in enumerate(value, start=1):
        where = f"field 'turns': turn {number}"
        if not isinstance(turn, dict):
            problems.append(f"{where} must be an object")
            continue
        role = turn.get("role")
        if role not in ROLES:
            problems.append(f"{where}: 'role' must be one of {', '.join(ROLES)}, not {role!r}")
            continue
        content = turn.get("content")
        content = "" if content is None else content
        if not _text(content):
            problems.append(f"{where}: 'content' must be text")
            continue
        unknown = set(turn) - {"role", "content", "tool_calls", "tool_call_id", "name"}
        if unknown:
            problems.append(f"{where}: unknown key {sorted(unknown)[0]!r}")
            continue
        clean: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant":
            raw_calls = turn.get("tool_calls") or []
            if not isinstance(raw_calls, list):
                problems.append(f"{where}: 'tool_calls' must be a list")
                continue
            checked = [_tool_call(f"{where}: tool call {i}", c) for i, c in enumerate(raw_calls, 1)]
            bad = [p for c, p in checked if p]
            if bad:
                problems.extend(bad)
                continue
            if checked:
                clean["tool_calls"] = [c for c, _ in checked]
            calls += len(checked)
        elif turn.get("tool_calls"):
            problems.append(f"{where}: only assistant turns make tool calls")
            continue
        for key in ("tool_call_id", "name"):
            given = turn.get(key)
            if given in (None, ""):
                continue
            if role != "tool" or not _text(given) or len(given) > MAX_NAME:
                problems.append(
                    f"{where}: {key!r} belongs to tool turns, as text of at most {MAX_NAME}"
                )
                break
            clean[key] = given
        else:
            turns.append(clean)
    if calls > MAX_TOOL_CALLS:
        problems.append(
            f"field 'turns' has {calls:,} tool calls; at most {MAX_TOOL_CALLS:,} are accepted"
        )
    return turns, problems


def _tool_call(where: str, call: Any) -> tuple[dict[str, Any], str]:
    if not isinstance(call, dict):
        return {}, f"{where} must be an object"
    if isinstance(call.get("function"), dict):  # OpenAI's shape
        call = {"id": call.get("id"), **call["function"]}
    name = call.get("name")
    if not _text(name) or not name.strip() or len(name) > MAX_NAME:
        return {}, f"{where}: 'name' must be the tool's name (text of at most {MAX_NAME})"
    arguments = call.get("arguments")
    if arguments is None or arguments == "":
        arguments = {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return {}, f"{where}: 'arguments' must be a JSON object"
    if not isinstance(arguments, dict):
        return {}, f"{where}: 'arguments' must be a JSON object"
    clean: dict[str, Any] = {"name": name.strip(), "arguments": arguments}
    ident = call.get("id")
    if ident not in (None, ""):
        if not _text(ident) or len(ident) > MAX_NAME:
            return {}, f"{where}: 'id' must be text of at most {MAX_NAME}"
        clean = {"id": ident, **clean}
    return clean, ""


def check_context(value: Any) -> tuple[list[dict[str, Any]], list[str]]:
    if not isinstance(value, list):
        return [], ["field 'context' must be a list of passages"]
    if len(value) > MAX_CONTEXT_ITEMS:
        return [], [
            f"field 'context' has {len(value):,} passages; at most {MAX_CONTEXT_ITEMS:,} "
            "are accepted"
        ]
    problems = _size("context", value, MAX_CONTEXT_CHARS)
    if problems:
        return [], problems
    passages: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for number, item in enumerate(value, start=1):
        where = f"field 'context': passage {number}"
        if not isinstance(item, dict):
            problems.append(f"{where} must be an object")
            continue
        unknown = set(item) - {"id", "title", "source", "text"}
        if unknown:
            problems.append(f"{where}: unknown key {sorted(unknown)[0]!r}")
            continue
        ident = item.get("id")
        if isinstance(ident, int) and not isinstance(ident, bool):
            ident = str(ident)
        if not _text(ident) or not ident.strip() or len(ident) > MAX_NAME:
            problems.append(f"{where}: 'id' is required (text of at most {MAX_NAME})")
            continue
        if ident in seen:
            problems.append(f"{where}: 'id' {ident!r} repeats passage {seen[ident]}")
            continue
        seen[ident] = number
        clean = {"id": ident}
        for key in ("title", "source", "text"):
            given = item.get(key)
            given = "" if given is None else given
            if not _text(given):
                problems.append(f"{where}: {key!r} must be text")
                break
            clean[key] = given
        else:
            if not clean["text"].strip():
                problems.append(f"{where}: 'text' is required")
                continue
            passages.append(clean)
    return passages, problems


NUMBERS = ("latency_ms", "cost", "prompt_tokens", "completion_tokens")


def check_metadata(value: Any) -> tuple[dict[str, Any], list[str]]:
    if not isinstance(value, dict):
        return {}, ["field 'metadata' must be an object"]
    problems = _size("metadata", value, MAX_METADATA_CHARS)
    if problems:
        return {}, problems
    if "model" in value and not _text(value["model"]):
        problems.append("field 'metadata': 'model' must be text")
    for key in NUMBERS:
        given = value.get(key)
        if given is None:
            continue
        if isinstance(given, bool) or not isinstance(given, int | float) or given < 0:
            problems.append(f"field 'metadata': {key!r} must be a number, 0 or more")
    steps = value.get("steps")
    if steps is not None and (
        not isinstance(steps, list) or not all(_text(s) and s.strip() for s in steps)
    ):
        problems.append("field 'metadata': 'steps' must be a list of step (node) names")
    return (value if not problems else {}), problems


def is_agent(turns: list[dict[str, Any]], context: list[dict[str, Any]]) -> bool:
    return bool(turns or context)
