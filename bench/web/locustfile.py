"""Locust users for bench.web. Only 127.0.0.1: the runner refuses any other host.

- Reader (bench-admin): requests the pages of BENCH_WEB_PAGES (JSON: a list of
  [name, url, weight]) at random by weight, 0.5–1.5 s apart.
- Labeller (BENCH_WEB_LABELLERS of them, logged in as the reviewers of
  BENCH_WEB_ACCOUNTS in turn): opens the labelling queue of BENCH_WEB_DATASET, an item of
  it, and every BENCH_WEB_WRITE_EVERY seconds labels one criterion of that item pass or
  fail at random through the review page's own htmx POST; moves on after
  BENCH_WEB_PER_ITEM criteria; every BENCH_WEB_ADJUDICATE_EVERY-th write adjudicates an item
  of the disagreement queue instead, with the version its form carries. After every
  BENCH_WEB_MEASURE_EVERY-th label it measures, beside its work, how long until the label
  shows in the agreement API and in the labelling queue (results/visible in
  BENCH_WEB_RESULTS).

The measured window opens once all BENCH_WEB_USERS users have signed in: each waits for the
others, then the statistics start afresh. Twenty sign-ins at once are a storm of password
hashing (about 0.4 s of CPU each) that no working team makes, and it would land in every
page's tail; its own figure is kept apart (results/sign_in). The window ends after
BENCH_WEB_REQUESTS requests in all (the latency polls not counted) or BENCH_WEB_RUN_TIME
seconds, whichever comes first.
"""

from __future__ import annotations

import html
import itertools
import json
import os
import random
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

import gevent
from gevent.event import AsyncResult, Event
from locust import HttpUser, between, constant_pacing, events, task
from locust.clients import HttpSession, LocustHttpAdapter

from bench.web.resend import SentAgain

PAGES: list[tuple[str, str, int]] = json.loads(os.environ.get("BENCH_WEB_PAGES", "[]"))
LIMIT = int(os.environ.get("BENCH_WEB_REQUESTS", "1000"))
USERNAME = os.environ.get("BENCH_WEB_USER", "bench-admin")
PASSWORD = os.environ.get("BENCH_WEB_PASSWORD", "bench-password")
DATASET = os.environ.get("BENCH_WEB_DATASET", "")
LABELLERS = int(os.environ.get("BENCH_WEB_LABELLERS", "0"))
ACCOUNTS: list[str] = json.loads(os.environ.get("BENCH_WEB_ACCOUNTS", "[]"))
WRITE_EVERY = float(os.environ.get("BENCH_WEB_WRITE_EVERY", "3"))
PER_ITEM = int(os.environ.get("BENCH_WEB_PER_ITEM", "3"))
ADJUDICATE_EVERY = int(os.environ.get("BENCH_WEB_ADJUDICATE_EVERY", "10"))
MEASURE_EVERY = int(os.environ.get("BENCH_WEB_MEASURE_EVERY", "5"))
POLL_EVERY = float(os.environ.get("BENCH_WEB_POLL_EVERY", "0.25"))
POLL_TIMEOUT = float(os.environ.get("BENCH_WEB_POLL_TIMEOUT", "60"))
RESULTS = os.environ.get("BENCH_WEB_RESULTS", "")
USERS = int(os.environ.get("BENCH_WEB_USERS", "1"))
RUN_TIME = float(os.environ.get("BENCH_WEB_RUN_TIME", "0"))
SIGN_IN_TIMEOUT = 120  # seconds a user waits for the others before the load goes on anyway

POLL = "(poll) "  # request names of the latency polls: not counted in --requests
LABELLER = "(labeller) "
CONFLICT_TEXTS = ("Someone decided first", "The adjudication you saw was removed")

sent = 0
quitting = False
stopping = Event()  # set when the load stops: polls give up at once
everyone_in = Event()  # set when the last user has signed in: the measured window opens
_signed_in = 0
results: dict = {
    "labels": {"saved": 0, "failed": 0},
    "adjudications": {"saved": 0, "conflicts": 0, "failed": 0, "skipped": 0},
    "visible": {"agreement": [], "queue": []},  # ms from a label's POST answer to a reader
    "not_visible": {"agreement": 0, "queue": 0},  # not seen within POLL_TIMEOUT
    "skipped": {"agreement": 0, "queue": 0},  # the previous measure still running
    "client_lag_ms": [],  # see _watch_lag
}
_labeller_numbers = itertools.count()
# Labels each rater had in the agreement figures when its first labeller started, and the
# labels its labellers saved since: what the figures must show once a label is visible.
_rater_base: dict[str, AsyncResult] = {}
_rater_saved: dict[str, int] = {}


