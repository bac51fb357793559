"""Rate limits for LLM judges: requests per minute (RPM) and tokens per minute (TPM).

One limiter per judge, shared by every caller: `RedisTokenBucket` when the workers share a
Redis (every process on every machine sees one bucket), `LocalTokenBucket` in the embedded
development mode (one worker process, no Redis). `limiter_for` picks one. No Django here,
so this module can be imported and tested without settings. See docs/rate-limits.md.

The bucket is a token bucket kept in its "theoretical arrival time" form (GCRA): instead
of a balance and a timestamp, each dimension stores the instant `tat` at which it would be
full again. With capacity C (the per-minute limit) and refill rate r = C/60 per second,
the balance at time t is C - r * max(0, tat - t), and a cost c fits at the first time t
with tat + c/r - 60 <= t. Storing one number per dimension keeps the Lua script short and
makes debt (a reservation in the future) natural.

`acquire` *reserves*: in one atomic step it computes the earliest admission time `at` for
which one request and `tokens` tokens fit, no earlier than the previous reservation (FIFO),
charges both dimensions at `at`, and returns the wait; the caller then sleeps once. Compared
with "check, sleep, check again" this needs one round trip per call, never wakes a herd of
waiters for a single free slot, and cannot starve a large request behind a stream of small
ones. Admissions happen in reservation order, so each dimension sees a plain token bucket
fed in time order: in any window of length w at most C + r*w is admitted.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Callable
from typing import Protocol

import redis.asyncio
import redis.exceptions

WINDOW = 60.0  # seconds: the limits are per minute, and capacity = one minute's worth
# Float rounding may put "exactly full" a hair after now (7 x 60/7 > 60); admitting up to a
# microsecond early is harmless and keeps a burst of C requests at C, not C - 1.
SLACK = 1e-6
KEY_PREFIX = "ratelimit"


class RateLimiter(Protocol):
    async def acquire(self, tokens: int = 0) -> float:
        """Wait until one request and `tokens` tokens may go; return the seconds waited."""
        ...


class Unlimited:
    """No limit: for judges with neither RPM nor TPM set."""

    async def acquire(self, tokens: int = 0) -> float:
        return 0.0

    def __repr__(self) -> str:
        return "Unlimited()"


def _check_limit(name: str, value: int | None) -> int | None:
    # 0 would mean "never" (every request waits forever); refuse it rather than hang a run.
    if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
        raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
    return None if value is None else int(value)


def _check_tokens(tokens: int) -> int:
    if tokens < 0:
        raise ValueError(f"tokens must be >= 0, got {tokens!r}")
    return int(tokens)


class LocalTokenBucket:
    """The same bucket in process memory, for one worker process without Redis.

    A threading.Lock (never held across an await) guards the state, so tasks of one event
    loop and event loops in several threads can share an instance; asyncio.Lock would tie
    it to one loop. `clock` must be monotonic seconds; tests pass a fake one and call
    `reserve`, which does the arithmetic without sleeping.
    """

    def __init__(
        self, *, rpm: int | None, tpm: int | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self.rpm: int | None = None
        self.tpm: int | None = None
        self.configure(rpm=rpm, tpm=tpm)
        # A bucket is full when tat <= now: starting at -inf means full at start (burst).
        self._requests_tat = float("-inf")
        self._tokens_tat = float("-inf")
        self._last = float("-inf")

    def configure(self, *, rpm: int | None, tpm: int | None) -> None:
        """Change the limits in place, keeping what has been used (a judge was edited)."""
        rpm, tpm = _check_limit("rpm", rpm), _check_limit("tpm", tpm)
        with self._lock:
            self.rpm, self.tpm = rpm, tpm

    def reserve(self, tokens: int = 0) -> float:
        """Charge one request and `tokens` tokens now; return how long to wait before going.

        Tokens beyond the TPM capacity are counted as the capacity: such a request waits
        for a full bucket and empties it, instead of waiting for a balance that never comes.
        """
        tokens = _check_tokens(tokens)
        with self._lock:
            now = self._clock()
            at = max(now, self._last)
            request_step = token_step = 0.0
            if self.rpm is not None:
                request_step = WINDOW / self.rpm
                at = max(at, self._requests_tat + request_step - WINDOW - SLACK)
            if self.tpm is not None:
                token_step = min(tokens, self.tpm) * WINDOW / self.tpm
                at = max(at, self._tokens_tat + token_step - WINDOW - SLACK)
            if self.rpm is not None:
                self._requests_tat = max(self._requests_tat, at) + request_step
            if self.tpm is not None:
                self._tokens_tat = max(self._tokens_tat, at) + token_step
            self._last = at
            return max(0.0, at - now)

    def available(self) -> dict[str, float | None]:
        """Requests and tokens that would go at once now (negative: reserved ahead)."""
        with self._lock:
            now = self._clock()
            return {
                "requests": _balance(self.rpm, self._requests_tat, now),
                "tokens": _balance(self.tpm, self._tokens_tat, now),
            }

    async def acquire(self, tokens: int = 0) -> float:
        wait = self.reserve(tokens)
        if wait > 0:
            # A cancelled sleep keeps its reservation: the slot goes unused, which errs on
            # the side of staying under the limit (giving it back would break FIFO order).
            await asyncio.sleep(wait)
        return wait

    def __repr__(self) -> str:
        return f"LocalTokenBucket(rpm={self.rpm}, tpm={self.tpm})"


def _balance(limit: int | None, tat: float, now: float) -> float | None:
    if limit is None:
        return None
    return limit - limit / WINDOW * max(0.0, tat - now)


# KEYS[1]: the bucket's hash. ARGV: rpm, tpm (0 = not limited), tokens.
# Times are microseconds of the Redis server's clock (TIME), so the clocks of the worker
# machines never matter. Microsecond values near 1.7e15 are exact in a double's 53 bits;
# fractions are kept by formatting with %.3f because tostring() keeps only 14 digits.
_SCRIPT = """
local key = KEYS[1]
local rpm = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local tokens = tonumber(ARGV[3])
local window = 60000000
local slack = 1
-- Redis 3.2-4 must be told to replicate effects before a script writes after TIME; 5+
-- does so by default and 7 keeps the call as a no-op.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local state = redis.call('HMGET', key, 'requests', 'tokens', 'last')
local requests_tat = tonumber(state[1]) or 0
local tokens_tat = tonumber(state[2]) or 0
local last = tonumber(state[3]) or 0
local at = math.max(now, last)
local request_step = 0
local token_step = 0
if rpm > 0 then
  request_step = window / rpm
  at = math.max(at, requests_tat + request_step - window - slack)
