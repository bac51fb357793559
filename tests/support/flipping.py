"""A scripted judge that flips: for the judge-stability tests (the run's own samples and the
stability pass)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

from loopback import verdict_responder


def alternating_judge(flips: Callable[[str], bool]):
    """A loopback responder: pass, fail, pass, fail… on the repeated calls of an item whose
    prompt `flips` picks (whatever run makes them); pass on every other item."""
    calls: Counter[str] = Counter()
    lock = threading.Lock()

    def verdict(request) -> str:
        text = request.last_user_text
        if not flips(text):
            return "pass"
        with lock:
            calls[text] += 1
            return "pass" if calls[text] % 2 else "fail"

    return verdict_responder(verdict, failure_kind="missing")