def _send_again_when_closed(session) -> None:
    session.mount("http://", LocustHttpAdapter(pool_manager=None, max_retries=SentAgain.once()))


def _login(client, username: str, host: str) -> None:
    _send_again_when_closed(client)
    page = client.get("/accounts/login/", name="(login form)")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    client.post(
        "/accounts/login/",
        {"username": username, "password": PASSWORD,
         "csrfmiddlewaretoken": token.group(1) if token else ""},
        headers={"Referer": f"{host}/accounts/login/"}, name="(login)",
    )  # fmt: skip


def _wait_for_everyone() -> None:
    """Count this user signed in and wait for the others; the last one opens the window."""
    global _signed_in, sent
    _signed_in += 1
    if _signed_in == USERS:
        sign_in = _environment.stats.entries.get(("(login)", "POST"))
        if sign_in is not None:
            results["sign_in"] = {"requests": sign_in.num_requests,
                                  "p50": sign_in.get_response_time_percentile(0.5),
                                  "max": sign_in.max_response_time}  # fmt: skip
        _environment.stats.reset_all()
        sent = 0
        results["started"] = time.time()
        everyone_in.set()
        gevent.spawn(_watch_lag)
        if RUN_TIME:
            gevent.spawn_later(RUN_TIME, _quit)
    everyone_in.wait(SIGN_IN_TIMEOUT)


def _watch_lag() -> None:
    """How late this process's own loop wakes from a 10 ms sleep, in ms, until the load
    stops: a response that arrives while another user's greenlet parses a page, or while the
    CPU serves other processes, is timed late by as much. Large lags mean the figures
    measure the load generator as well as the server."""
    lags = results["client_lag_ms"]
    while not stopping.is_set():
        asleep = time.perf_counter()
        gevent.sleep(0.01)
        lags.append(round((time.perf_counter() - asleep - 0.01) * 1000, 1))


def _quit() -> None:
    global quitting
    if not quitting:
        quitting = True
        gevent.spawn(_environment.runner.quit)


class Reader(HttpUser):
    # Think time between two pages, as a person reading them (and what keeps "20 concurrent
    # users" from being 20 closed loops with no pause).
    wait_time = between(0.5, 1.5)

    def on_start(self) -> None:
        _login(self.client, USERNAME, self.host)
        _wait_for_everyone()

    @task
    def page(self) -> None:
        name, url, _weight = random.choices(PAGES, weights=[p[2] for p in PAGES])[0]
        with self.client.get(url, name=name, catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"{response.status_code}")


# --- the pages a labeller reads -------------------------------------------------------------


@dataclass
class QueueRow:
    url: str
    answer: int
    criterion: int | None
    labels: int | None  # labelling queue: human labels on the answer
    mine: int | None  # labelling queue: criteria the reader labelled
    criteria: int | None


_ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
_LINK = re.compile(r'<a href="(/answers/(\d+)/review/\?[^"]*)"')
_NUMS = re.compile(r'<td class="num">([^<]*)</td>')


def queue_rows(text: str) -> list[QueueRow]:
    """The items of a queue page's table, in order."""
    rows = []
    for body in _ROW.findall(text):
        link = _LINK.search(body)
        if link is None:
            continue
        url = html.unescape(link.group(1))
        criterion = re.search(r"[?&]criterion=(\d+)", url)
        nums = [n.strip() for n in _NUMS.findall(body)]
        labels = mine = criteria = None
        if criterion is None and len(nums) >= 3:  # #, human labels, yours "m / n", ...
            labels = int(nums[1]) if nums[1].isdigit() else None
            yours = re.match(r"(\d+) / (\d+)", nums[2])
            if yours:
                mine, criteria = int(yours.group(1)), int(yours.group(2))
        rows.append(
            QueueRow(url, int(link.group(2)), int(criterion.group(1)) if criterion else None,
                     labels, mine, criteria)
        )  # fmt: skip
    return rows


def system_choices(text: str) -> dict[str, int]:
    """System name -> id, from the queue page's System filter."""
    start = text.find('<select name="system">')
    end = text.find("</select>", start)
    options = re.findall(r'<option value="(\d+)"[^>]*>([^<]*)</option>', text[start:end])
    return {html.unescape(name): int(pk) for pk, name in options}


@dataclass
class ReviewRow:
    criterion: int
    own: str  # "pass", "fail" or "" (not labelled by the reader)
    version: str  # the adjudicate form's expected version ("" when none)
    run: str


