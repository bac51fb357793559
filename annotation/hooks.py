"""What annotation's pages and services ask of the evaluation side, without importing it.

Annotation sits below evaluation: it never imports it (an import-linter contract in
pyproject.toml holds this). Where an expert's page shows an evaluation figure, or a write
must start evaluation work, annotation calls one of these hooks; evaluation fills them when
it starts (EvaluationConfig.ready, evaluation/apps.py). Until then, and in a project without
evaluation, each hook answers as if evaluation knew nothing.

- `formality_request(dataset=, criteria=)`: ask for formality advice on the criteria's
  present wordings (called inside the writing transaction; queued on commit).
- `current_advice(criterion)`: the advice on the criterion's present wording, if any (reads
  the prefetched `criterion.formality_advice`).
- `advice_on_wording(criterion)`: the same, read from the database (the advice box polls it).
- `checklist_health(user, checklist)`: the editor's health figures, or None.
- `saturated_among(dataset, query_ids)`: of these queries, those the kept figures mark saturated.
- `queue_purge(dataset_id)`: queue the task that deletes a dataset marked for deletion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _no_queries(dataset: Any, query_ids: Any) -> set[int]:
    return set()


formality_request: Callable[..., None] = _nothing
current_advice: Callable[[Any], Any] = _nothing
advice_on_wording: Callable[[Any], Any] = _nothing
checklist_health: Callable[[Any, Any], Any] = _nothing
saturated_among: Callable[[Any, Any], set[int]] = _no_queries
queue_purge: Callable[[int], None] = _nothing

NAMES = (
    "formality_request",
    "current_advice",
    "advice_on_wording",
    "checklist_health",
    "saturated_among",
    "queue_purge",
)


def provide(**hooks: Callable[..., Any]) -> None:
    """Fill hooks by name (evaluation's AppConfig.ready); an unknown name is a bug."""
    for name, function in hooks.items():
        if name not in NAMES:
            raise TypeError(f"annotation.hooks has no hook {name!r}")
        globals()[name] = function
