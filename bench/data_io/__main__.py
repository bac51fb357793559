"""Data I/O benchmark: export and import of a dataset with N verdicts (default 1,000,000).

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/wt11bench DEBUG=1 \\
        .venv/bin/python -m bench.data_io [--verdicts 1000000] [--formats jsonl]
    .venv/bin/python -m bench.data_io --dataset 2    # export a seeded dataset as it is

1. Makes (once) a generated dataset of about N verdicts (bench/data_io/generate.py: 10
   systems, two experts × 25 criteria per query, 5 judges × 2 samples, labels on 10% of
   items, one adjudication per answer).
2. Export, in a child process: `export_chunks` of answers, verdicts, labels and
   adjudications; time to the first byte, rows of verdicts per second, peak RSS.
3. Import, in a child process: the dataset is renamed aside and the zip imported as new;
   rows per second (verdicts, labels, adjudications and answers written), peak RSS.
4. Prints both next to the bounds of issue 11 and Label Studio 1.23.2's figures measured on
   this machine. Each child's peak RSS comes from wait4(); the machine is shared, so the
   figures are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.pg_cpu import backend_cpu_seconds

ROOT = Path(__file__).resolve().parents[2]
NAME = "Data I/O bench {n}"
BOUNDS = {"import_rows_s": 10_000, "export_rows_s": 50_000, "ttfb_s": 1.0, "rss_mb": 200}
LABEL_STUDIO = {"export_rows_s": 474, "export_ttfb_s": 105.0, "export_rss_mb": 1087,
                "import_rows_s": 600}  # fmt: skip


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def _server_cpu_since(before: float | None) -> float | None:
    after = backend_cpu_seconds()
    return None if before is None or after is None else after - before


def child_export(dataset_id: int, out: str, formats: list[str]) -> dict:
    _django()
    from annotation.models import Dataset
    from evaluation.datasets.export import ExportOptions, export_chunks
    from evaluation.runs.models import Verdict

    dataset = Dataset.objects.get(pk=dataset_id)
    rows = Verdict.objects.filter(run__dataset=dataset).count()
    options = ExportOptions.parse(["answers", "verdicts", "labels", "adjudications"], formats)
    server = backend_cpu_seconds()
    started = time.perf_counter()
    first = None
    size = 0
    with open(out, "wb") as handle:
        for chunk in export_chunks(dataset, options):
            if first is None and chunk:
                first = time.perf_counter() - started
            size += len(chunk)
            handle.write(chunk)
    seconds = time.perf_counter() - started
    return {
        "verdicts": rows, "seconds": seconds, "ttfb": first, "bytes": size,
        "server_cpu": _server_cpu_since(server),
    }  # fmt: skip


def child_import(path: str) -> dict:
    _django()
    from evaluation.datasets.importer import import_dataset

    server = backend_cpu_seconds()
    started = time.perf_counter()
    result = import_dataset(Path(path))
    seconds = time.perf_counter() - started
    big = ("answers", "verdicts", "labels", "adjudications")
    return {
        "seconds": seconds,
        "rows": sum(result.created.get(t, 0) + result.updated.get(t, 0) for t in big),
        "verdicts": result.created.get("verdicts", 0),
        "dataset": result.dataset.pk,
        "server_cpu": _server_cpu_since(server),
    }


def _run_child(*args: str) -> tuple[dict, float]:
    """The child's JSON result, with its peak RSS (MB) and CPU seconds (user + system)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.data_io", "child", *args],
        cwd=ROOT, stdout=subprocess.PIPE, env=os.environ.copy(),
    )  # fmt: skip
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise SystemExit(f"child {args[0]} failed ({status})")
    result = json.loads(output.decode().strip().splitlines()[-1])
    result["cpu"] = usage.ru_utime + usage.ru_stime
    return result, usage.ru_maxrss / 1024


