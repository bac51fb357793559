"""A circuit breaker per judge: an endpoint that is down pauses the calls that need it
instead of burning through them.

Closed (the normal state), every call goes straight through. Each call that fails for an
outage reason (no connection, a timeout, a 5xx) is counted, and any reply clears the count:
`failures` of them in a row within `window` seconds *open* the circuit. So an endpoint that
fails one call in ten (retried as before) never opens it; one that is down does at once.
Open, calls wait instead of being made, and a failure of a call in flight is not its
result: the call waits and is made again. At the time of the next probe one waiting call
(whoever takes the probe lease first) is made as the probe: a reply of any kind closes the
circuit and every waiting call goes on; another outage failure doubles the delay to the
next probe, from `probe_min` up to `probe_max`. A call that has
waited `max_wait` seconds in all gives up (`Unreachable`): its run ends with a clear reason
and resuming it later continues.

The state lives in Redis when the workers share one (every process and machine sees one
circuit per judge; pages read it to say "waiting for judge X"), else in process memory (the
embedded development mode: one worker process). Each process keeps what it last read for up
to `CACHE_SECONDS`, so a healthy judge costs one Redis read per second per process, not one
per call. A Redis that cannot be read counts as a closed circuit: the breaker never stops
calls that could be made. No Django here, like ratelimit.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import threading
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol

import redis
import redis.asyncio

logger = logging.getLogger(__name__)

KEY_PREFIX = "circuit"
CACHE_SECONDS = 1.0
POLL_SECONDS = 1.0  # how often a waiting call looks at the circuit again, at most
# The failure kinds (evaluation.judging.client._kind) that say the endpoint is down, rather
# than that this one request was wrong or too many: a 429 is the rate limit's business.
OUTAGE_KINDS = ("connection", "timeout")


def is_outage(kind: str) -> bool:
    return kind in OUTAGE_KINDS or (kind.startswith("http_5") and len(kind) == 8)


@dataclass(frozen=True)
class Config:
    failures: int = 10
    window: float = 30.0
    probe_min: float = 5.0
    probe_max: float = 60.0
    max_wait: float = 3600.0


@dataclass(frozen=True)
class Outage:
    """An open circuit: since when (epoch seconds), the next probe, the last error."""

    since: float
    next_probe: float
    delay: float
    last_error: str


@dataclass
class Waited:
    """How long one call has waited for its circuit, over all its attempts."""

    seconds: float = 0.0


class Unreachable(Exception):
    """A call waited for its judge longer than the circuit's max_wait."""

    def __init__(self, outage: Outage, waited: float) -> None:
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(outage.since))
        super().__init__(
            f"The judge has been unreachable since {since}; this call waited "
            f"{waited / 60:.0f} min for it (JUDGE_CIRCUIT_MAX_WAIT). Last error: "
            f"{outage.last_error}"
        )
        self.outage = outage


class Store(Protocol):
    """Where circuits live. Each method is atomic for one key."""

    async def get(self, key: str) -> Outage | None: ...

    async def fail(self, key: str, *, now: float, error: str, config: Config) -> Outage | None:
        """Count an outage failure; the outage if the circuit is (now) open."""
        ...

    async def take_probe(self, key: str, *, now: float, lease: float) -> bool:
        """True for the one caller that may probe now (the probe's time has come)."""
        ...

    async def probe_failed(self, key: str, *, now: float, config: Config) -> None: ...

    async def clear_failures(self, key: str, *, before: float) -> None:
        """Forget the failures counted before `before` (a reply's request was sent then)."""
        ...

    async def close(self, key: str, *, sent: float | None) -> bool:
        """Close the circuit: a probe's reply (`sent` None) always does, another reply only
        when its request was sent after the circuit opened. True when closed."""
        ...


