"""What a reviewer's label costs the agreement figures of a large dataset: the label write
itself, and the next agreement read, which finds the counts the write moved (the item's
own counts taken away and added back, evaluation.agreement.delta) instead of recounting
every labelled item. Ends with a recount and the number of figures that differ from the
kept ones (0 expected), and rolls every label back, so the data stays as seeded.

    .venv/bin/python -m bench.agreement_labels --dataset 2 --labels 20

Run it on `bench.seed_scale --preset agreement` (200,000 labelled items).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agreement_labels")
    parser.add_argument("--dataset", type=int, required=True)
    parser.add_argument("--labels", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from annotation.models import Dataset
    from bench.agreement_figures import differences, rounded
    from evaluation.agreement.selectors import agreement_report
    from evaluation.agreement.serialize import report_data
    from evaluation.kept.models import KeptFigure
    from evaluation.labels.models import HumanLabel
    from evaluation.review import services as review

    dataset = Dataset.objects.get(pk=args.dataset)
    rater, _ = get_user_model().objects.get_or_create(username="bench-labeller")
    labels = HumanLabel.objects.filter(answer__query__dataset=dataset).order_by("pk")
    total = labels.count()
    rng = random.Random(args.seed)
    picked = [
        labels.select_related("answer", "criterion")[rng.randrange(total)]
        for _ in range(args.labels)
    ]
    load = os.getloadavg()
    writes, reads = [], []

    class Rollback(Exception):
        pass

    try:
        with transaction.atomic():
            started = time.perf_counter()
            agreement_report(dataset)
            warm = time.perf_counter() - started
            for label in picked:
                started = time.perf_counter()
                verdict = rng.choice(["pass", "fail"])
                with transaction.atomic():
                    review.label_set(answer=label.answer, criterion=label.criterion,
                                     reviewer=rater, label=verdict)  # fmt: skip
                writes.append(time.perf_counter() - started)
                started = time.perf_counter()
                kept = report_data(agreement_report(dataset))
                reads.append(time.perf_counter() - started)
            KeptFigure.objects.filter(dataset=dataset).delete()
            started = time.perf_counter()
            counted = report_data(agreement_report(dataset))
            recount = time.perf_counter() - started
            found = differences(rounded(counted), rounded(kept))
            raise Rollback
    except Rollback:
        pass
    ms = 1000
    print(f"dataset {dataset.pk}: {total:,} labels; load average before {load[0]:.1f}")
    print(f"first read (warm or counted):      {warm:8.2f} s")
    print(f"label write, median of {len(writes)}:       {statistics.median(writes) * ms:8.1f} ms"
          f"  (worst {max(writes) * ms:.1f} ms)")  # fmt: skip
    print(f"agreement read after a label:      {statistics.median(reads) * ms:8.1f} ms"
          f"  (worst {max(reads) * ms:.1f} ms)")  # fmt: skip
    print(f"recount of every labelled item:    {recount:8.2f} s  (what a read after a label "
          f"cost before)")  # fmt: skip
    print(f"ratio read after a label / recount: {statistics.median(reads) / recount:.4f}")
    print(f"figures differing from the recount: {len(found)}")
    for line in found[:20]:
        print("  " + line, file=sys.stderr)
    print(f"load average after {os.getloadavg()[0]:.1f}; every label rolled back")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
