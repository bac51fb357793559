"""The worker-wide cap on judge calls in flight (client.InFlightGate), across threads that
each run their own event loop, as Celery worker threads do. No database."""

from __future__ import annotations

import asyncio
import threading

from evaluation.judging import client


def test_threads_with_their_own_loops_never_exceed_the_cap_and_all_finish():
    gate = client.InFlightGate(5)
    lock = threading.Lock()
    state = {"now": 0, "peak": 0, "done": 0}

    async def call() -> None:
        async with gate:
            with lock:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            await asyncio.sleep(0.01)
            with lock:
                state["now"] -= 1
                state["done"] += 1

    async def batch() -> None:
        await asyncio.gather(*(call() for _ in range(20)))

    threads = [threading.Thread(target=asyncio.run, args=(batch(),)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert state["done"] == 80
    assert state["peak"] == 5  # the cap is reached, never passed


def test_a_cancelled_waiter_does_not_lose_a_slot():
    gate = client.InFlightGate(1)

    async def scenario() -> None:
        release = asyncio.Event()

        async def holder() -> None:
            async with gate:
                await release.wait()

        held = asyncio.create_task(holder())
        await asyncio.sleep(0)
        waiter = asyncio.create_task(gate.__aenter__())
        await asyncio.sleep(0)
        waiter.cancel()
        release.set()
        await held
        await asyncio.wait_for(gate.__aenter__(), timeout=1)  # the one slot is free again
        await gate.__aexit__(None, None, None)

    asyncio.run(scenario())


def test_no_limit_means_no_gate():
    assert client.worker_gate(0) is None
    assert client.worker_gate(7) is client.worker_gate(7)
