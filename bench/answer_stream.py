"""What an answer arriving on its own (an API client posting answers one at a time) costs
the next agreement read of a large dataset: now, and with the review-revision bump a new
answer made before (the review revision and the scores counter, as an adjudication of a
system answer moves them: `bump(dataset, Event.ADJUDICATION)`, called here after the same
insert, as the old signal did). Rolls every answer back, so the data stays as seeded.

    .venv/bin/python -m bench.answer_stream --dataset 1 --answers 5

Run it on `bench.seed_scale --preset agreement` (200,000 labelled items).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.answer_stream")
    parser.add_argument("--dataset", type=int, required=True)
    parser.add_argument("--answers", type=int, default=5)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()
    from django.db import transaction

    from annotation.models import Dataset, Query
    from evaluation.agreement.selectors import agreement_report
    from evaluation.answers.models import Answer
    from evaluation.kept.events import Event, bump

    dataset = Dataset.objects.get(pk=args.dataset)
    query = Query.objects.filter(dataset=dataset).order_by("pk").first()
    system = Answer.objects.filter(query=query).order_by("pk").first().system
    load = os.getloadavg()

    def stream(n: int, *, bump_as_before: bool) -> list[float]:
        reads = []
        for i in range(n):
            with transaction.atomic():
                Answer.objects.create(
                    query=query, system=system, run_label=f"bench-stream-{bump_as_before}-{i}",
                    text="An answer posted on its own.",
                )  # fmt: skip
                if bump_as_before:
                    bump(dataset.pk, Event.ADJUDICATION)  # number and scores, as before
            started = time.perf_counter()
            agreement_report(dataset)
            reads.append(time.perf_counter() - started)
        return reads

    class Rollback(Exception):
        pass

    try:
        with transaction.atomic():
            agreement_report(dataset)  # kept before the answers arrive
            now = stream(args.answers, bump_as_before=False)
            before = stream(args.answers, bump_as_before=True)
            raise Rollback
    except Rollback:
        pass
    ms = 1000
    print(f"dataset {dataset.pk}; load average before {load[0]:.1f}")
    for name, reads in (("now", now), ("with the bump made before", before)):
        median, worst = statistics.median(reads) * ms, max(reads) * ms
        print(f"agreement read after a new answer, {name}: median {median:.1f} ms "
              f"(worst {worst:.1f} ms)")  # fmt: skip
    print(f"ratio now / before: {statistics.median(now) / statistics.median(before):.4f}")
    print(f"load average after {os.getloadavg()[0]:.1f}; every answer rolled back")
    return 0


if __name__ == "__main__":
    sys.exit(main())
