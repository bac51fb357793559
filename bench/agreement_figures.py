"""Write a dataset's agreement figures (the JSON of GET /api/agreement/) to a file, or check
them against a file written earlier, to 4 decimals.

    .venv/bin/python -m bench.agreement_figures --dataset 3 --write bench/results/x.json
    .venv/bin/python -m bench.agreement_figures --dataset 3 --check bench/results/x.json

Used to show that the SQL rewrite of the agreement figures (issue 14) changed no number:
the file in bench/results/ was written by the previous, pure-Python code on the seeded
200,000-item dataset (``bench.seed_scale --preset agreement``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def rounded(value: object, places: int = 4) -> object:
    if isinstance(value, float):
        return round(value, places)
    if isinstance(value, dict):
        return {k: rounded(v, places) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v, places) for v in value]
    return value


def differences(expected: object, actual: object, path: str = "") -> list[str]:
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = []
        for key in sorted(set(expected) | set(actual)):
            if key not in expected or key not in actual:
                found.append(f"{path}/{key}: only in {'actual' if key in actual else 'expected'}")
            else:
                found += differences(expected[key], actual[key], f"{path}/{key}")
        return found
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path}: {len(expected)} entries expected, {len(actual)} found"]
        return [d for n, (e, a) in enumerate(zip(expected, actual, strict=True))
                for d in differences(e, a, f"{path}[{n}]")]  # fmt: skip
    return [] if expected == actual else [f"{path}: expected {expected!r}, found {actual!r}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agreement_figures")
    parser.add_argument("--dataset", type=int, required=True)
    parser.add_argument("--run", type=int)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write")
    group.add_argument("--check")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()
    from annotation.models import Dataset
    from evaluation.agreement.selectors import agreement_report
    from evaluation.agreement.serialize import report_data

    dataset = Dataset.objects.get(pk=args.dataset)
    started = time.perf_counter()
    data = rounded(report_data(agreement_report(dataset, args.run)))
    elapsed = time.perf_counter() - started
    print(f"agreement_report + report_data: {elapsed:.2f} s", file=sys.stderr)
    data.pop("dataset", None)  # the id differs between seeded databases; the rest must not
    if args.write:
        with open(args.write, "w") as out:
            json.dump(data, out, indent=1, sort_keys=True)
        print(f"wrote {args.write}")
        return 0
    with open(args.check) as handle:
        expected = json.load(handle)
    expected["run"] = data["run"] = None if data["run"] is None else {"kind": data["run"]["kind"]}
    found = differences(rounded(expected), data)
    for line in found[:50]:
        print(line)
    print(f"{len(found)} differences (to 4 decimals)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