@dataclass
class ReviewPage:
    url: str
    answer: int
    token: str
    label_url: str
    run: str
    system: str
    query_text: str
    rows: dict[int, ReviewRow] = field(default_factory=dict)


def review_page(url: str, text: str) -> ReviewPage | None:
    token = re.search(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'', text)
    head = re.search(r"<h1>Review: (.*?) on query \d+</h1>", text)
    query = re.search(r'<p class="muted">(.*?) · query date', text)
    label_url = re.search(r'data-label-url="(/answers/(\d+)/review/label/)"', text)
    run = re.search(r'data-run="(\d*)"', text)
    if not (token and head and query and label_url and run):
        return None
    page = ReviewPage(
        url=url, answer=int(label_url.group(2)), token=token.group(1),
        label_url=label_url.group(1), run=run.group(1), system=html.unescape(head.group(1)),
        query_text=html.unescape(query.group(1)),
    )  # fmt: skip
    for chunk in text.split('<li id="row-')[1:]:
        criterion = re.match(r"(\d+)", chunk)
        own = re.search(r'data-own="(pass|fail|)"', chunk)
        version = re.search(r'name="version" value="(\d*)"', chunk)
        form_run = re.search(r'action="/answers/\d+/review/adjudicate/".*?name="run" value="(\d+)"',
                             chunk, re.S)  # fmt: skip
        if criterion and own:
            c = int(criterion.group(1))
            page.rows[c] = ReviewRow(
                c,
                own.group(1),
                version.group(1) if version else "",
                form_run.group(1) if form_run else "",
            )
    return page


def _htmx_headers(page: ReviewPage, host: str, criterion: int) -> dict[str, str]:
    """What htmx sends with the review page's writes (base.html puts the CSRF token in
    hx-headers on <body>)."""
    return {
        "HX-Request": "true", "HX-Target": f"row-{criterion}",
        "HX-Current-URL": f"{host}{page.url}", "X-CSRFToken": page.token,
        "Referer": f"{host}{page.url}",
    }  # fmt: skip


# --- labellers ------------------------------------------------------------------------------


