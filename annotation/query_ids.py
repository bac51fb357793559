"""A query's external id: its one name outside the app. Exports write it, imports match
queries by it, the reward API and the review imports (labels, verdicts) name queries by
it. Plain rules, no database: the writes are in annotation.services.datasets
(query_create, query_set_external_id, external_ids_fix) and Query.save.

- Every query has one from its creation: the id its creator gave (an import's file, the
  API), else `query-<its id in the app>` (`query-17`), which is what exports named a query
  without one before every query had one. Should another query of the dataset already hold
  that name (an import from another installation), `-2`, `-3`… is added.
- It may be changed by the dataset's admins and by the query's author (the expert who
  added it, while experts may add queries), only while nothing outside the app may refer
  to it. Once something may, `Query.external_id_fixed_by` says what (FIXED_BY) and
  `external_id_fixed_at` since when, and a change is refused saying so.
"""

from __future__ import annotations

import unicodedata

from config import limits

# What fixed a query's external id: each is a way the id left the app (or came into it
# from outside), after which a file, a trainer or a script may hold it.
FIXED_BY = {
    "export": "the dataset was exported with it",
    "import": "it came from an imported file",
    "rewards": "rewards were requested for it",
    "labels": "a labels import named the query by it",
    "verdicts": "a verdicts import named the query by it",
    "answers": "answers were imported naming the query by it",
}
FIXED_CHOICES = [(key, reason) for key, reason in FIXED_BY.items()]


def default_external_id(pk: int, attempt: int = 1) -> str:
    """The id a query gets when its creator gave none: `query-17`, then `query-17-2`…"""
    return f"query-{pk}" if attempt == 1 else f"query-{pk}-{attempt}"


def external_id_problem(value: object) -> str | None:
    """What is wrong with `value` as an external id given by a person, or None."""
    if not isinstance(value, str):
        return "Give the external id as text."
    if not value.strip():
        return "Every query has an external id: it may not be empty."
    if value != value.strip():
        return "No spaces at the start or end of an external id."
    if len(value) > limits.EXTERNAL_ID:
        return f"At most {limits.EXTERNAL_ID} characters."
    if any(unicodedata.category(ch).startswith("C") for ch in value):
        return "No control characters (tabs, line breaks…) in an external id."
    return None


def fixed_reason(fixed_by: str) -> str:
    """Why an id may no longer change, as a sentence's end: "the dataset was exported…"."""
    return FIXED_BY.get(fixed_by, "something outside the app may refer to it")
