"""What the import tests start from: a dataset's files as an export writes them (written to
a folder, zipped when uploaded) and the empty database of a fresh installation."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from django.contrib.auth import get_user_model

from annotation.models import Dataset
from evaluation.answers.models import System
from evaluation.judges.models import Judge, Panel

META = {"schema_version": 1, "name": "Imported benchmark", "description": "From files."}
QUERY = {"external_id": "q1", "text": "What did Northwind report?", "query_date": "2026-10-01"}


def write(folder: Path, files: dict[str, object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        if isinstance(content, bytes):
            (folder / name).write_bytes(content)
        elif isinstance(content, list):
            (folder / name).write_text("".join(json.dumps(r) + "\n" for r in content))
        elif isinstance(content, dict):
            (folder / name).write_text(json.dumps(content))
        else:
            (folder / name).write_text(str(content))
    return folder


def checklist_files(status: str = "submitted", texts=("States revenue.",)) -> dict:
    return {
        "dataset.json": META,
        "queries.jsonl": [QUERY],
        "checklists.jsonl": [{"query": "q1", "author": "ann", "status": status}],
        "criteria.jsonl": [
            {"query": "q1", "author": "ann", "external_id": f"c{i}", "position": i, "text": t,
             "kind": "fact"}
            for i, t in enumerate(texts, start=1)
        ],
    }  # fmt: skip


def zipped(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in folder.iterdir():
            archive.write(path, f"bench/{path.name}")
    return buffer.getvalue()


def empty_the_database() -> None:
    """What a fresh installation holds: reference data (source types, guidelines,
    categories, groups) and no dataset, user, system, judge or panel."""
    for dataset in Dataset.objects.all():
        dataset.delete()
    System.objects.all().delete()
    Panel.objects.all().delete()
    Judge.objects.all().delete()
    get_user_model().objects.all().delete()