# --- Redis ------------------------------------------------------------------------------
# KEYS: the circuit's hash, its failures' sorted set. ARGV: now, window, failures, probe_min,
# error, a unique member, the keys' time to live (ms). Returns the hash's fields when open.
_FAIL = """
local now = tonumber(ARGV[1])
redis.call('ZADD', KEYS[2], now, ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[2], math.ceil(tonumber(ARGV[2]) * 1000))
if redis.call('HEXISTS', KEYS[1], 'since') == 0 then
  if redis.call('ZCARD', KEYS[2]) < tonumber(ARGV[3]) then return nil end
  redis.call('HSET', KEYS[1], 'since', ARGV[1], 'next_probe', now + tonumber(ARGV[4]),
    'delay', ARGV[4])
end
redis.call('HSET', KEYS[1], 'last_error', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return redis.call('HMGET', KEYS[1], 'since', 'next_probe', 'delay', 'last_error')
"""
# KEYS: the hash. ARGV: now, probe_max. The delay doubles from the time of this failure.
_PROBE_FAILED = """
if redis.call('HEXISTS', KEYS[1], 'since') == 0 then return nil end
local delay = math.min(tonumber(ARGV[2]), tonumber(redis.call('HGET', KEYS[1], 'delay')) * 2)
redis.call('HSET', KEYS[1], 'delay', delay, 'next_probe', tonumber(ARGV[1]) + delay)
redis.call('DEL', KEYS[2])
return 1
"""
# KEYS: the hash, its failures, the probe lease. ARGV: when the reply's request was sent, or
# '' for the probe's reply. Returns 1 when closed.
_CLOSE = """
local since = redis.call('HGET', KEYS[1], 'since')
if since and ARGV[1] ~= '' and tonumber(ARGV[1]) < tonumber(since) then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return 1
"""
# KEYS: the hash, the probe lease. ARGV: now, the lease (ms). One script, so a circuit closed
# between reading it and taking the lease cannot hand out a second probe (close deletes both).
_TAKE_PROBE = """
local next_probe = redis.call('HGET', KEYS[1], 'next_probe')
if not next_probe or tonumber(ARGV[1]) < tonumber(next_probe) then return 0 end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then return 1 end
return 0
"""


def _outage(fields: list | dict | None) -> Outage | None:
    if not fields:
        return None
    if isinstance(fields, dict):
        fields = [fields.get(k) for k in (b"since", b"next_probe", b"delay", b"last_error")]
    since, next_probe, delay, error = fields
    if since is None:
        return None
    text = error.decode() if isinstance(error, bytes) else (error or "")
    return Outage(float(since), float(next_probe), float(delay), text)


# One redis.asyncio client (one connection pool) per event loop and URL: a client belongs to
# the loop that made it. The rewards service's thousand requests share one loop, so their
# circuit reads share one client's connections; a connection made per read timed out under
# that load (issue 45).
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, redis.asyncio.Redis]]
_clients = weakref.WeakKeyDictionary()


# Connections of that client: an operation past them waits up to its timeout for one,
# rather than failing (a burst of call failures writes to the circuit all at once).
SHARED_CONNECTIONS = 32


def shared_client(url: str) -> redis.asyncio.Redis:
    """This event loop's client for `url` (made on first use, kept while the loop lives)."""
    by_url = _clients.setdefault(asyncio.get_running_loop(), {})
    client = by_url.get(url)
    if client is None:
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            url, max_connections=SHARED_CONNECTIONS, timeout=2, socket_connect_timeout=2,
            socket_timeout=2,
        )  # fmt: skip
        client = by_url[url] = redis.asyncio.Redis(connection_pool=pool)
    return client


class RedisStore:
    """Circuits in Redis, shared by every worker, through the loop's shared client."""

    def __init__(self, url: str) -> None:
        self.url = url

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[redis.asyncio.Redis]:
        yield shared_client(self.url)  # not closed: the next operation reuses it

    async def get(self, key: str) -> Outage | None:
        async with self._client() as client:
            return _outage(await client.hgetall(f"{KEY_PREFIX}:{key}"))

    async def fail(self, key: str, *, now: float, error: str, config: Config) -> Outage | None:
        ttl = int(max(config.max_wait * 2, 86400) * 1000)
        args = (now, config.window, config.failures, config.probe_min, error[:500],
                f"{now}:{uuid.uuid4().hex}", ttl)  # fmt: skip
        async with self._client() as client:
            keys = (f"{KEY_PREFIX}:{key}", f"{KEY_PREFIX}:{key}:failures")
            return _outage(await client.eval(_FAIL, 2, *keys, *args))

    async def take_probe(self, key: str, *, now: float, lease: float) -> bool:
        async with self._client() as client:
            keys = (f"{KEY_PREFIX}:{key}", f"{KEY_PREFIX}:{key}:probe")
            lease_ms = max(1, int(lease * 1000))
            return bool(await client.eval(_TAKE_PROBE, 2, *keys, now, lease_ms))

    async def probe_failed(self, key: str, *, now: float, config: Config) -> None:
        async with self._client() as client:
            keys = (f"{KEY_PREFIX}:{key}", f"{KEY_PREFIX}:{key}:probe")
            await client.eval(_PROBE_FAILED, 2, *keys, now, config.probe_max)

    async def clear_failures(self, key: str, *, before: float) -> None:
        async with self._client() as client:
            await client.zremrangebyscore(f"{KEY_PREFIX}:{key}:failures", "-inf", f"({before}")

    async def close(self, key: str, *, sent: float | None) -> bool:
        async with self._client() as client:
            keys = (f"{KEY_PREFIX}:{key}{suffix}" for suffix in ("", ":failures", ":probe"))
            return bool(await client.eval(_CLOSE, 3, *keys, "" if sent is None else sent))


