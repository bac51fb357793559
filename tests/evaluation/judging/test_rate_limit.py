"""The judges' rate limiters: in-process token bucket, Redis token bucket, routing.

No database. The Redis tests use the server at 127.0.0.1:6379 and a fresh key per test;
they are skipped when it is unreachable, unless CI is set (then they fail).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from evaluation.judging import ratelimit
from evaluation.judging.ratelimit import (
    LocalTokenBucket,
    RedisTokenBucket,
    Unlimited,
    limiter_for,
)

REDIS_URL = "redis://127.0.0.1:6379/0"
ROOT = Path(__file__).resolve().parents[3]


def approx(value: float) -> object:
    # Admission may come up to a microsecond early (ratelimit.SLACK).
    return pytest.approx(value, abs=2e-6)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def assert_within_limit(times: list[float], *, start: float, rate: float, capacity: float):
    """The k-th admission (sorted) at t never comes before capacity + rate * (t - start)
    allows. Times are taken after each acquire returns, so they are if anything late."""
    for k, t in enumerate(sorted(times), start=1):
        assert k <= capacity + rate * (t - start) + 1e-6, (k, t - start)


# In-process bucket, fake clock: the arithmetic.


def test_local_bucket_starts_full_then_spaces_requests():
    clock = FakeClock()
    bucket = LocalTokenBucket(rpm=60, tpm=None, clock=clock)
    assert [bucket.reserve() for _ in range(60)] == [0.0] * 60  # the burst at start
    assert bucket.reserve() == approx(1.0)  # then 1 per second
    assert bucket.reserve() == approx(2.0)
    clock.now += 0.5
    assert bucket.reserve() == approx(2.5)
    assert bucket.available()["requests"] == approx(-2.5)  # reserved ahead


def test_local_bucket_refills_continuously_up_to_capacity():
    clock = FakeClock()
    bucket = LocalTokenBucket(rpm=60, tpm=None, clock=clock)
    for _ in range(60):
        bucket.reserve()
    clock.now += 10
    assert bucket.available()["requests"] == approx(10)
    assert [bucket.reserve() for _ in range(10)] == [0.0] * 10
    assert bucket.reserve() == approx(1.0)
    clock.now += 3600  # an hour idle refills to the capacity, not beyond
    assert bucket.available()["requests"] == approx(60)
    assert sum(bucket.reserve() == 0 for _ in range(70)) == 60


def test_local_bucket_limits_tokens():
    clock = FakeClock()
    bucket = LocalTokenBucket(rpm=None, tpm=6000, clock=clock)  # 100 tokens/s
    assert bucket.reserve(4000) == 0
    assert bucket.reserve(2000) == 0
    assert bucket.reserve(1000) == approx(10.0)
    clock.now += 4
    assert bucket.reserve(50) == approx(6.5)  # queued after the 1000
    assert bucket.reserve(0) == approx(6.5)  # nothing to pay, but keeps its turn


def test_local_bucket_with_both_limits_waits_for_the_scarcer():
    clock = FakeClock()
    bucket = LocalTokenBucket(rpm=60, tpm=600, clock=clock)  # 1 request/s, 10 tokens/s
    assert bucket.reserve(600) == 0  # tokens empty, 59 requests left
    assert bucket.reserve(10) == approx(1.0)  # tokens are short
    assert bucket.reserve(0) == approx(1.0)  # FIFO: not before the one ahead
    for _ in range(58):
        bucket.reserve(0)  # uses up the requests at that instant (one refilled by then)
    assert bucket.reserve(0) == approx(2.0)  # now requests are short
    assert bucket.reserve(10) == approx(3.0)


def test_local_bucket_fifo_does_not_starve_a_large_request():
    clock = FakeClock()
    bucket = LocalTokenBucket(rpm=None, tpm=600, clock=clock)  # 10 tokens/s
    bucket.reserve(600)
    big = bucket.reserve(300)
    assert big == approx(30.0)
    assert bucket.reserve(1) > big  # a small one arriving later goes after it


def test_local_bucket_caps_oversize_token_requests_at_capacity():
    clock = FakeClock()
    bucket = LocalTokenBucket(rpm=None, tpm=1000, clock=clock)
    assert bucket.reserve(5000) == 0  # counted as 1000: empties the full bucket
    assert bucket.reserve(1) == approx(0.06)
    # waits for a full bucket (60 s after the 1-token one), not forever
    assert bucket.reserve(10**9) == approx(60.06)


def test_local_bucket_burst_is_exact_for_awkward_limits():
    # 60/7 s per request: float rounding must not cut the burst to 6
    bucket = LocalTokenBucket(rpm=7, tpm=None, clock=FakeClock())
    assert [bucket.reserve() == 0 for _ in range(8)] == [True] * 7 + [False]


def test_invalid_limits_and_tokens_are_refused():
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="rpm"):
            LocalTokenBucket(rpm=bad, tpm=None)
        with pytest.raises(ValueError, match="tpm"):
            limiter_for(key="k", rpm=None, tpm=bad, redis_url=None)
    with pytest.raises(ValueError, match="tokens"):
        LocalTokenBucket(rpm=1, tpm=None).reserve(-1)


# In-process bucket, real time.


def test_local_bucket_real_time_across_tasks():
    rpm = 1200  # 20/s, capacity 1200: the burst, then 30 more take 1.5 s
    bucket = LocalTokenBucket(rpm=rpm, tpm=None)
    times: list[float] = []
    waits: list[float] = []

    async def worker(n: int) -> None:
        for _ in range(n):
            waits.append(await bucket.acquire())
            times.append(time.monotonic())

    async def main() -> None:
        await asyncio.gather(*(worker(1230 // 8 + (i < 1230 % 8)) for i in range(8)))

    start = time.monotonic()
    asyncio.run(main())
    elapsed = time.monotonic() - start
    assert len(times) == 1230
    assert sum(w == 0 for w in waits) >= 1200  # the whole burst went at once
    assert elapsed >= 30 / 20 - 0.1  # (1230 - 1200) / 20, less what refilled meanwhile
    assert elapsed < 3.0
    assert_within_limit(times, start=start, rate=rpm / 60, capacity=rpm)


def test_local_bucket_shared_by_event_loops_in_threads():
    rpm = 1200
    bucket = LocalTokenBucket(rpm=rpm, tpm=None)
    start = time.monotonic()
    for _ in range(rpm):
        bucket.reserve()  # drain: from here on only the rate counts
    times: list[float] = []

    async def loop_body() -> None:
        async def one() -> None:
            for _ in range(3):
                await bucket.acquire()
                times.append(time.monotonic())

        await asyncio.gather(*(one() for _ in range(4)))

    threads = [threading.Thread(target=asyncio.run, args=(loop_body(),)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(times) == 24
    assert time.monotonic() - start >= 24 / 20 - 0.1
    # The drain used the capacity: the threads together get only the rate (1 for rounding).
    assert_within_limit(times, start=start, rate=rpm / 60, capacity=1)


def test_unlimited_returns_at_once():
    assert asyncio.run(Unlimited().acquire(10**9)) == 0


# Routing.


def test_limiter_for_routes_by_limits_and_url():
    key = f"route-{uuid.uuid4()}"
    assert isinstance(limiter_for(key=key, rpm=None, tpm=None, redis_url=REDIS_URL), Unlimited)
    for url in (None, "filesystem://", "amqp://guest@localhost//", "memory://"):
        assert isinstance(limiter_for(key=key, rpm=10, tpm=None, redis_url=url), LocalTokenBucket)
    for url in ("redis://127.0.0.1:6379/0", "rediss://cache.example:6380/1"):
        limiter = limiter_for(key=key, rpm=None, tpm=1000, redis_url=url)
        assert isinstance(limiter, RedisTokenBucket)
        assert limiter.redis_key == f"ratelimit:{key}"


def test_limiter_for_shares_one_local_bucket_per_key():
    key, other = f"share-{uuid.uuid4()}", f"share-{uuid.uuid4()}"
    first = limiter_for(key=key, rpm=10, tpm=None, redis_url="filesystem://")
    assert limiter_for(key=key, rpm=10, tpm=None, redis_url=None) is first
    assert limiter_for(key=other, rpm=10, tpm=None, redis_url=None) is not first
    first.reserve()
    # edited limits apply to the same bucket, keeping what was already used
    again = limiter_for(key=key, rpm=20, tpm=500, redis_url=None)
    assert again is first
    assert (again.rpm, again.tpm) == (20, 500)
    assert again.available()["requests"] < 20


# Redis.


@pytest.fixture(scope="module")
def redis_url() -> str:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.exceptions.ConnectionError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"Redis at {REDIS_URL} is required in CI: {exc}")
        pytest.skip(f"Redis at {REDIS_URL} is unreachable: {exc}")
    return REDIS_URL


@pytest.fixture
def bucket_key(redis_url: str) -> Iterator[str]:
    key = f"test-{uuid.uuid4()}"
    yield key
    redis.Redis.from_url(redis_url).delete(ratelimit.redis_key(key))


# Runs in each child process: says it is ready, waits for the go (start and deadline), hammers
# the bucket from several tasks until the deadline and prints the wall-clock times of its
# admissions (same machine, so comparable to Redis TIME).
CHILD = """
import asyncio, json, sys, time
from evaluation.judging.ratelimit import RedisTokenBucket