class Labeller(HttpUser):
    """A reviewer labelling at a steady pace: one write every WRITE_EVERY seconds."""

    abstract = LABELLERS == 0
    fixed_count = LABELLERS
    wait_time = constant_pacing(WRITE_EVERY)

    def on_start(self) -> None:
        self.number = next(_labeller_numbers)
        self.username = ACCOUNTS[self.number % len(ACCOUNTS)]
        _login(self.client, self.username, self.host)
        self.systems: dict[str, int] = {}
        self.page: ReviewPage | None = None
        self.todo: list[int] = []  # criteria of the page to label, in page order
        self.answer_labels: int | None = None  # the answer's labels in the labelling queue
        self.done_here = 0
        self.writes = 0
        self.labels = 0
        self.next_write = None
        self.watching = {"agreement": False, "queue": False}
        # Polls have sessions of their own (the same login), so that a poll never waits on
        # the labeller's own requests.
        self.pollers = {}
        for kind in ("agreement", "queue"):
            session = HttpSession(self.host, self.environment.events.request, self)
            session.cookies = self.client.cookies
            _send_again_when_closed(session)
            self.pollers[kind] = session
        if self.username not in _rater_base:
            _rater_base[self.username] = AsyncResult()
            _rater_base[self.username].set(self._rater_labels(self.client))
        _wait_for_everyone()
        # Reviewers label each at their own pace, not in step: released together by the
        # wait above, five labellers paced every WRITE_EVERY seconds wrote within the same
        # instant, every time, and queued on the dataset's counter row behind each other
        # (docs/benchmarks.md). Each starts at a random moment of its first period.
        gevent.sleep(random.uniform(0, WRITE_EVERY))

    # One task: the write prepared by the previous iteration, then the reads that prepare
    # the next one (so that a reviewer reads an item for WRITE_EVERY seconds before deciding).
    @task
    def work(self) -> None:
        if self.next_write is None:
            self._prepare()
        write, self.next_write = self.next_write, None
        if write is not None:
            write()
            self.writes += 1
        self._prepare()

    def _prepare(self) -> None:
        if ADJUDICATE_EVERY and (self.writes + 1) % ADJUDICATE_EVERY == 0:
            self.next_write = self._prepare_adjudication()
            if self.next_write is not None:
                return
            results["adjudications"]["skipped"] += 1
        if not self.todo or self.done_here >= PER_ITEM:
            self._open_labelling_item()
        if self.todo:
            criterion = self.todo.pop(0)
            self.next_write = lambda: self._label(criterion)

    # --- labels

    def _open_labelling_item(self) -> None:
        self.page, self.todo, self.done_here, self.answer_labels = None, [], 0, None
        queue = self.client.get(
            f"/datasets/{DATASET}/review/?queue=labelling", name=f"{LABELLER}labelling queue"
        )
        if queue.status_code != 200:
            return
        if not self.systems:
            self.systems = system_choices(queue.text)
        rows = [r for r in queue_rows(queue.text) if r.mine is not None and r.mine < r.criteria]
        # Each labeller takes the items of its own answers (answer id modulo the number of
        # labellers): two labellers never label one answer, so an answer's label count in
        # the queue moves only with this labeller's labels, which the queue measure needs.
        own = [r for r in rows if r.answer % LABELLERS == self.number % LABELLERS]
        if own:
            row = random.choice(own[:5])
            url, self.answer_labels = row.url, row.labels
        else:  # nothing of its own on the first page: the queue's Next, unmeasured
            url = f"/datasets/{DATASET}/review/next/?queue=labelling"
        response = self.client.get(url, name=f"{LABELLER}review page")
        if response.status_code != 200:
            return
        path = response.url.split("://", 1)[-1]
        path = path[path.find("/") :]
        self.page = review_page(path, response.text)
        if self.page is None:
            return
        if not own:
            self.answer_labels = None
        self.todo = [c for c, r in self.page.rows.items() if r.own == ""]

    def _label(self, criterion: int) -> None:
        page = self.page
        label = random.choice(("pass", "fail"))
        with self.client.post(
            page.label_url, data={"criterion": criterion, "label": label, "run": page.run},
            headers=_htmx_headers(page, self.host, criterion), name="POST label",
            catch_response=True,
        ) as response:  # fmt: skip
            text = response.text or ""
            if response.status_code != 200:
                response.failure(f"{response.status_code}")
            elif f'id="row-{criterion}"' not in text or f'data-own="{label}"' not in text:
                response.failure("the answer is not the row with the label")
            elif "<html" in text:
                response.failure("a whole page, not the row")
            else:
                response.success()
                self._saved(page)
                return
        results["labels"]["failed"] += 1

    def _saved(self, page: ReviewPage) -> None:
        saved_at = time.perf_counter()
        results["labels"]["saved"] += 1
        self.labels += 1
        self.done_here += 1
        _rater_saved[self.username] = _rater_saved.get(self.username, 0) + 1
        if self.answer_labels is not None:
            self.answer_labels += 1
        if not MEASURE_EVERY or self.labels % MEASURE_EVERY:
            return
        base = _rater_base[self.username].get()
        if base is None:  # the API did not answer at the start: nothing to compare with
            results["skipped"]["agreement"] += 1
        else:
            expected = base + _rater_saved[self.username]
            self._watch("agreement", saved_at, lambda s: (self._rater_labels(s) or 0) >= expected)
        if self.answer_labels is not None and page.system in self.systems:
            wanted, answer = self.answer_labels, page.answer
            url = f"/datasets/{DATASET}/review/?" + urlencode(
                {"queue": "labelling", "system": self.systems[page.system],
                 "q": page.query_text[:200]}
            )  # fmt: skip
            self._watch("queue", saved_at, lambda s: self._queue_labels(s, url, answer) >= wanted)
        else:
            results["skipped"]["queue"] += 1

    def _rater_labels(self, session) -> int | None:
        """The rater's labels in the agreement API's figures."""
        name = f"{POLL}API agreement" if session is not self.client else f"{LABELLER}API agreement"
        response = session.get(f"/api/agreement/?dataset={DATASET}", name=name)
        if response.status_code != 200:
            return None
        for reviewer in response.json().get("reviewers", []):
            if reviewer["rater"] == self.username:
                return reviewer["labels"]
        return 0

    def _queue_labels(self, session, url: str, answer: int) -> int:
        """The answer's label count on the labelling queue page, filtered to its query and
        system; -1 when it is not listed."""
        response = session.get(url, name=f"{POLL}labelling queue")
        if response.status_code != 200:
            return -1
        for row in queue_rows(response.text):
            if row.answer == answer and row.labels is not None:
                return row.labels
        return -1

    def _watch(self, kind: str, saved_at: float, shows) -> None:
        """Poll beside the labeller's work until `shows(session)`; one measure of each kind
        at a time per labeller."""
        if self.watching[kind]:
            results["skipped"][kind] += 1
            return
        self.watching[kind] = True

        def poll() -> None:
            try:
                while not stopping.is_set():
                    if shows(self.pollers[kind]):
                        results["visible"][kind].append((time.perf_counter() - saved_at) * 1000)
                        return
                    if time.perf_counter() - saved_at > POLL_TIMEOUT:
                        results["not_visible"][kind] += 1
                        return
                    stopping.wait(POLL_EVERY)
            finally:
                self.watching[kind] = False

        gevent.spawn(poll)

    # --- adjudications

    def _prepare_adjudication(self):
        queue = self.client.get(
            f"/datasets/{DATASET}/review/?queue=disagreement",
            name=f"{LABELLER}disagreement queue",
        )  # fmt: skip
        if queue.status_code != 200:
            return None
        rows = [r for r in queue_rows(queue.text) if r.criterion]
        if not rows:
            return None
        # Among the first ten, as reviewers working down one queue do: two of them now and
        # then decide the same item, and the second one meets a conflict.
        row = random.choice(rows[:10])
        response = self.client.get(row.url, name=f"{LABELLER}review page")
        page = review_page(row.url, response.text) if response.status_code == 200 else None
        if page is None or row.criterion not in page.rows:
            return None
        return lambda: self._adjudicate(page, page.rows[row.criterion])

    def _adjudicate(self, page: ReviewPage, row: ReviewRow) -> None:
        label = random.choice(("pass", "fail"))
        data = {
            "csrfmiddlewaretoken": page.token, "criterion": row.criterion,
            "version": row.version, "label": label, "reason": "Checked (bench.web).",
        }  # fmt: skip
        if row.run:
            data["run"] = row.run
        with self.client.post(
            f"/answers/{page.answer}/review/adjudicate/", data=data,
            headers=_htmx_headers(page, self.host, row.criterion), name="POST adjudicate",
            catch_response=True,
        ) as response:  # fmt: skip
            text = response.text or ""
            if response.status_code != 200:
                response.failure(f"{response.status_code}")
            elif f'id="row-{row.criterion}"' not in text or "<html" in text:
                response.failure("the answer is not the row")
            elif any(t in text for t in CONFLICT_TEXTS):
                response.success()  # someone decided first: a normal outcome, counted apart
                results["adjudications"]["conflicts"] += 1
                return
            elif 'class="error"' in text or f">adjudicated {label}<" not in text:
                response.failure("the row does not show the decision")
            else:
                response.success()
                results["adjudications"]["saved"] += 1
                return
        results["adjudications"]["failed"] += 1


