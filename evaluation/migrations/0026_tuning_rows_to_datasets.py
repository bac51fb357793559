"""Issue 38's move of each judge's tuning to the dataset that owns its content: the rows
(0025 says where each piece goes)."""

from __future__ import annotations

from django.db import migrations


def _datasets_of(examples, apps) -> set:
    """The datasets the examples were taken from; None stands for a source not found."""
    Adjudication = apps.get_model("evaluation", "Adjudication")
    Answer = apps.get_model("evaluation", "Answer")
    found: set = set()
    for example in examples or ():
        source = example.get("source") if isinstance(example, dict) else None
        if not isinstance(source, dict):
            continue  # typed by hand: no dataset's item
        dataset = (
            Adjudication.objects.filter(pk=source.get("adjudication"))
            .values_list("answer__query__dataset_id", flat=True)
            .first()
        )
        if dataset is None:
            dataset = (
                Answer.objects.filter(pk=source.get("answer"))
                .values_list("query__dataset_id", flat=True)
                .first()
            )
        found.add(dataset)
    return found


def _runs_with(apps, judge_id: int, version: str | None) -> set[int]:
    """Datasets of the runs whose panel snapshot has the judge (at `version` if given)."""
    Run = apps.get_model("evaluation", "Run")
    found = set()
    for dataset_id, snap in Run.objects.values_list("dataset_id", "snapshot").iterator():
        for member in (snap or {}).get("members", ()):
            if member.get("judge") != judge_id:
                continue
            if version is None or member.get("prompt_version") == version:
                found.add(dataset_id)
    return found


def _owners(apps, judge_id, instructions, examples, version) -> tuple[set[int], str]:
    """The datasets a tuning moves to, and why (for the printed report)."""
    sourced = _datasets_of(examples, apps)
    if None in sourced:
        return set(), "dropped: an example's adjudication and answer are gone"
    if len(sourced) > 1:
        listed = ", ".join(str(d) for d in sorted(sourced))
        return set(), f"dropped: its examples come from datasets {listed}"
    if sourced:
        return sourced, "moved to the dataset its examples come from"
    used = _runs_with(apps, judge_id, version)
    if not used:
        return set(), "dropped: no dataset's run used it"
    return used, "copied to the datasets whose runs used it"


def forwards(apps, schema_editor) -> None:
    Judge = apps.get_model("evaluation", "Judge")
    JudgeTuning = apps.get_model("evaluation", "JudgeTuning")
    JudgeVersion = apps.get_model("evaluation", "JudgeVersion")
    for judge in Judge.objects.order_by("pk"):
        if not ((judge.instructions or "").strip() or judge.examples):
            continue
        owners, why = _owners(apps, judge.pk, judge.instructions, judge.examples, None)
        for dataset_id in sorted(owners):
            JudgeTuning.objects.create(
                dataset_id=dataset_id, judge=judge, instructions=judge.instructions or "",
                examples=judge.examples or [],
            )  # fmt: skip
        _say(f"judge {judge.name!r}, current tuning: {why}", owners)
    for row in JudgeVersion.objects.filter(dataset__isnull=True).order_by("pk"):
        owners, why = _owners(apps, row.judge_id, row.instructions, row.examples, row.version)
        for dataset_id in sorted(owners):
            JudgeVersion.objects.create(
                judge_id=row.judge_id, dataset_id=dataset_id, version=row.version,
                instructions=row.instructions, examples=row.examples,
                created_by_id=row.created_by_id,
            )  # fmt: skip
        _say(f"judge {row.judge_id}, version {row.version}: {why}", owners)
        row.delete()


def _say(line: str, owners: set[int]) -> None:
    where = f" ({', '.join(f'dataset {d}' for d in sorted(owners))})" if owners else ""
    print(f"  Judge tuning: {line}{where}")  # noqa: T201 - the migration's report


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0025_tuning_belongs_to_a_dataset")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True)]