end
if tpm > 0 then
  token_step = math.min(tokens, tpm) * window / tpm
  at = math.max(at, tokens_tat + token_step - window - slack)
end
local horizon = at
if rpm > 0 then
  requests_tat = math.max(requests_tat, at) + request_step
  horizon = math.max(horizon, requests_tat)
end
if tpm > 0 then
  tokens_tat = math.max(tokens_tat, at) + token_step
  horizon = math.max(horizon, tokens_tat)
end
redis.call('HSET', key,
  'requests', string.format('%.3f', requests_tat),
  'tokens', string.format('%.3f', tokens_tat),
  'last', string.format('%.3f', at),
  'rpm', rpm, 'tpm', tpm)
-- Once every tat has passed, the bucket is full again, which is what a missing key means:
-- the key can go then (plus a second of margin).
redis.call('PEXPIRE', key, math.ceil((horizon - now) / 1000) + 1000)
return math.ceil(at - now)
"""
_SCRIPT_SHA = hashlib.sha1(_SCRIPT.encode(), usedforsecurity=False).hexdigest()


def redis_key(key: str) -> str:
    """The Redis hash holding a bucket's state."""
    return f"{KEY_PREFIX}:{key}"


class RedisTokenBucket:
    """The bucket in Redis, shared by every process that uses the same URL and key.

    One Lua script reads and updates the state atomically. Each acquire opens a connection
    and closes it: a redis.asyncio connection belongs to the loop that opened it, and a
    limiter may outlive a loop, so a cached client could break (or leak) at the next one.
    One connect per LLM call costs well under its latency.
    """

    def __init__(self, *, url: str, key: str, rpm: int | None, tpm: int | None) -> None:
        self.url = url
        self.key = key
        self.rpm = _check_limit("rpm", rpm)
        self.tpm = _check_limit("tpm", tpm)
        self.redis_key = redis_key(key)

    def _client(self) -> redis.asyncio.Redis:
        # Timeouts so a Redis that stops answering fails the call instead of hanging it.
        return redis.asyncio.from_url(self.url, socket_connect_timeout=5, socket_timeout=5)

    async def reserve(self, tokens: int = 0) -> float:
        """Charge one request and `tokens` tokens (capped at TPM); return the wait in seconds."""
        args = (self.rpm or 0, self.tpm or 0, _check_tokens(tokens))
        async with self._client() as client:
            try:
                micros = await client.evalsha(_SCRIPT_SHA, 1, self.redis_key, *args)
            except redis.exceptions.NoScriptError:
                # First use on this server, or after SCRIPT FLUSH / a restart: EVAL sends the
                # body, which also caches it under the same SHA for the next EVALSHA.
                micros = await client.eval(_SCRIPT, 1, self.redis_key, *args)
        return max(0, int(micros)) / 1_000_000

    async def acquire(self, tokens: int = 0) -> float:
        wait = await self.reserve(tokens)
        if wait > 0:
            await asyncio.sleep(wait)  # a cancelled wait keeps its slot; see LocalTokenBucket
        return wait

    async def available(self) -> dict[str, float | None]:
        """Requests and tokens that would go at once now, by the server's clock."""
        async with self._client() as client:
            state = await client.hmget(self.redis_key, ["requests", "tokens"])
            seconds, micros = await client.time()
        now = seconds * 1_000_000 + micros
        requests_tat, tokens_tat = (float(v) if v is not None else 0.0 for v in state)
        return {
            "requests": _balance(self.rpm, requests_tat / 1e6, now / 1e6),
            "tokens": _balance(self.tpm, tokens_tat / 1e6, now / 1e6),
        }

    async def reset(self) -> None:
        """Forget the bucket's state (it becomes full)."""
        async with self._client() as client:
            await client.delete(self.redis_key)

    def __repr__(self) -> str:
        return f"RedisTokenBucket(key={self.key!r}, rpm={self.rpm}, tpm={self.tpm})"