def prepare(verdicts: int) -> int:
    _django()
    from annotation.models import Dataset
    from bench.data_io.generate import generate

    name = NAME.format(n=verdicts)
    dataset = Dataset.objects.filter(name=name).first()
    if dataset is None:
        per_query = 10 * 50 * 5 * 2
        started = time.perf_counter()
        dataset = generate(
            name, queries=max(1, verdicts // per_query), systems=10, experts=2, criteria=25,
            judges=5, samples=2, label_share=0.1,
        )  # fmt: skip
        print(f"generated {name} in {time.perf_counter() - started:.0f} s", flush=True)
    return dataset.pk


def set_aside(dataset_id: int) -> None:
    """Rename the source dataset so that the import creates its copy anew; drop an earlier
    copy (raw deletes: the ORM's cascade would load a million verdicts)."""
    from django.db import connection

    from annotation.models import Dataset

    source = Dataset.objects.get(pk=dataset_id)
    name = source.name
    copy = Dataset.objects.filter(name=name + " (copy)").first()
    Dataset.objects.filter(pk=source.pk).update(name=name + " (source)")
    if copy is not None:
        with connection.cursor() as cursor:
            for table, where in (
                ("evaluation_verdict", "run_id IN (SELECT id FROM evaluation_run WHERE dataset_id = %s)"),
                ("evaluation_humanlabel", "answer_id IN (SELECT a.id FROM evaluation_answer a JOIN annotation_query q ON a.query_id = q.id WHERE q.dataset_id = %s)"),
                ("evaluation_adjudication", "answer_id IN (SELECT a.id FROM evaluation_answer a JOIN annotation_query q ON a.query_id = q.id WHERE q.dataset_id = %s)"),
            ):  # fmt: skip
                cursor.execute(f"DELETE FROM {table} WHERE {where}", [copy.pk])
        copy.delete()


def restore(dataset_id: int, imported_id: int) -> None:
    from annotation.models import Dataset

    source = Dataset.objects.get(pk=dataset_id)
    original = source.name.removesuffix(" (source)")
    Dataset.objects.filter(pk=imported_id).update(name=original + " (copy)")
    Dataset.objects.filter(pk=dataset_id).update(name=original)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "child":
        kind, rest = argv[1], argv[2:]
        if kind == "export":
            result = child_export(int(rest[0]), rest[1], rest[2].split(","))
        else:
            result = child_import(rest[0])
        print(json.dumps(result), flush=True)
        return
    parser = argparse.ArgumentParser(prog="python -m bench.data_io")
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--formats", default="jsonl", help="jsonl, csv, parquet (comma-separated)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/data-io-bench.zip"))
    parser.add_argument(
        "--only", choices=("export", "import"), help="one direction (import: of --out)"
    )
    parser.add_argument(
        "--dataset", type=int,
        help="export this dataset instead of a generated one (a seeded preset: the month "
        "preset's 21.6 million verdicts); implies --only export",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.dataset is not None:
        dataset_id, args.only = args.dataset, "export"
    else:
        dataset_id = prepare(args.verdicts)
    load = os.getloadavg()[0]
    lines = [
        f"data I/O benchmark: formats {args.formats}, database "
        f"{os.environ.get('DATABASE_URL', 'sqlite').split('@')[-1]}, load average {load:.1f} "
        "at the start (2 shared cores: a load above 2 slows every figure)",
    ]
    if args.only != "import":
        export, export_rss = _run_child("export", str(dataset_id), str(args.out), args.formats)
        lines.append(_export_line(export, export_rss))
    if args.only != "export":
        set_aside(dataset_id)
        imported, import_rss = _run_child("import", str(args.out))
        restore(dataset_id, imported["dataset"])
        lines.append(_import_line(imported, import_rss))
    lines.append(f"load average at the end {os.getloadavg()[0]:.1f}")
    print("\n".join(lines))


def _export_line(export: dict, export_rss: float) -> str:
    export_rate = export["verdicts"] / export["seconds"]
    return (
        f"export: {export['verdicts']:,} verdicts in {export['seconds']:.1f} s "
        f"(CPU: exporting process {export['cpu']:.1f} s, PostgreSQL "
        f"{_seconds(export['server_cpu'])}), {export_rate:,.0f} verdicts/s "
        f"(bound {BOUNDS['export_rows_s']:,}: {export_rate / BOUNDS['export_rows_s']:.2f}×; "
        f"Label Studio {LABEL_STUDIO['export_rows_s']}/s: {export_rate / LABEL_STUDIO['export_rows_s']:.0f}×), "
        f"first byte {export['ttfb'] * 1000:.0f} ms (bound 1 s; Label Studio "
        f"{LABEL_STUDIO['export_ttfb_s']:.0f} s), peak RSS {export_rss:.0f} MB (bound 200; "
        f"Label Studio {LABEL_STUDIO['export_rss_mb']}), zip {export['bytes'] / 1e6:.0f} MB"
    )  # fmt: skip


def _seconds(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.1f} s"


def _import_line(imported: dict, import_rss: float) -> str:
    import_rate = imported["rows"] / imported["seconds"]
    return (
        f"import: {imported['seconds']:.1f} s (CPU: importing process {imported['cpu']:.1f} s, "
        f"PostgreSQL {_seconds(imported['server_cpu'])}), "
        f"{import_rate:,.0f} rows/s over {imported['rows']:,} "
        f"rows (bound {BOUNDS['import_rows_s']:,}: {import_rate / BOUNDS['import_rows_s']:.2f}×; "
        f"Label Studio {LABEL_STUDIO['import_rows_s']}/s: {import_rate / LABEL_STUDIO['import_rows_s']:.0f}×), "
        f"peak RSS {import_rss:.0f} MB (bound 200)"
    )  # fmt: skip


if __name__ == "__main__":
    main()
