"""The request shapes trainers speak, read into reward items; no database here.

Every problem names the item (its index in the request) and the field, so that a trainer's
log says which sample of which batch was wrong; one bad item refuses the whole request
before anything is called or recorded (docs/rewards.md#errors).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from evaluation.answers.agent_fields import check_context, check_turns
from evaluation.rewards.length_shaping import Shaping

MAX_LISTED = 20  # problems listed in one refusal; the rest are counted
QUERY_ID_MAX = 200  # Query.external_id


@dataclass(frozen=True)
class Item:
    query: str  # the query's external id
    completion: str  # the text graded: the last assistant turn's when `turns` are given
    # A conversation (the native shape's `completion` given as turns, as answers with
    # structure hold them: evaluation.answers.agent_fields): the turns before the graded one go
    # into the prompt, and the trajectory checks read its tool calls.
    turns: tuple[dict[str, Any], ...] = ()
    # The passages the system retrieved for it (native shape, optional; as answers hold
    # them: evaluation.answers.agent_fields): what a criterion judged against the retrieved
    # context is judged against, as in runs.
    context: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Problem:
    item: int | None  # None: the request itself
    field: str
    message: str

    def __str__(self) -> str:
        where = f"Item {self.item}, field “{self.field}”" if self.item is not None else self.field
        return f"{where}: {self.message}"


class RefusedInput(Exception):
    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__(str(problems[0]))
        self.problems = list(problems)

    def body(self) -> dict[str, Any]:
        listed = self.problems[:MAX_LISTED]
        more = len(self.problems) - len(listed)
        detail = str(self.problems[0]) + (
            f" ({len(self.problems) - 1} more problems listed)" if len(self.problems) > 1 else ""
        )
        body: dict[str, Any] = {
            "detail": detail,
            "errors": [{"item": p.item, "field": p.field, "message": p.message} for p in listed],
        }
        if more:
            body["more_errors"] = more
        return body


def refuse_if(problems: list[Problem]) -> None:
    if problems:
        raise RefusedInput(problems)


def check_count(count: int, field: str, max_batch: int) -> None:
    if count == 0:
        raise RefusedInput([Problem(None, field, "No items: send at least one completion.")])
    if count > max_batch:
        raise RefusedInput(
            [
                Problem(
                    None,
                    field,
                    f"{count} items, more than the {max_batch} a request may hold "
                    "(REWARDS_MAX_BATCH): split the batch.",
                )
            ]
        )


def _check_item(index: int, query: Any, completion: Any, fields: tuple[str, str]) -> list[Problem]:
    query_field, completion_field = fields
    problems = []
    if not isinstance(query, str) or not query.strip():
        problems.append(Problem(index, query_field, "Give the query's external id (a string)."))
    elif len(query) > QUERY_ID_MAX:
        problems.append(Problem(index, query_field, "No query has an external id this long."))
    if isinstance(completion, list) and completion_field == "completion":
        problems += _check_turns(index, completion)
    elif not isinstance(completion, str):
        problems.append(
            Problem(index, completion_field, "The completion must be a string or a list of turns.")
        )
    elif not completion.strip():
        problems.append(Problem(index, completion_field, "The completion is empty."))
    return problems


def _check_turns(index: int, turns: list) -> list[Problem]:
    _, errors = check_turns(turns)
    if errors:
        return [Problem(index, "completion", error) for error in errors]
    if not final_turn(turns):
        return [Problem(index, "completion", "No assistant turn with content to grade.")]
    return []


def final_turn(turns: Sequence[Mapping[str, Any]]) -> str:
    """The last assistant turn's content: what a conversation's reward grades."""
    said = [
        str(t.get("content") or "")
        for t in turns
        if t.get("role") == "assistant" and str(t.get("content") or "").strip()
    ]
    return said[-1] if said else ""


def _native_item(item: Mapping[str, Any]) -> Item:
    completion = item["completion"]
    context = tuple(check_context(item["context"])[0]) if item.get("context") else ()
    if isinstance(completion, list):
        turns, _ = check_turns(completion)
        return Item(item["query"].strip(), final_turn(turns), tuple(turns), context)
    return Item(item["query"].strip(), completion, context=context)


def _check_context(index: int, context: Any) -> list[Problem]:
    if context is None:
        return []
    _, errors = check_context(context)
    return [Problem(index, "context", error) for error in errors]


def native_items(data: Any, max_batch: int) -> list[Item]:
    """{"items": [{"query": "<external id>", "completion": "..." or [turns],
    "context": [passages] (optional)}]}"""
    items = data.get("items") if isinstance(data, Mapping) else None
    if not isinstance(items, list):
        raise RefusedInput([Problem(None, "items", "Send a list of {query, completion} objects.")])
    check_count(len(items), "items", max_batch)
    problems: list[Problem] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            problems.append(Problem(index, "items", "An item is a {query, completion} object."))
            continue
        problems += _check_item(
            index, item.get("query"), item.get("completion"), ("query", "completion")
        )
        problems += _check_context(index, item.get("context"))
    refuse_if(problems)
    return [_native_item(i) for i in items]


def openrlhf_items(data: Any, max_batch: int, strip: Sequence[str] = ()) -> list[Item]:
    """OpenRLHF's remote reward model: {"query": [prompt + completion], "prompts": [prompt],
    "labels": [query external id]}. The completion is what follows the prompt in its query
    string, less any trailing `strip` strings (end-of-sequence and padding tokens, which
    OpenRLHF decodes with the text) and surrounding whitespace."""
    if not isinstance(data, Mapping):
        raise RefusedInput([Problem(None, "query", "Send {query, prompts, labels} lists.")])
    lists = {name: data.get(name) for name in ("query", "prompts", "labels")}
    for name, value in lists.items():
        if not isinstance(value, list):
            raise RefusedInput([Problem(None, name, "A list, one entry per sample.")])
    queries, prompts, labels = lists["query"], lists["prompts"], lists["labels"]
    check_count(len(queries), "query", max_batch)
    if not len(queries) == len(prompts) == len(labels):
        raise RefusedInput(
            [
                Problem(
                    None,
                    "labels",
                    f"{len(queries)} queries, {len(prompts)} prompts and {len(labels)} labels: "
                    "one of each per sample.",
                )
            ]
        )
    problems: list[Problem] = []
    items = []
    for index, (text, prompt, label) in enumerate(zip(queries, prompts, labels, strict=True)):
        if not isinstance(text, str) or not isinstance(prompt, str):
            field = "query" if not isinstance(text, str) else "prompts"
            problems.append(Problem(index, field, "A string."))
            continue
        start = text.find(prompt)
        if start < 0:
            problems.append(Problem(index, "query", "The query string does not hold its prompt."))
            continue
        completion = _strip_tail(text[start + len(prompt) :], strip)
        found = _check_item(index, label, completion, ("labels", "query"))
        problems += found
        if not found:
            items.append(Item(label.strip(), completion))
    refuse_if(problems)
    return items


def _strip_tail(text: str, tokens: Sequence[str]) -> str:
    text = text.strip()
    tokens = [t for t in tokens if t]
    stripped = True
    while stripped:
        stripped = False
        for token in tokens:
            if text.endswith(token):
                text = text[: -len(token)].rstrip()
                stripped = True
    return text


def verify_item(data: Any) -> Item:
    """NeMo-Gym's /verify request: {"responses_create_params": {...}, "response": {...,
    "output": [...]}, ...}, with the query's external id in a `query` field beside them (a
    task field of the dataset's rows, as `expected_answer` is for other resources servers).
    The completion is the text of the response's output messages."""
    if not isinstance(data, Mapping):
        raise RefusedInput([Problem(0, "response", "Send a NeMo-Gym verify request object.")])
    problems: list[Problem] = []
    if not isinstance(data.get("responses_create_params"), Mapping):
        problems.append(Problem(0, "responses_create_params", "An object (the rollout's input)."))
    response = data.get("response")
    output = response.get("output") if isinstance(response, Mapping) else None
    if not isinstance(output, list):
        problems.append(Problem(0, "response", "A Responses API response with an output list."))
        raise RefusedInput(problems)
    completion = output_text(output)
    problems += _check_item(0, data.get("query"), completion, ("query", "response"))
    refuse_if(problems)
    return Item(data["query"].strip(), completion)


