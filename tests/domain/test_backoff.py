"""The one back-off rule (config/backoff.py): doubling from a base, a cap, a limit on the
doublings, and the two jitters, with seconds or a timedelta."""

from __future__ import annotations

from datetime import timedelta

from config.backoff import backoff


def test_the_wait_doubles_from_the_base_up_to_the_cap():
    assert [backoff(n, base=10) for n in range(4)] == [10, 20, 40, 80]
    assert [backoff(n, base=0.25, cap=5.0) for n in range(7)] == [0.25, 0.5, 1, 2, 4, 5.0, 5.0]
    # A limit on the doublings: the sweep waits at most 2^6 lease timeouts.
    assert [backoff(n, base=30, doublings=6) for n in (5, 6, 7, 100)] == [960, 1920, 1920, 1920]
    assert backoff(10**6, base=5, cap=300, doublings=32) == 300  # no overflow, however long


def test_a_timedelta_doubles_the_same():
    first, last = timedelta(minutes=1), timedelta(minutes=60)
    waits = [backoff(n, base=first, cap=last) for n in range(8)]
    assert waits == [timedelta(minutes=m) for m in (1, 2, 4, 8, 16, 32, 60, 60)]


def test_equal_jitter_waits_half_to_all_and_full_jitter_up_to_all():
    for n in range(8):
        limit = min(60, 5 * 2**n)
        equal = backoff(n, base=5, cap=60, jitter="equal")
        full = backoff(n, base=5, cap=60, jitter="full")
        assert limit / 2 <= equal <= limit
        assert 0 <= full <= limit
    assert len({backoff(3, base=5, jitter="equal") for _ in range(20)}) > 1
    assert min(backoff(3, base=5, jitter="full") for _ in range(200)) < 20  # below half
