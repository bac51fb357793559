"""The judge circuit breaker (evaluation/judging/circuit.py), in both of its stores: process
memory and a real Redis (skipped when Redis is unreachable, unless CI is set: then they
fail). The whole engine under an outage, with a worker, is tests/faults/test_runs.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid

import pytest
import redis

from evaluation.judging import circuit
from evaluation.judging.circuit import (
    Circuit,
    Config,
    LocalStore,
    RedisStore,
    Unreachable,
    Waited,
)

REDIS_URL = "redis://127.0.0.1:6379/0"
FAST = Config(failures=3, window=30, probe_min=0.2, probe_max=0.4, max_wait=30)


@pytest.fixture(params=["memory", "redis"])
def store(request):
    if request.param == "memory":
        yield LocalStore()
        return
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.exceptions.ConnectionError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"Redis at {REDIS_URL} is unreachable: {exc}")
    yield RedisStore(REDIS_URL)


@pytest.fixture
def key():
    circuit._seen.clear()
    name = f"test-{uuid.uuid4().hex}"
    yield name
    redis_client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
    with contextlib.suppress(redis.exceptions.ConnectionError):
        redis_client.delete(*(f"circuit:{name}{s}" for s in ("", ":failures", ":probe")))


def run(coroutine):
    return asyncio.run(coroutine)


def test_failures_in_a_row_open_it_and_a_reply_between_them_does_not(store, key):
    async def scenario():
        one = Circuit(store, key, FAST)
        assert not await one.failed("down", probe=False)
        assert not await one.failed("down", probe=False)
        await one.succeeded(probe=False, sent=one.now())  # an answer: the endpoint is up
        assert not await one.failed("down", probe=False)
        assert not await one.failed("down", probe=False)
        assert await one.failed("refused", probe=False)  # three in a row
        outage = await store.get(key)
        assert outage is not None and outage.last_error == "refused"
        assert outage.next_probe == pytest.approx(outage.since + FAST.probe_min)

    run(scenario())


def test_a_reply_to_a_request_sent_before_the_failures_neither_clears_nor_closes(store, key):
    """An endpoint going down answers the requests it already holds while it refuses new
    ones: those replies must not restart the count, nor close a circuit they opened."""

    async def scenario():
        c = Circuit(store, key, FAST)
        in_flight = c.now() - 1.0  # sent before the endpoint went down
        assert not await c.failed("refused", probe=False)
        assert not await c.failed("refused", probe=False)
        await c.succeeded(probe=False, sent=in_flight)
        assert await c.failed("refused", probe=False)  # still three in a row: open
        await c.succeeded(probe=False, sent=in_flight)
        assert await store.get(key) is not None  # an old reply does not close it
        await asyncio.sleep(0.01)
        await c.succeeded(probe=False, sent=c.now())  # sent after it opened: it answers
        assert await store.get(key) is None

    run(scenario())


def test_a_reply_clears_only_the_failures_counted_before_its_request_was_sent(store, key):
    async def scenario():
        c = Circuit(store, key, FAST)
        assert not await c.failed("refused", probe=False)
        await asyncio.sleep(0.01)
        sent = c.now()
        await asyncio.sleep(0.01)
        assert not await c.failed("refused", probe=False)  # after the request went out
        await c.succeeded(probe=False, sent=sent)  # clears the first failure only
        assert not await c.failed("refused", probe=False)  # two in a row
        assert await c.failed("refused", probe=False)  # three

    run(scenario())


def test_only_outage_kinds_count():
    assert circuit.is_outage("connection") and circuit.is_outage("timeout")
    assert circuit.is_outage("http_502") and circuit.is_outage("http_503")
    assert not circuit.is_outage("rate_limit") and not circuit.is_outage("http_404")
    assert not circuit.is_outage("rejected") and not circuit.is_outage("missing_key")


def test_while_open_calls_wait_one_probes_and_its_reply_lets_all_go(store, key):
    async def scenario():
        opener = Circuit(store, key, FAST)
        for _ in range(FAST.failures):
            await opener.failed("down", probe=False)
        callers = [Circuit(store, key, FAST) for _ in range(5)]
        admitted: list[bool] = []

        waits = [Waited() for _ in callers]

        async def call(c: Circuit, waited: Waited) -> None:
            probe = await c.admit(waited)
            admitted.append(probe)
            if probe:
                sent = c.now()
                await asyncio.sleep(0.3)  # the probe's request, answered
                await c.succeeded(probe=True, sent=sent)

        calls = (call(c, w) for c, w in zip(callers, waits, strict=True))
        await asyncio.wait_for(asyncio.gather(*calls), timeout=10)
        assert admitted.count(True) == 1  # one probe, not a herd
        assert len(admitted) == 5
        assert admitted[0] is True  # the others went only once the probe had an answer
        assert await store.get(key) is None
        assert all(w.seconds >= FAST.probe_min * 0.5 for w in waits)

    run(scenario())


def test_a_failed_probe_doubles_the_delay_up_to_the_cap(store, key):
    doubling = Config(failures=3, window=30, probe_min=0.1, probe_max=0.4, max_wait=30)

    async def scenario():
        c = Circuit(store, key, doubling)
        for _ in range(doubling.failures):
            await c.failed("down", probe=False)
        delays = []
        for _ in range(3):
            assert await c.admit(Waited()) is True
            assert await c.failed("still down", probe=True)
            delays.append((await store.get(key)).delay)
        assert delays == pytest.approx([0.2, 0.4, 0.4])
        assert (await store.get(key)).last_error == "still down"

    run(scenario())


def test_a_call_that_waited_longer_than_max_wait_gives_up(store, key):
    patient = Config(failures=1, window=30, probe_min=60, probe_max=60, max_wait=0.5)

    async def scenario():
        c = Circuit(store, key, patient)
        await c.failed("Connection refused", probe=False)
        with pytest.raises(Unreachable) as raised:
            await c.admit(Waited())
        assert "unreachable since" in str(raised.value)
        assert "Connection refused" in str(raised.value)

    run(scenario())


def test_an_unreadable_circuit_never_stops_a_call(key):
    dead = RedisStore("redis://127.0.0.1:1/0")  # nothing listens there

    async def scenario():
        c = Circuit(dead, key, FAST)
        assert await c.admit(Waited()) is False
        assert await c.failed("down", probe=False) is False  # the failure stands as it is
        await c.succeeded(probe=True, sent=c.now())

    run(scenario())


def test_calls_arriving_together_before_any_read_share_one_read(store, key):
    """The rewards service's first wave: hundreds of calls admit at once with nothing read
    yet. One Redis read serves them all (each reading its own ran the shared client out of
    connections and logged tracebacks on a busy CI machine)."""
    reads = 0
    get = store.get

    async def counting_get(name):
        nonlocal reads
        reads += 1
        await asyncio.sleep(0.05)  # a read that takes a while: the others arrive meanwhile
        return await get(name)

    store.get = counting_get

    async def scenario():
        calls = [Circuit(store, key, FAST) for _ in range(300)]
        probes = await asyncio.gather(*(c.admit(Waited()) for c in calls))
        assert probes == [False] * 300  # a closed circuit: every call goes ahead
        await asyncio.sleep(circuit.CACHE_SECONDS + 0.05)
        await calls[0].admit(Waited())  # past the cache: read again, once

    run(scenario())
    assert reads == 2


def test_circuits_are_per_judge_and_endpoint():
    a = circuit.circuit_key(1, "https://api.example/v1")
    assert a == circuit.circuit_key(1, "https://api.example/v1")
    assert a != circuit.circuit_key(2, "https://api.example/v1")
    assert a != circuit.circuit_key(1, "https://other.example/v1")
