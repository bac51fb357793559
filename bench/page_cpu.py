"""One page's cost in process: wall and Python CPU time per request (best and median of
N, after one request that warms the caches), its queries and size; --profile prints a
cProfile of one more request, --sql each query of the last one with its time.

    python -m bench.page_cpu /runs/1/ [-n 5] [--user U] [--profile [--sort tottime]] [--sql]

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.page_cpu", description=__doc__)
    parser.add_argument("url")
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--user", default="bench-admin")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sort", default="cumulative", help="the profile's order: tottime…")
    parser.add_argument("--sql", action="store_true")
    args = parser.parse_args(argv)
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
    first = client.get(args.url, secure=True)
    if first.status_code != 200:
        parser.error(f"{args.url}: HTTP {first.status_code}")
    walls, cpus = [], []
    for _ in range(args.n):
        wall, cpu = time.perf_counter(), time.process_time()
        with CaptureQueriesContext(connection) as queries:
            response = client.get(args.url, secure=True)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    walls.sort()
    cpus.sort()
    print(f"{args.url}: wall best {walls[0]:.0f} ms median {walls[args.n // 2]:.0f}; Python "
          f"CPU best {cpus[0]:.0f} ms median {cpus[args.n // 2]:.0f}; {len(queries)} queries, "
          f"{len(response.content)} bytes; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    if args.sql:
        for query in queries.captured_queries:
            print(query["time"], query["sql"][:200])
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        client.get(args.url, secure=True)
        profile.disable()
        pstats.Stats(profile).sort_stats(args.sort).print_stats(40)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
