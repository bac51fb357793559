"""A big rubric: one checklist of 2,000 criteria in 500 groups (five top groups, nested four
deep), one answer and an external judge's verdicts, imported from a dataset file, scored
(the run's scores under `tree`, the API's first read) and its pages rendered (the run's
answer page, laid out by group, and the checklist in the API). Issue 23 asks each under a
second.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/rubricsbench \\
    SECRET_KEY=bench-secret-key-not-for-production-0123456789 \\
    .venv/bin/python -m bench.rubrics

The database must be a benchmark's own: its name must contain "bench" (it is migrated and
the dataset is imported afresh under a new name at each run).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from bench import seed_scale


def rubric_file(folder: Path, *, criteria: int, groups: int, seed: int, name: str) -> Path:
    rng = random.Random(seed)
    q, author = "q1", "expert"
    group_rows = []
    for n in range(groups):
        # Five top groups, then each new group under one of the last 100: depths up to ~5.
        parent = "" if n < 5 else f"g{rng.randint(max(0, n - 100), n - 1)}"
        group_rows.append({"query": q, "author": author, "external_id": f"g{n}", "parent": parent,
                           "title": f"Aspect {n}", "weight": rng.choice([1, 2, 3]),
                           "position": n})  # fmt: skip
    criterion_rows, verdicts = [], []
    for n in range(criteria):
        weight = rng.choice([1, 2, 0.5])
        criterion_rows.append({"query": q, "author": author, "external_id": f"c{n}",
                               "position": n, "text": f"States the figure {n}.", "kind": "fact",
                               "weight": weight, "group": f"g{n % groups}"})  # fmt: skip
        verdicts.append({"run": "graded", "system": "S", "query": q, "author": author,
                         "criterion": f"c{n}", "judge": "Outside", "sample": 0,
                         "outcome": rng.choice(["pass", "fail"])})  # fmt: skip
    tables = {
        "queries": [{"external_id": q, "text": "A big rubric.", "query_date": "2025-01-01"}],
        "checklists": [{"query": q, "author": author, "status": "submitted"}],
        "groups": group_rows,
        "criteria": criterion_rows,
        "systems": [{"name": "S", "version": ""}],
        "answers": [{"system": "S", "query": q, "text": "An answer."}],
        "judges": [{"name": "Outside", "kind": "external"}],
        "panels": [{"name": "Outside panel", "method": "majority", "threshold": 0.5,
                    "members": json.dumps([{"judge": "Outside", "samples": 1}])}],
        "runs": [{"run": "graded", "kind": "imported", "panel": "Outside panel",
                  "status": "done"}],
        "verdicts": verdicts,
    }  # fmt: skip
    path = folder / "rubric.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("r/dataset.json", json.dumps({"name": name, "scoring": "tree"}))
        for table, rows in tables.items():
            archive.writestr(f"r/{table}.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rubrics", description=__doc__)
    parser.add_argument("--criteria", type=int, default=2000)
    parser.add_argument("--groups", type=int, default=500)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args(argv)
    seed_scale._setup_django()
    from django.core.management import call_command
    from django.db import connection

    if "bench" not in str(connection.settings_dict["NAME"]):
        raise SystemExit("Give a database of its own whose name contains 'bench'.")
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model
    from django.test import Client

    from evaluation.datasets.importer import import_dataset
    from evaluation.runs.models import Run

    with tempfile.TemporaryDirectory() as folder:
        name = f"Big rubric {time.time_ns()}"
        path = rubric_file(
            Path(folder), criteria=args.criteria, groups=args.groups, seed=args.seed, name=name
        )
        started = time.perf_counter()
        result = import_dataset(path)
        imported = time.perf_counter() - started
    run = Run.objects.get(dataset=result.dataset)
    admin, _ = get_user_model().objects.get_or_create(username="bench-rubrics", is_superuser=True)
    client = Client()
    client.force_login(admin)
    timings = {"import": imported}
    for label, url in (
        ("scores (API, first read)", f"/api/runs/{run.pk}/scores/"),
        ("scores (API, kept)", f"/api/runs/{run.pk}/scores/"),
        ("run page", f"/runs/{run.pk}/"),
        ("answer page by group", f"/runs/{run.pk}/answers/{run.verdicts.first().answer_id}/"),
        ("checklist (API)", f"/api/checklists/?query__dataset={result.dataset.pk}"),
    ):
        started = time.perf_counter()
        response = client.get(url, HTTP_HOST="localhost")
        timings[label] = time.perf_counter() - started
        if response.status_code != 200:
            raise SystemExit(f"{url}: {response.status_code}")
    value = client.get(f"/api/runs/{run.pk}/scores/", HTTP_HOST="localhost").json()
    print(f"{args.criteria:,} criteria in {args.groups:,} groups; tree value "
          f"{value['answers'][0]['value']:.4f}")  # fmt: skip
    for label, seconds in timings.items():
        print(f"{label:28} {seconds:6.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