args = json.loads(sys.argv[1])

async def main():
    bucket = RedisTokenBucket(url=args["url"], key=args["key"], rpm=args["rpm"], tpm=args["tpm"])
    print("ready", flush=True)
    args.update(json.loads(sys.stdin.readline()))  # start and deadline, once both are ready
    times = []

    async def hammer():
        while (left := args["deadline"] - time.time()) > 0:
            try:
                await asyncio.wait_for(bucket.acquire(args["tokens"]), left)
            except TimeoutError:
                return
            times.append(time.time())

    await asyncio.sleep(max(0.0, args["start"] - time.time()))
    await asyncio.gather(*(hammer() for _ in range(args["tasks"])))
    return times

print(json.dumps(asyncio.run(main())))
"""


def test_redis_bucket_is_shared_by_two_processes(redis_url: str, bucket_key: str):
    rpm = 600  # 10/s
    args = {"url": redis_url, "key": bucket_key, "rpm": rpm, "tpm": None, "tokens": 0}
    command = [sys.executable, "-c", CHILD, json.dumps(args | {"tasks": 8})]
    client = redis.Redis.from_url(redis_url)
    with contextlib.ExitStack() as stack:  # closes the pipes and reaps the children
        stack.callback(client.close)
        children = [
            stack.enter_context(
                subprocess.Popen(
                    command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
                )
            )
            for _ in range(2)
        ]
        assert [child.stdout.readline() for child in children] == ["ready\n"] * 2
        # Use up the burst in one pipelined round trip (acquire would take a connection
        # each), so that what the children get is the rate alone.
        start = time.time()
        client.script_load(ratelimit._SCRIPT)
        with client.pipeline(transaction=False) as pipe:
            for _ in range(rpm):
                pipe.evalsha(ratelimit._SCRIPT_SHA, 1, ratelimit.redis_key(bucket_key), rpm, 0, 0)
            assert pipe.execute() == [0] * rpm  # a fresh bucket is full
        go = json.dumps({"start": time.time(), "deadline": time.time() + 1.3})
        for child in children:  # both before waiting for either
            child.stdin.write(go + "\n")
            child.stdin.close()
        outputs = [child.stdout.read() for child in children]
        for child in children:
            child.wait(timeout=20)
    assert [child.returncode for child in children] == [0, 0]
    per_child = [json.loads(out) for out in outputs]
    assert all(per_child), "both processes should get some admissions"
    times = [t for ts in per_child for t in ts]
    # 600 + k admitted by t <= capacity 600 + 10/s * (t - start), with one admission of slack
    # for reading clocks; two unshared buckets would admit twice as many.
    assert_within_limit(times, start=start, rate=rpm / 60, capacity=1)
    assert len(times) >= 8  # about 13 fit in 1.3 s


def test_redis_bucket_limits_tokens_and_caps_oversize(redis_url: str, bucket_key: str):
    bucket = RedisTokenBucket(url=redis_url, key=bucket_key, rpm=None, tpm=600)  # 10/s

    async def scenario() -> tuple[list[float], float, float]:
        waits = [await bucket.reserve(600), await bucket.reserve(100)]
        waits.append(await bucket.reserve(10**9))  # capped: waits for a full bucket
        await bucket.reset()
        await bucket.acquire(600)
        began = time.monotonic()
        waited = await bucket.acquire(5)
        return waits, waited, time.monotonic() - began

    waits, waited, elapsed = asyncio.run(scenario())
    assert waits[0] == 0
    assert 9.5 < waits[1] <= 10.0
    assert 69.5 < waits[2] <= 70.0  # 10 s for the 100 tokens, then 60 s to fill up
    assert 0.4 < waited <= 0.5
    assert elapsed >= waited


def test_redis_bucket_state_expires_and_is_readable(redis_url: str, bucket_key: str):
    bucket = RedisTokenBucket(url=redis_url, key=bucket_key, rpm=60, tpm=6000)

    async def scenario() -> dict[str, float | None]:
        await bucket.reserve(3000)
        return await bucket.available()

    available = asyncio.run(scenario())
    assert available["requests"] == pytest.approx(59.5, abs=0.5)  # refills meanwhile
    assert available["tokens"] == pytest.approx(3000, abs=10)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    state = client.hgetall(f"ratelimit:{bucket_key}")
    assert set(state) == {"requests", "tokens", "last", "rpm", "tpm"}
    assert (state["rpm"], state["tpm"]) == ("60", "6000")
    # full again after 30 s (tokens) plus a second's margin: then the key goes
    assert 29_000 < client.pttl(f"ratelimit:{bucket_key}") <= 31_000


def test_redis_bucket_recovers_from_script_flush(redis_url: str, bucket_key: str):
    bucket = RedisTokenBucket(url=redis_url, key=bucket_key, rpm=2, tpm=None)
    client = redis.Redis.from_url(redis_url)

    async def reserve() -> float:
        return await bucket.reserve()

    assert asyncio.run(reserve()) == 0
    client.script_flush()
    assert client.script_exists(ratelimit._SCRIPT_SHA) == [False]
    assert asyncio.run(reserve()) == 0  # NOSCRIPT, then EVAL: state kept, script cached
    assert client.script_exists(ratelimit._SCRIPT_SHA) == [True]
    assert 29 < asyncio.run(reserve()) <= 30