_local_buckets: dict[str, LocalTokenBucket] = {}
_local_buckets_lock = threading.Lock()


def limiter_for(
    *, key: str, rpm: int | None, tpm: int | None, redis_url: str | None
) -> RateLimiter:
    """The limiter for one judge (`key`), shared as widely as `redis_url` allows.

    Redis when the URL is redis:// or rediss:// (the Celery broker in production); otherwise
    (None, the embedded filesystem:// broker, anything else) a bucket in this process,
    one per key, so every task and thread of the process shares it.
    """
    rpm, tpm = _check_limit("rpm", rpm), _check_limit("tpm", tpm)
    if rpm is None and tpm is None:
        return Unlimited()
    if redis_url is not None and redis_url.startswith(("redis://", "rediss://")):
        # No per-process cache needed: the state lives in Redis and the object holds none.
        return RedisTokenBucket(url=redis_url, key=key, rpm=rpm, tpm=tpm)
    with _local_buckets_lock:
        bucket = _local_buckets.get(key)
        if bucket is None:
            bucket = _local_buckets[key] = LocalTokenBucket(rpm=rpm, tpm=tpm)
        elif (bucket.rpm, bucket.tpm) != (rpm, tpm):
            bucket.configure(rpm=rpm, tpm=tpm)
        return bucket
