"""Checking the rows of an imported file, the same way for every import (system answers,
human labels, judge verdicts): each row is checked on its own, every error names the file
and the line, a row that repeats an earlier one's identity is refused, and one error
rejects the whole file, so nothing is written."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from config import limits

MESSAGE_CHARS = 500  # one error line; a row's own text is never echoed at length

T = TypeVar("T")


class ImportRejected(Exception):
    """The file has errors; nothing was written. `errors` lists each one."""

    def __init__(self, errors: list[str]) -> None:
        # Bounded: a file of a million bad rows must not make a response of a million lines.
        listed = limits.ERRORS_LISTED
        self.count = len(errors)
        self.errors = [_short(e) for e in errors[:listed]]
        if len(errors) > listed:
            self.errors.append(f"… and {len(errors) - listed} more error(s) of the same file")
        shown = "\n".join(self.errors)
        super().__init__(f"{len(errors)} error(s); nothing was imported:\n{shown}")


def _short(message: str) -> str:
    return message if len(message) <= MESSAGE_CHARS else message[: MESSAGE_CHARS - 1] + "…"


def field_text(row: dict, field: str) -> str:
    """A field of a row as text: stripped; empty when missing or null."""
    value = row.get(field)
    return "" if value is None else str(value).strip()


@dataclass(frozen=True)
class Checked(Generic[T]):
    """A row that passed its own checks: what to write, and its identity in the file (a
    later row with the same key is a duplicate)."""

    value: T
    key: Hashable


# check_one(line, row, where): the checked row, or its problems, each starting with `where`
# (file:line). An empty list refuses the row without an error of its own.
CheckOne = Callable[[int, dict, str], Checked | list[str]]


def check_rows(
    name: str, raw: Sequence[tuple[int, dict]], check_one: CheckOne, *, duplicate: str
) -> list[T]:
    """The values of the checked rows of file `name` ((line, row) pairs), in file order;
    ImportRejected with every error when any row fails. `duplicate` is the error for a
    row whose key an earlier row had, `{line}` standing for that row's line."""
    errors: list[str] = []
    checked: list[T] = []
    seen: dict[Hashable, int] = {}
    for line, row in raw:
        where = f"{name}:{line}"
        if row.get("__not_an_object__"):
            errors.append(f"{where}: each line must be a JSON object")
            continue
        result = check_one(line, row, where)
        if not isinstance(result, Checked):
            errors.extend(result)
            continue
        if result.key in seen:
            errors.append(f"{where}: " + duplicate.format(line=seen[result.key]))
            continue
        seen[result.key] = line
        checked.append(result.value)
    if errors:
        raise ImportRejected(errors)
    return checked
