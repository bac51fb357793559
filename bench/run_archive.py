"""Archive one run's verdicts to Parquet and restore them (issue 44, retention): rates,
bytes per verdict in the table and in the file, and whether the restore is exact.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/h_bench \\
        .venv/bin/python -m bench.seed_scale --preset month-tenth --seed 14
    DATABASE_URL=... .venv/bin/python -m bench.run_archive --dataset 1 [--keep]

The run is the dataset's oldest; it is restored at the end unless --keep. Results: one JSON
object on stdout (docs/benchmarks.md, "Archive and restore").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run_archive", description=__doc__)
    parser.add_argument("--dataset", type=int, required=True)
    parser.add_argument("--keep", action="store_true", help="Leave the run archived.")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    os.environ.setdefault("RUN_ARCHIVE_DIR", tempfile.mkdtemp(prefix="run-archive-"))
    import django

    django.setup()
    from django.db import connection

    from evaluation.archive import services
    from evaluation.runs.models import Run

    run = Run.objects.filter(dataset_id=args.dataset, archived_at=None).order_by("pk").first()
    if run is None:
        raise SystemExit(f"No run to archive in dataset {args.dataset}.")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_total_relation_size('evaluation_verdict'), "
            "pg_relation_size('evaluation_verdict'), count(*) FROM evaluation_verdict"
        )
        total, heap, rows = cursor.fetchone()
    before = services.checksum(run.pk)
    started = time.perf_counter()
    archive = services.archive_run(run)
    archived_s = time.perf_counter() - started
    result = {
        "run": run.pk,
        "verdicts": archive.verdicts,
        "archive_s": round(archived_s, 2),
        "archive_verdicts_per_s": round(archive.verdicts / archived_s),
        "file_bytes": archive.size,
        "file_bytes_per_verdict": round(archive.size / archive.verdicts, 1),
        "table_bytes_per_verdict_with_indexes": round(total / rows, 1),
        "table_heap_bytes_per_verdict": round(heap / rows, 1),
        "table_verdicts": rows,
    }
    if not args.keep:
        started = time.perf_counter()
        services.restore_run(Run.objects.get(pk=run.pk))
        restored_s = time.perf_counter() - started
        result["restore_s"] = round(restored_s, 2)
        result["restore_verdicts_per_s"] = round(archive.verdicts / restored_s)
        result["exact"] = services.checksum(run.pk) == before
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