# --- the run: only this machine, at most LIMIT requests, results to a file -----------------


@events.init.add_listener
def _check(environment, **kwargs) -> None:
    host = environment.host or ""
    if host and not host.startswith(("http://127.0.0.1", "http://localhost")):
        raise SystemExit(f"bench.web only loads a server on this machine, not {host}")


_environment = None


@events.init.add_listener
def _keep(environment, **kwargs) -> None:
    global _environment
    _environment = environment


@events.request.add_listener
def _count(name: str, **kwargs) -> None:
    """End the load after LIMIT requests. runner.quit() called from a user's own task kills
    that user's greenlet on its way (locust stops the calling user without waiting), which
    can abandon the quit half done and leave the load running until --run-time; from a
    greenlet of its own it stops every user (each ends its task: --stop-timeout), then the
    runner, and locust exits."""
    global sent
    if name.startswith(("(login", POLL)):
        return
    sent += 1
    if sent >= LIMIT:
        _quit()


@events.test_stopping.add_listener
def _stopping(**kwargs) -> None:
    results["stopped"] = time.time()
    stopping.set()


def _statistics(environment) -> dict:
    """Every request name's figures once the load has stopped (locust's CSV is written
    once a second, and not at the end: it misses the last second)."""
    found = {}
    for entry in environment.stats.entries.values():
        found[entry.name] = {
            "method": entry.method, "requests": entry.num_requests,
            "failures": entry.num_failures, "p50": entry.get_response_time_percentile(0.5),
            "p95": entry.get_response_time_percentile(0.95),
            "p99": entry.get_response_time_percentile(0.99),
            "max": entry.max_response_time, "rps": entry.total_rps,
        }  # fmt: skip
    return found


@events.quitting.add_listener
def _write(environment, **kwargs) -> None:
    if not RESULTS:
        return
    errors = [
        {"request": e.name, "error": str(e.error), "count": e.occurrences}
        for e in environment.stats.errors.values()
    ]
    with open(RESULTS, "w") as handle:
        json.dump(
            {**results, "requests_counted": sent, "sent_again": SentAgain.times,
             "statistics": _statistics(environment), "failures": errors},
            handle,
        )  # fmt: skip
