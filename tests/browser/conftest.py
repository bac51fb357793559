"""Playwright driving Debian's Chromium against pytest-django's live server.

Chromium is /usr/bin/chromium (CHROMIUM overrides). Without it the browser tests are skipped
on a laptop, but fail in CI (CI=true), where .ci/run installs it. A failing test leaves a
screenshot in var/test-artifacts/screenshots/.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.signals import request_finished, request_started

from tests.factories import PASSWORD

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "var" / "test-artifacts"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",  # this machine has no network beyond loopback
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


# Package scope: Playwright's sync API keeps an event loop running while it lives, which
# would break asyncio.run() in tests collected after the browser tests.
@pytest.fixture(scope="package")
def browser():
    if not shutil.which(CHROMIUM):
        message = f"Chromium not found at {CHROMIUM}: apt-get install chromium chromium-driver"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    # Playwright's sync API runs an event loop; Django's ORM must still be usable in the test.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS
            )
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


class RequestsInFlight:
    """Counts the live server's requests under way, so a test ends only once they are done.

    Closing the browser does not stop a request the server thread is still answering (the
    API docs' schema, a poll). Left running, it meets the database flush that ends the test:
    a ContentType it looks up is re-created between the flush's read and its insert, the
    flush fails on the unique key, and the next test on that worker finds no groups.
    """

    def __init__(self):
        self.count = 0
        self.changed = threading.Condition()

    def started(self, **kwargs):
        with self.changed:
            self.count += 1

    def finished(self, **kwargs):
        with self.changed:
            self.count -= 1
            self.changed.notify_all()

    def wait_until_none(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        with self.changed:
            while self.count > 0 and (left := deadline - time.monotonic()) > 0:
                self.changed.wait(left)
        assert self.count <= 0, f"{self.count} live-server request(s) still open after {timeout}s"


@pytest.fixture
def requests_in_flight() -> Iterator[RequestsInFlight]:
    counter = RequestsInFlight()
    request_started.connect(counter.started, weak=False)
    request_finished.connect(counter.finished, weak=False)
    try:
        yield counter
    finally:
        request_started.disconnect(counter.started)
        request_finished.disconnect(counter.finished)


@pytest.fixture
def page(request, browser, live_server, requests_in_flight) -> Iterator:
    """A fresh browser tab on the live server."""
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    # Every browser test doubles as a Content-Security-Policy check: Chromium reports each
    # blocked script, style or eval on the console, and any such report fails the test.
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    page.csp_violations = violations
    yield page
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        shots = ARTIFACTS / "screenshots"
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / f"{request.node.name}.png"), full_page=True)
    context.close()
    requests_in_flight.wait_until_none()
    if not getattr(request.node, "allows_csp_violations", False):
        assert not violations, f"Content-Security-Policy violations: {violations}"


def log_in(page, username: str, password: str = PASSWORD) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