def output_text(output: list[Any]) -> str:
    """The assistant's text in a Responses API output: every output_text part of every
    message, in order (reasoning and tool calls are not the answer)."""
    texts = []
    for entry in output:
        if not isinstance(entry, Mapping) or entry.get("type") != "message":
            continue
        if entry.get("role", "assistant") != "assistant":
            continue
        content = entry.get("content")
        if isinstance(content, str):
            texts.append(content)
            continue
        for part in content if isinstance(content, list) else ():
            if isinstance(part, Mapping) and part.get("type") == "output_text":
                text = part.get("text")
                texts.append(text if isinstance(text, str) else "")
    return "\n\n".join(t for t in texts if t)


SHAPING_FIELDS = ("length_reference", "length_exponent", "max_words", "over_length_penalty")


def shaping_from(source: Mapping[str, Any], defaults: Shaping) -> Shaping:
    """The request's shaping knobs (body fields, or URL parameters for the trainer shapes),
    each falling back to the server's default."""
    values: dict[str, Any] = {}
    problems = []
    types = {f.name: f.type for f in fields(Shaping)}
    for name in SHAPING_FIELDS:
        raw = source.get(name)
        if raw is None or raw == "":
            continue
        number_type = int if types[name] in ("int", int) else float
        try:
            if isinstance(raw, bool):
                raise ValueError
            value = number_type(raw)
        except (TypeError, ValueError):
            problems.append(Problem(None, name, f"A number ({number_type.__name__})."))
            continue
        values[name] = value
    refuse_if(problems)
    merged = {f.name: values.get(f.name, getattr(defaults, f.name)) for f in fields(Shaping)}
    try:
        return Shaping(**merged)
    except ValueError as exc:
        name = next((n for n in SHAPING_FIELDS if n in str(exc)), "length_reference")
        raise RefusedInput([Problem(None, name, str(exc))]) from None
