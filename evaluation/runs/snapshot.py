"""The panel as a run found it at start.

A run keeps its panel's method, threshold, graded flag and members (judge, samples, one
temperature per sample) in `Run.snapshot`. The run's tasks call the judges it lists, and
its scores, agreement and overlaps aggregate votes with its method: editing or re-staffing
the panel later changes neither a finished run's figures nor a running one's work.

The judges' connection settings (base URL, model, key variable, limits) are read live, so
that a wrong URL can be fixed and the failed calls retried; each verdict records the
parameters it was made with (JudgeCall.judge_params).
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.judges import tuning
from evaluation.judges.models import Judge, Panel
from evaluation.runs.models import Run


@dataclass(frozen=True)
class MemberSnapshot:
    judge_id: int
    name: str
    kind: str
    samples: int
    temperatures: tuple[float, ...]  # one per sample
    # The judge's prompt version when the run started tuned (instructions, examples: see
    # evaluation.judges.tuning); "" untuned: the judge's base version.
    prompt_version: str = ""

    def temperature(self, sample: int) -> float:
        return self.temperatures[sample]

    @property
    def calls_llm(self) -> bool:
        return self.kind == Judge.Kind.LLM


@dataclass(frozen=True)
class PanelSnapshot:
    panel: str
    method: str
    threshold: float
    graded: bool
    members: tuple[MemberSnapshot, ...]
    conversation: str = Panel.Conversation.LAST_TURN  # how answers with turns are graded

    @property
    def method_label(self) -> str:
        return Panel.Method(self.method).label

    def member(self, judge_id: int) -> MemberSnapshot | None:
        return next((m for m in self.members if m.judge_id == judge_id), None)

    @property
    def samples(self) -> int:
        """Votes per criterion: every member's samples."""
        return sum(m.samples for m in self.members)


def take(panel: Panel, dataset_id: int | None = None) -> dict:
    """The JSON stored in Run.snapshot of a run on the dataset (two queries; two more per
    LLM judge, three when its tuned version has no JudgeVersion row yet). Each member's
    tuning is the dataset's (evaluation.judges.tuning); without a dataset, none."""
    members = panel.members.select_related("judge").order_by("judge__name")
    # Written only when it is not the default, so that the snapshots of panels that never
    # set it stay what they were.
    conversation = (
        {"conversation": panel.conversation}
        if panel.conversation != Panel.Conversation.LAST_TURN
        else {}
    )
    return {
        **conversation,
        "panel": panel.name,
        "method": panel.method,
        "threshold": panel.threshold,
        "graded": panel.graded,
        "members": [
            {
                "judge": m.judge_id,
                "name": m.judge.name,
                "kind": m.judge.kind,
                "samples": m.samples,
                "temperatures": [m.temperature(s) for s in range(m.samples)],
                **tuning.snapshot_fields(m.judge, dataset_id),
            }
            for m in members
        ],
    }


def of(run: Run) -> PanelSnapshot:
    data = run.snapshot
    return PanelSnapshot(
        panel=data.get("panel", ""),
        method=run.panel_method,
        threshold=run.panel_threshold,
        graded=run.graded,
        members=_members(data),
        conversation=data.get("conversation", Panel.Conversation.LAST_TURN),
    )


def of_panel(panel: Panel) -> PanelSnapshot:
    """What a run of the panel starting now would freeze, before any run has it (a schedule
    being saved is checked as its runs will be), its members untuned: no dataset's tuning
    is read, and nothing is written."""
    data = take(panel)
    return PanelSnapshot(
        panel=panel.name,
        method=panel.method,
        threshold=panel.threshold,
        graded=panel.graded,
        members=_members(data),
        conversation=panel.conversation,
    )


def _members(data: dict) -> tuple[MemberSnapshot, ...]:
    return tuple(
        MemberSnapshot(
            judge_id=m["judge"],
            name=m["name"],
            kind=m["kind"],
            samples=m["samples"],
            temperatures=tuple(float(t) for t in m["temperatures"]),
            prompt_version=m.get("prompt_version", ""),
        )
        for m in data.get("members", ())
    )
