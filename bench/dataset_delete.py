"""Deleting a big dataset: Django's cascading `dataset.delete()` (what DELETE
/api/datasets/{id}/ ran in the request before) against the batched deletion task
(evaluation.datasets.purge), on equal data.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/purgebench \\
    SECRET_KEY=bench-secret-key-not-for-production-0123456789 \\
    .venv/bin/python -m bench.dataset_delete --preset analytics --seed 12

It seeds the preset's dataset with bench.seed_scale (COPY), counts the rows every table
gained, times the old delete in one transaction (as the old service ran it), seeds the same
preset and seed again (the same rows), marks it as the API now does and times
`purge.purge()`, the task's body, called in this process (no broker between: the task
adds one message). It prints rows, seconds, rows/s, the ratio, the longest batch (the
longest transaction the task holds), PostgreSQL backend CPU seconds and the load average
before and after each side (the machine may be shared: CPU time is the steadier figure).
The database must be a benchmark's own: its name must contain "bench".
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from bench import seed_scale
from bench.pg_cpu import backend_cpu_seconds


def _counts() -> dict[str, int]:
    from django.apps import apps

    return {
        m._meta.label: m._base_manager.count() for m in apps.get_models(include_auto_created=True)
    }


def _gained(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {t: after[t] - before.get(t, 0) for t in after if after[t] != before.get(t, 0)}


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def _seed(preset: str, seed: int) -> tuple[int, dict[str, int]]:
    from annotation.models import Dataset

    before = _counts()
    summary = seed_scale.seed(preset, seed_value=seed, out=open(os.devnull, "w"))  # noqa: SIM115
    gained = _gained(before, _counts())
    name = f"Scale {preset} (seed {seed})"
    del summary
    return Dataset.objects.get(name=name).pk, gained


def _side(label: str, delete, dataset_id: int, gained: dict[str, int]) -> float:
    rows = sum(gained.values())
    before = _counts()
    cpu, load = backend_cpu_seconds(), _load()
    started = time.perf_counter()
    delete(dataset_id)
    wall = time.perf_counter() - started
    cpu_used = (backend_cpu_seconds() or 0) - (cpu or 0)
    change = _gained(before, _counts())
    removed = -sum(v for v in change.values() if v < 0)
    left = {t: n + change.get(t, 0) for t, n in gained.items() if n + change.get(t, 0)}
    print(
        f"{label:>10}: {removed:,} rows deleted (seeded {rows:,}) in {wall:.1f} s = "
        f"{removed / wall:,.0f} rows/s; PostgreSQL backend CPU {cpu_used:.1f} s; "
        f"load average {load} before, {_load()} after",
        flush=True,
    )
    added = {t: n for t, n in change.items() if n > 0}
    print(f"{'':>10}  rows added by the delete: {added or 'none'}", flush=True)
    print(f"{'':>10}  rows the seed added that are left: {left or 'none'}", flush=True)
    return wall


def _old(dataset_id: int) -> None:
    from django.db import transaction

    from annotation.models import Dataset

    with transaction.atomic():  # the old annotation.services.dataset_delete
        Dataset.objects.get(pk=dataset_id).delete()


def _new(batch: int):
    from django.utils import timezone

    from annotation.models import Dataset
    from evaluation.datasets import purge

    longest = [0.0, 0]
    real = purge.delete_batch

    def timed(step, dataset_id, size):
        started = time.perf_counter()
        n = real(step, dataset_id, size)
        longest[0] = max(longest[0], time.perf_counter() - started)
        longest[1] += 1
        return n

    def run(dataset_id: int) -> None:
        Dataset.objects.filter(pk=dataset_id).update(deleting_since=timezone.now())
        purge.delete_batch = timed
        try:
            purge.purge(dataset_id=dataset_id, batch=batch)
        finally:
            purge.delete_batch = real

    return run, longest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dataset_delete", description=__doc__)
    parser.add_argument("--preset", choices=sorted(seed_scale.PRESETS), default="analytics")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--batch", type=int, default=None, help="rows per DELETE (5,000)")
    parser.add_argument("--skip-old", action="store_true", help="time the new task only")
    args = parser.parse_args(argv)
    seed_scale._setup_django()
    from django.db import connection

    if connection.vendor != "postgresql" or "bench" not in connection.settings_dict["NAME"]:
        raise SystemExit("Give a PostgreSQL database of its own whose name contains 'bench'.")

    old_wall = None
    if not args.skip_old:
        dataset_id, gained = _seed(args.preset, args.seed)
        rows = sum(gained.values())
        verdicts = gained.get("evaluation.Verdict", 0)
        print(f"seeded {args.preset}/{args.seed}: {rows:,} rows, {verdicts:,} verdicts", flush=True)
        old_wall = _side("old", _old, dataset_id, gained)
    dataset_id, gained = _seed(args.preset, args.seed)
    rows = sum(gained.values())
    print(f"seeded {args.preset}/{args.seed}: {rows:,} rows again", flush=True)
    run, longest = _new(args.batch)
    new_wall = _side("new task", run, dataset_id, gained)
    print(f"new task: {longest[1]:,} batches, the longest {longest[0]:.2f} s", flush=True)
    if old_wall:
        print(f"ratio old/new wall time: {old_wall / new_wall:.1f}×", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
