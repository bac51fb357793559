"""One page's cost in process: wall and Python CPU time per request (best and median of
N, after one request that warms the caches), its queries and size; --profile prints a
cProfile of one more request, --sql each query of the last one with its time.

    python -m bench.page_cpu /runs/1/ [-n 5] [--user U] [--profile [--sort tottime]] [--sql]
    python -m bench.page_cpu --pages 1 [-n 5]    # every page bench.web loads, by its share

--pages D measures each page that `bench.web --dataset D` loads, in the same way, and
prints what share of a reader's time in the server it takes (its weight in the load times
its median wall time): where cutting a page's cost frees the most of the machine for the
others, since under load every page waits for the CPU the others hold.

Run with the bench environment (DATABASE_URL of the seeded database, VAR_DIR with
collected static files: `manage.py collectstatic`). CPU time is steadier than wall time
on a shared machine; to compare with older code, run the same command in a checkout of it.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from dataclasses import dataclass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.page_cpu", description=__doc__)
    parser.add_argument("url", nargs="?")
    parser.add_argument("--pages", type=int, metavar="DATASET",
                        help="every page of bench.web --dataset DATASET, by its share")  # fmt: skip
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--user", default="bench-admin")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sort", default="cumulative", help="the profile's order: tottime…")
    parser.add_argument("--sql", action="store_true")
    args = parser.parse_args(argv)
    if (args.url is None) == (args.pages is None):
        parser.error("give a URL or --pages DATASET")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    settings.ALLOWED_HOSTS = ["*"]
    client = Client()
    client.force_login(get_user_model().objects.get(username=args.user))

    def measure(url: str) -> Measure:
        first = client.get(url, secure=True)
        if first.status_code != 200:
            parser.error(f"{url}: HTTP {first.status_code}")
        walls, cpus = [], []
        for _ in range(args.n):
            wall, cpu = time.perf_counter(), time.process_time()
            with CaptureQueriesContext(connection) as queries:
                response = client.get(url, secure=True)
            walls.append((time.perf_counter() - wall) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
        return Measure(sorted(walls), sorted(cpus), queries.captured_queries, response)

    if args.pages is not None:
        from bench.web.__main__ import pages

        print_shares([(name, weight, measure(url)) for name, url, weight, _ in pages(
            args.pages, None)])  # fmt: skip
        return 0
    m = measure(args.url)
    print(f"{args.url}: wall best {m.walls[0]:.0f} ms median {m.wall:.0f}; Python "
          f"CPU best {m.cpus[0]:.0f} ms median {m.cpu:.0f}; {len(m.queries)} queries, "
          f"{len(m.response.content)} bytes; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    if args.sql:
        for query in m.queries:
            print(query["time"], query["sql"][:200])
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        client.get(args.url, secure=True)
        profile.disable()
        pstats.Stats(profile).sort_stats(args.sort).print_stats(40)
    return 0


@dataclass
class Measure:
    walls: list[float]  # ms, sorted
    cpus: list[float]
    queries: list[dict]
    response: object

    @property
    def wall(self) -> float:
        return self.walls[len(self.walls) // 2]

    @property
    def cpu(self) -> float:
        return self.cpus[len(self.cpus) // 2]


def print_shares(measured: list[tuple[str, int, Measure]]) -> None:
    """Each page's median wall and Python CPU, and its share of the load's server time:
    weight × median wall over the sum of them (the rest of the wall is mostly PostgreSQL's
    time, on the same cores here)."""
    total = sum(weight * m.wall for _, weight, m in measured)
    print(f"{'page':32} {'weight':>6} {'wall ms':>8} {'Python ms':>9} {'queries':>7} {'share':>6}")
    for name, weight, m in sorted(measured, key=lambda row: -row[1] * row[2].wall):
        print(f"{name:32} {weight:6} {m.wall:8.0f} {m.cpu:9.0f} {len(m.queries):7} "
              f"{weight * m.wall / total:6.1%}")  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    raise SystemExit(main())
