"""Whose grades a cross-evaluation figure reads: the latest cross-evaluation run of each
query, one run, or the human labels (`Source`), and the dataset's cross-evaluation runs.
Below both the selectors and the counted figures, which import it."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.models import Dataset
from config.ids import is_id
from evaluation.runs.models import Run


class UnknownSource(ValueError):
    pass


@dataclass(frozen=True)
class Source:
    kind: str  # "latest", "run" or "human"
    run_id: int | None = None

    @classmethod
    def parse(cls, value: str | None) -> Source:
        value = (value or "latest").strip()
        if value in ("latest", "human"):
            return cls(value)
        prefix, _, number = value.partition(":")
        if prefix == "run" and is_id(number):
            return cls("run", int(number))
        raise UnknownSource(f"Unknown source {value!r}: use latest, human or run:<id>.")

    def __str__(self) -> str:
        return f"run:{self.run_id}" if self.kind == "run" else self.kind


def cross_evaluation_runs(dataset: Dataset):
    return (
        Run.objects.filter(dataset=dataset, kind=Run.Kind.CROSS_EVALUATION)
        .select_related("panel")
        .order_by("-created_at", "-id")
    )