def read_redis(url: str, keys: list[str]) -> dict[str, Outage]:
    """The open circuits among `keys`, for a page (synchronous, one round trip); nothing
    when Redis cannot be read."""
    if not keys:
        return {}
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
        with client, client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.hgetall(f"{KEY_PREFIX}:{key}")
            states = pipe.execute()
    except redis.exceptions.RedisError:
        return {}
    found = {key: _outage(state) for key, state in zip(keys, states, strict=True)}
    return {key: outage for key, outage in found.items() if outage is not None}


# --- Process memory ---------------------------------------------------------------------
class LocalStore:
    """Circuits in this process (one worker process without Redis). A threading.Lock,
    never held across an await, so every thread's event loop can share it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[str, list[float]] = {}
        self._open: dict[str, Outage] = {}
        self._probe_until: dict[str, float] = {}

    async def get(self, key: str) -> Outage | None:
        with self._lock:
            return self._open.get(key)

    async def fail(self, key: str, *, now: float, error: str, config: Config) -> Outage | None:
        with self._lock:
            recent = [t for t in self._failures.get(key, []) if t > now - config.window]
            self._failures[key] = [*recent, now]
            outage = self._open.get(key)
            if outage is None and len(recent) + 1 < config.failures:
                return None
            if outage is None:
                outage = Outage(now, now + config.probe_min, config.probe_min, error[:500])
            self._open[key] = outage = Outage(
                outage.since, outage.next_probe, outage.delay, error[:500]
            )
            return outage

    async def take_probe(self, key: str, *, now: float, lease: float) -> bool:
        with self._lock:
            outage = self._open.get(key)
            if outage is None or now < outage.next_probe or self._probe_until.get(key, 0) > now:
                return False
            self._probe_until[key] = now + lease
            return True

    async def probe_failed(self, key: str, *, now: float, config: Config) -> None:
        with self._lock:
            outage = self._open.get(key)
            self._probe_until.pop(key, None)
            if outage is not None:
                delay = min(config.probe_max, outage.delay * 2)
                self._open[key] = Outage(outage.since, now + delay, delay, outage.last_error)

    async def clear_failures(self, key: str, *, before: float) -> None:
        with self._lock:
            kept = [t for t in self._failures.get(key, []) if t >= before]
            self._failures[key] = kept

    async def close(self, key: str, *, sent: float | None) -> bool:
        with self._lock:
            outage = self._open.get(key)
            if outage is not None and sent is not None and sent < outage.since:
                return False
            self._open.pop(key, None)
            self._failures.pop(key, None)
            self._probe_until.pop(key, None)
            return True


# --- The breaker ------------------------------------------------------------------------
_seen: dict[str, tuple[float, Outage | None]] = {}  # key -> (when read, state): see CACHE
# Circuits this process counted a failure of since its last reply, with the time of the
# latest: only their replies clear the shared count, so a healthy judge's calls never write
# to Redis.
_failing: dict[str, float] = {}
_reading: set[str] = set()  # circuits being read: the other calls use what was last read
# This loop's reads in flight, by circuit: a call with nothing read yet awaits the read
# already under way instead of starting its own. Without it, the rewards service's first
# 256 concurrent calls each read Redis at once, past the shared client's connections, and
# waited out its timeout on a busy machine (CI, issue 45).
_reads: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future]]
_reads = weakref.WeakKeyDictionary()


class Circuit:
    """One judge's circuit, as the calls of a task see it. `admit` before each attempt of
    a call, then `succeeded` or `failed` after it."""

    def __init__(
        self,
        store: Store,
        key: str,
        config: Config,
        *,
        clock: Callable[[], float] = time.time,
        lease: float = 120.0,
    ) -> None:
        self.store, self.key, self.config = store, key, config
        self.clock = clock
        self.lease = lease  # a probe's own time limit: another caller may probe after it

    async def _state(self) -> Outage | None:
        now = time.monotonic()
        seen = _seen.get(self.key)
        if seen is not None and (now - seen[0] < CACHE_SECONDS or self.key in _reading):
            return seen[1]  # fresh enough, or being read by another call right now
        reads = _reads.setdefault(asyncio.get_running_loop(), {})
        read = reads.get(self.key)
        if read is None:
            read = reads[self.key] = asyncio.ensure_future(self._read(now))
            read.add_done_callback(lambda _: reads.pop(self.key, None))
        return await asyncio.shield(read)  # one caller cancelled leaves the read to the rest

    async def _read(self, now: float) -> Outage | None:
        _reading.add(self.key)
        try:
            outage = await self.store.get(self.key)
        except Exception:  # an unreadable circuit is a closed one
            logger.warning("Circuit %s could not be read", self.key, exc_info=True)
            outage = None
        finally:
            _reading.discard(self.key)
        latest = _seen.get(self.key)
        if latest is None or latest[0] <= now:  # a reply or failure seen meanwhile is newer
            _seen[self.key] = (now, outage)
        return outage

    async def admit(self, waited: Waited) -> bool:
        """Wait while the circuit is open; True when this attempt is its probe. `waited`
        is the call's own (its attempts add up); Unreachable once it reaches max_wait."""
        while True:
            outage = await self._state()
            if outage is None:
                return False
            now = self.clock()
            if now >= outage.next_probe and await self._take_probe(now):
                return True
            if waited.seconds >= self.config.max_wait:
                raise Unreachable(outage, waited.seconds)
            pause = min(POLL_SECONDS, max(0.05, outage.next_probe - now))
            await asyncio.sleep(pause)
            waited.seconds += pause

    async def _take_probe(self, now: float) -> bool:
        try:
            return await self.store.take_probe(self.key, now=now, lease=self.lease)
        except Exception:
            return True  # no shared state to agree on: try the endpoint

    def now(self) -> float:
        """The time to pass as `sent` when a call's request goes out."""
        return self.clock()

    async def succeeded(self, *, probe: bool, sent: float) -> None:
        """A reply to a request sent at `sent` clears the failures counted before then, and
        closes an open circuit if it is the probe's or its request went out after the
        circuit opened (a stale read of the circuit let it through).

        A reply to a request sent earlier proves nothing of now: an endpoint going down
        answers the requests it already holds while it refuses new ones. Counting those
        replies as "up" reset the count and even closed a circuit just opened, and calls
        spent their retries on the outage (seen in tests/faults/test_runs.py)."""
        if not probe and (await self._state()) is None:
            last_failure = _failing.get(self.key)
            if last_failure is None:
                return
            if sent >= last_failure:
                _failing.pop(self.key, None)
            try:
                await self.store.clear_failures(self.key, before=sent)
            except Exception:  # the next failure counts from a higher number
                logger.warning("Circuit %s could not be cleared", self.key, exc_info=True)
            return
        try:
            closed = await self.store.close(self.key, sent=None if probe else sent)
        except Exception:
            logger.warning("Circuit %s could not be closed", self.key, exc_info=True)
            closed = True  # as this process sees it: the endpoint answered
        if not closed:
            return
        _failing.pop(self.key, None)
        _seen[self.key] = (time.monotonic(), None)
        if probe:
            logger.warning("Judge circuit %s closed: the endpoint answers again", self.key)

    async def failed(self, error: str, *, probe: bool) -> bool:
        """Count an outage failure; True when the circuit is open, so the call waits and is
        made again instead of recording the failure."""
        now = self.clock()
        _failing[self.key] = max(now, _failing.get(self.key, now))
        try:
            if probe:
                await self.store.probe_failed(self.key, now=now, config=self.config)
            outage = await self.store.fail(self.key, now=now, error=error, config=self.config)
        except Exception:  # without shared state, the failure stands
            logger.warning("Circuit %s could not count a failure", self.key, exc_info=True)
            return False
        if outage is not None and (seen := _seen.get(self.key)) is not None and seen[1] is None:
            logger.warning("Judge circuit %s open: %s", self.key, error)
        _seen[self.key] = (time.monotonic(), outage)
        return outage is not None


_local_store = LocalStore()


def store_for(redis_url: str | None) -> Store:
    if redis_url is not None and redis_url.startswith(("redis://", "rediss://")):
        return RedisStore(redis_url)
    return _local_store


def circuit_key(judge_id: int, base_url: str) -> str:
    """A circuit per judge and endpoint: a judge moved to another endpoint starts closed."""
    digest = hashlib.sha1(base_url.encode(), usedforsecurity=False).hexdigest()[:12]
    return f"judge-{judge_id}:{digest}"
