"""A run's scores refresh after adjudications, against a count of the whole run (issue 44).

    export DATABASE_URL=postgresql://postgres@127.0.0.1:5432/h_month \\
        SECRET_KEY=bench-secret-key-not-for-production-0123456789
    .venv/bin/python -m bench.score_refresh --dataset 1 --runs 3 --adjudications 3

On a database seeded by ``bench.seed_scale`` (the month preset: nightly runs grading the
same answers), for the newest `--runs` runs of the dataset:

1. counts each run's scores whole and keeps them (`scores.keep_scores`, what a refresh did
   after every adjudication before the scores notes), timed;
2. writes `--adjudications` adjudications through the review service as `bench-reviewer`
   (on items of the newest run, each on another answer; they stay in the database);
3. refreshes each run's scores (`scores.refresh_scores`: the adjudicated answers counted
   again, the untouched pieces moved by their keys), timed, and checks that what it kept
   equals a count of the whole run, row for row.

Prints both times per run and their ratio (refresh / whole count; the refresh's bound is
the whole count it replaces). Nothing else should run beside it.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import asdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=int, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--adjudications", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from annotation.models import Criterion
    from evaluation.answers.models import Answer
    from evaluation.labels.models import Adjudication
    from evaluation.review import services as review
    from evaluation.runs import scores
    from evaluation.runs.models import Run, Verdict

    def fresh(run: Run) -> Run:
        return Run.objects.select_related("dataset").get(pk=run.pk)

    def every_row(run: Run) -> list[dict]:
        kept = scores.run_scores(fresh(run))
        return [asdict(a) for a in kept[0 : kept.count]] + [asdict(s) for s in kept.systems]

    runs = list(
        Run.objects.filter(dataset_id=args.dataset, status=Run.Status.DONE)
        .exclude(kind=Run.Kind.CROSS_EVALUATION)
        .order_by("-pk")[: args.runs]
    )
    if not runs:
        print(f"No ended run in dataset {args.dataset}.", file=sys.stderr)
        return 2
    whole = {}
    for run in runs:
        started = time.monotonic()
        counted = scores.keep_scores(fresh(run))
        whole[run.pk] = time.monotonic() - started
        print(f"run {run.pk}: whole count of {counted} answers in {whole[run.pk]:.2f} s")

    reviewer = get_user_model().objects.get(username="bench-reviewer")
    rng = random.Random(args.seed)
    verdicts = Verdict.objects.filter(run=runs[0]).order_by("pk")
    size = verdicts.count()
    done, answers = 0, set()
    while done < args.adjudications:
        verdict = verdicts[rng.randrange(size)]
        if verdict.answer_id in answers:
            continue
        answers.add(verdict.answer_id)
        answer = Answer.objects.select_related("query").get(pk=verdict.answer_id)
        criterion = Criterion.objects.get(pk=verdict.criterion_id)
        current = Adjudication.objects.filter(answer=answer, criterion=criterion).first()
        review.adjudicate(
            answer=answer, criterion=criterion, by=reviewer, label=rng.choice(["pass", "fail"]),
            expected_version=current.version if current else None,
        )  # fmt: skip
        done += 1
    print(f"{done} adjudications written")

    failed = False
    for run in runs:
        started = time.monotonic()
        counted = scores.refresh_scores(fresh(run))
        took = time.monotonic() - started
        patched = every_row(run)
        scores.keep_scores(fresh(run))
        exact = patched == every_row(run)
        failed |= not exact
        print(
            f"run {run.pk}: refresh counted {counted} answers in {took:.2f} s; "
            f"ratio to the whole count {took / whole[run.pk]:.2f}; "
            f"{'equal to' if exact else 'DIFFERENT FROM'} a whole count"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
