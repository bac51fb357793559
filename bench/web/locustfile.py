"""Locust users for bench.web: log in, then request the pages of BENCH_WEB_PAGES (JSON: a
list of [name, url, weight]) at random by weight, until BENCH_WEB_REQUESTS requests have
been sent in all. Only 127.0.0.1: the runner refuses any other host."""

from __future__ import annotations

import json
import os
import random
import re

from locust import HttpUser, between, events, task

PAGES: list[tuple[str, str, int]] = json.loads(os.environ.get("BENCH_WEB_PAGES", "[]"))
LIMIT = int(os.environ.get("BENCH_WEB_REQUESTS", "1000"))
USERNAME = os.environ.get("BENCH_WEB_USER", "bench-admin")
PASSWORD = os.environ.get("BENCH_WEB_PASSWORD", "bench-password")
sent = 0


class Reader(HttpUser):
    # Think time between two pages, as a person reading them (and what keeps "20 concurrent
    # users" from being 20 closed loops with no pause).
    wait_time = between(0.5, 1.5)

    def on_start(self) -> None:
        page = self.client.get("/accounts/login/", name="(login form)")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        self.client.post(
            "/accounts/login/",
            {"username": USERNAME, "password": PASSWORD,
             "csrfmiddlewaretoken": token.group(1) if token else ""},
            headers={"Referer": f"{self.host}/accounts/login/"}, name="(login)",
        )  # fmt: skip

    @task
    def page(self) -> None:
        global sent
        if sent >= LIMIT:
            self.environment.runner.quit()
            return
        sent += 1
        name, url, _weight = random.choices(PAGES, weights=[p[2] for p in PAGES])[0]
        with self.client.get(url, name=name, catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"{response.status_code}")


@events.init.add_listener
def _check(environment, **kwargs) -> None:
    host = environment.host or ""
    if host and not host.startswith(("http://127.0.0.1", "http://localhost")):
        raise SystemExit(f"bench.web only loads a server on this machine, not {host}")
