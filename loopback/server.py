"""A loopback HTTP server that speaks the OpenAI chat-completions protocol.

Tests and benchmarks point the *real* ``openai`` client at this server instead of mocking
it, so retries, timeouts, JSON decoding and connection pooling are exercised for real.
The server runs aiohttp on its own event loop in a daemon thread, which lets synchronous
code (pytest tests, benchmark scripts) start it, read ``base_url`` and stop it.

Nothing here imports Django: bench scripts import this package without settings.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import math
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import TracebackType
from typing import Any, TypeAlias

from aiohttp import web

logger = logging.getLogger(__name__)

DEFAULT_MODELS: tuple[str, ...] = ("gpt-4o-mini",)
DEFAULT_RATIONALE = "Loopback judge: the default responder passes every criterion."
# Looks like a model that stopped mid-object: valid prefix, invalid JSON.
DEFAULT_MALFORMED_CONTENT = '{"verdict": "pass", "rationale": "the answer cites the'
# How long runner.cleanup() waits for in-flight handlers (e.g. a stalled timeout fault)
# before cancelling them; stopping a test server must never take seconds.
_SHUTDOWN_GRACE_SECONDS = 0.25
_START_TIMEOUT_SECONDS = 10.0
_MAX_BODY = 64 * 1024 * 1024


class FaultKind(StrEnum):
    """The failure modes the server can inject."""

    RATE_LIMIT = "rate_limit"  # 429 + Retry-After
    SERVER_ERROR = "server_error"  # 500
    SERVICE_UNAVAILABLE = "service_unavailable"  # 503
    TIMEOUT = "timeout"  # stall longer than the client's timeout, then answer
    MALFORMED_JSON = "malformed_json"  # 200 whose message.content is not JSON
    TRUNCATED_BODY = "truncated_body"  # 200 whose HTTP body is cut mid-JSON


# Faults the openai client retries on its own (status >= 500 / 429 / connection errors).
TRANSIENT_FAULT_KINDS: tuple[FaultKind, ...] = (
    FaultKind.RATE_LIMIT,
    FaultKind.SERVER_ERROR,
    FaultKind.SERVICE_UNAVAILABLE,
    FaultKind.TIMEOUT,
    FaultKind.TRUNCATED_BODY,
)
# What fault_rate draws from unless told otherwise: cheap to retry (no client timeout).
DEFAULT_FAULT_KINDS: tuple[FaultKind, ...] = (
    FaultKind.RATE_LIMIT,
    FaultKind.SERVER_ERROR,
    FaultKind.SERVICE_UNAVAILABLE,
)


@dataclass(frozen=True)
class Fault:
    """One injected failure. Return it from a responder or a fault plan.

    Fields left as ``None`` fall back to the server's defaults (``retry_after``,
    ``timeout_delay``) or to a sensible built-in value.
    """

    kind: FaultKind
    # rate_limit (and optionally service_unavailable): value of the Retry-After header.
    retry_after: float | None = None
    # timeout: how long the server stalls before answering.
    delay: float | None = None
    # malformed_json: the broken message content. timeout / truncated_body: the content of
    # the completion that is (eventually, or partially) sent; None means default responder.
    content: str | None = None
    # HTTP error faults: override the error message / status (e.g. 502 for server_error).
    message: str | None = None
    status: int | None = None

    def __post_init__(self) -> None:
        # Accept plain strings ("rate_limit") so plans can be written tersely.
        object.__setattr__(self, "kind", FaultKind(self.kind))

    @classmethod
    def rate_limit(cls, retry_after: float | None = None, message: str | None = None) -> Fault:
        return cls(FaultKind.RATE_LIMIT, retry_after=retry_after, message=message)

    @classmethod
    def server_error(cls, status: int = 500, message: str | None = None) -> Fault:
        return cls(FaultKind.SERVER_ERROR, status=status, message=message)

    @classmethod
    def service_unavailable(
        cls, retry_after: float | None = None, message: str | None = None
    ) -> Fault:
        return cls(FaultKind.SERVICE_UNAVAILABLE, retry_after=retry_after, message=message)

    @classmethod
    def timeout(cls, delay: float | None = None, content: str | None = None) -> Fault:
        return cls(FaultKind.TIMEOUT, delay=delay, content=content)

    @classmethod
    def malformed_json(cls, content: str = DEFAULT_MALFORMED_CONTENT) -> Fault:
        return cls(FaultKind.MALFORMED_JSON, content=content)

    @classmethod
    def truncated_body(cls, content: str | None = None) -> Fault:
        return cls(FaultKind.TRUNCATED_BODY, content=content)

    @classmethod
    def coerce(cls, value: Fault | FaultKind | str) -> Fault:
        """Turn ``"rate_limit"`` / ``FaultKind.RATE_LIMIT`` / ``Fault(...)`` into a Fault."""
        return value if isinstance(value, Fault) else cls(FaultKind(value))


def _message_text(message: dict[str, Any]) -> str:
    """Text of one chat message; content may be a string or a list of typed parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


def request_key(body: dict[str, Any]) -> str:
    """Stable identity of a request body; the openai client resends identical bodies on retry."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class ChatRequest:
    """A parsed ``POST /v1/chat/completions`` body, as handed to responders and plans."""

    model: str
    messages: list[dict[str, Any]] = field(hash=False)
    temperature: float | None = None
    seed: int | None = None
    response_format: dict[str, Any] | None = field(default=None, hash=False)
    n: int = 1
    max_tokens: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, hash=False, repr=False)
    key: str = ""

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> ChatRequest:
        """Validate the fields we rely on; raise ApiError(400) like the real API would."""
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise ApiError.invalid_request("you must provide a model parameter", param="model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ApiError.invalid_request("'messages' must be a non-empty array", param="messages")
        if not all(isinstance(m, dict) for m in messages):
            raise ApiError.invalid_request("each message must be an object", param="messages")
        n = body.get("n")
        n = 1 if n is None else n
        if not isinstance(n, int) or n < 1:
            raise ApiError.invalid_request("'n' must be a positive integer", param="n")
        response_format = body.get("response_format")
        if response_format is not None and not isinstance(response_format, dict):
            raise ApiError.invalid_request(
                "'response_format' must be an object", param="response_format"
            )
        # max_completion_tokens is the newer spelling; honour whichever was sent.
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        return cls(
            model=model,
            messages=messages,
            temperature=body.get("temperature"),
            seed=body.get("seed"),
            response_format=response_format,
            n=n,
            max_tokens=max_tokens if isinstance(max_tokens, int) else None,
            raw=body,
            key=request_key(body),
        )

    @property
    def last_user_text(self) -> str:
        """Text of the last ``user`` message ("" if there is none)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _message_text(message)
        return ""

    @property
    def system_text(self) -> str:
        """All system/developer message text, joined by newlines."""
        roles = ("system", "developer")
        return "\n".join(_message_text(m) for m in self.messages if m.get("role") in roles)

    @property
    def response_format_type(self) -> str | None:
        """``"text"``, ``"json_object"``, ``"json_schema"`` or None."""
        return (self.response_format or {}).get("type")

    @property
    def json_schema(self) -> dict[str, Any] | None:
        """The JSON schema of a structured-outputs request, else None."""
        if self.response_format_type != "json_schema":
            return None
        schema = (self.response_format or {}).get("json_schema", {}).get("schema")
        return schema if isinstance(schema, dict) else None

    @property
    def prompt_text(self) -> str:
        """Every message's text, concatenated (what usage.prompt_tokens approximates)."""
        return "".join(_message_text(m) for m in self.messages)


ResponderResult: TypeAlias = dict[str, Any] | list[Any] | str | Fault
Responder: TypeAlias = Callable[[ChatRequest], ResponderResult | Awaitable[ResponderResult]]
# (request, attempt) -> Fault | None; attempt counts earlier calls with the same body.
FaultPlan: TypeAlias = Callable[[ChatRequest, int], Fault | None]
Latency: TypeAlias = float | Callable[[ChatRequest], float]


@dataclass(frozen=True)
class CallRecord:
    """What the server did with one HTTP request."""

    seq: int
    method: str
    path: str
    status: int
    request: ChatRequest | None  # None for endpoints other than chat completions
    fault: Fault | None = None
    fault_source: str | None = None  # "responder", "plan" or "fault_rate"
    latency: float = 0.0  # injected latency (a timeout fault stalls fault.delay on top)
    started_at: float = 0.0  # time.time() when the request arrived

    @property
    def fault_kind(self) -> FaultKind | None:
        return self.fault.kind if self.fault else None


class ApiError(Exception):
    """An error answered with an OpenAI-shaped body: {"error": {message, type, param, code}}."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",  # mirrors the wire field name
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}

    @classmethod
    def invalid_request(cls, message: str, param: str | None = None) -> ApiError:
        return cls(400, message, param=param)

    def to_response(self) -> web.Response:
        body = {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }
        return web.json_response(body, status=self.status, headers=self.headers)


def _placeholder(schema: dict[str, Any]) -> Any:
    """A value of the schema's declared type, so default answers satisfy any schema."""
    if schema.get("enum"):
        return schema["enum"][0]
    declared = schema.get("type")
    kind = declared[0] if isinstance(declared, list) and declared else declared
    defaults: dict[str, Any] = {
        "string": "",
        "number": 0,
        "integer": 0,
        "boolean": False,
        "array": [],
        "object": {},
    }
    return defaults.get(kind) if isinstance(kind, str) else None


# How a batched judge prompt lists its criteria (evaluation/judging/batched.py): after this
# line, one "<number>. <criterion>" per line, to the end of the last user message.
CRITERIA_HEADING = "\n\nCriteria:\n"


def listed_criteria(request: ChatRequest) -> list[tuple[int, str]]:
    """The numbered criteria of a batched judge prompt; [] for a single-criterion prompt."""
    text = request.last_user_text
    if CRITERIA_HEADING not in text:
        return []
    found = []
    for line in text.rsplit(CRITERIA_HEADING, 1)[1].split("\n"):
        number, dot, criterion = line.partition(". ")
        if dot and number.isdigit():
            found.append((int(number), criterion))
    return found


def default_responder(request: ChatRequest) -> dict[str, Any]:
    """A passing verdict (one per criterion for a batched prompt); also fills any other
    required key of a structured-outputs schema."""
    if listed := listed_criteria(request):
        return {
            "verdicts": [
                {"criterion": n, "verdict": "pass", "failure_kind": None,
                 "rationale": DEFAULT_RATIONALE}
                for n, _ in listed
            ]
        }  # fmt: skip
    body: dict[str, Any] = {"verdict": "pass", "failure_kind": None, "rationale": DEFAULT_RATIONALE}
    schema = request.json_schema
    if schema:
        properties = schema.get("properties", {})
        for key in schema.get("required", []):
            body.setdefault(key, _placeholder(properties.get(key, {})))
    return body


def approx_tokens(text: str) -> int:
    """Deterministic token estimate (~4 characters per token, like English text)."""
    return math.ceil(len(text) / 4)


def _format_seconds(seconds: float) -> str:
    """Retry-After wants integer seconds; keep fractions because the openai client accepts them."""
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"


def _content_to_text(result: dict[str, Any] | list[Any] | str) -> str:
    """Responder output -> message.content: structures as JSON, strings verbatim."""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


class LoopbackOpenAI:
    """OpenAI-compatible chat-completions server on 127.0.0.1, run in a background thread.

    ``with LoopbackOpenAI(responder=fn, latency=0.0) as server:`` then point
    ``openai.OpenAI(base_url=server.base_url, api_key="x")`` at it. Attributes other than
    the constructor's bind address (``latency``, ``fault_rate``, ``responder`` ...) are read
    on every request and may be changed while the server runs.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency: Latency = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Sequence[str] = DEFAULT_MODELS,
        strict_models: bool = False,
        api_key: str | None = None,
        supports_structured_outputs: bool = True,
        validate_structured_outputs: bool = True,
        enforce_max_tokens: bool = True,
        fault_rate: float = 0.0,
        fault_kinds: Iterable[Fault | FaultKind | str] = DEFAULT_FAULT_KINDS,
        seed: int = 0,
        max_faults_per_request: int | None = 1,
        fault_plan: FaultPlan | None = None,
        retry_after: float = 1.0,
        timeout_delay: float = 30.0,
        reasoning_models: Sequence[str] = (),
        reasoning_tokens: int = 64,
        prompt_cache: bool = False,
        prompt_cache_block: int = 128,
    ) -> None:
        self.responder = responder or default_responder
        # Models that behave as reasoning models (o-series): they refuse `max_tokens` and a
        # temperature other than 1, and report reasoning tokens, which count against
        # `max_completion_tokens` and are billed as completion tokens.
        self.reasoning_models = tuple(reasoning_models)
        self.reasoning_tokens = reasoning_tokens
        # A provider's prompt cache: a prompt's prefix already seen, in whole blocks of
        # `prompt_cache_block` tokens, is reported as usage.prompt_tokens_details.cached_tokens.
        self.prompt_cache = prompt_cache
        self.prompt_cache_block = prompt_cache_block
        self.latency = latency
        self.models = tuple(models)
        self.strict_models = strict_models
        self.api_key = api_key
        self.supports_structured_outputs = supports_structured_outputs
        self.validate_structured_outputs = validate_structured_outputs
        self.enforce_max_tokens = enforce_max_tokens
        self.fault_rate = fault_rate
        self.fault_kinds = fault_kinds
        self.seed = seed
        self.max_faults_per_request = max_faults_per_request
        self.fault_plan = fault_plan
        self.retry_after = retry_after
        self.timeout_delay = timeout_delay
        self._host = host
        self._requested_port = port
        self._port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        # Handlers run on the server thread while tests read from theirs: one lock for all.
        self._lock = threading.Lock()
        self._clients: list[Any] = []  # sync clients made by client(), closed by stop()
        self._reset_state()

    # ----------------------------------------------------------------- public state

    @property
    def responder(self) -> Responder:
        return self._responder

    @responder.setter
    def responder(self, responder: Responder) -> None:
        if not callable(responder):
            raise TypeError("responder must be callable")
        self._responder = responder

    @property
    def fault_kinds(self) -> tuple[Fault, ...]:
        """What fault_rate draws from; kinds given as strings become default Faults."""
        return self._fault_kinds

    @fault_kinds.setter
    def fault_kinds(self, kinds: Iterable[Fault | FaultKind | str]) -> None:
        self._fault_kinds = tuple(Fault.coerce(kind) for kind in kinds)

    @property
    def host(self) -> str:
        return self._host

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("LoopbackOpenAI is not running; call start() first")
        return self._port

    @property
    def url(self) -> str:
        """Server root, e.g. ``http://127.0.0.1:54321``."""
        return f"http://{self._host}:{self.port}"

    @property
    def base_url(self) -> str:
        """What to pass as the openai client's ``base_url``, e.g. ``http://127.0.0.1:54321/v1``."""
        return f"{self.url}/v1"

    @property
    def running(self) -> bool:
        return self._port is not None

    @property
    def calls(self) -> list[CallRecord]:
        """A snapshot of every request handled so far, in arrival order."""
        with self._lock:
            return list(self._calls)

    @property
    def call_count(self) -> int:
        """Number of HTTP requests received (every endpoint, including errors)."""
        with self._lock:
            return len(self._calls)

    @property
    def fault_counts(self) -> Counter[FaultKind]:
        """Injected faults by kind (a copy)."""
        with self._lock:
            return Counter(self._fault_counts)

    @property
    def max_concurrency(self) -> int:
        """Peak number of requests in flight at once since start/reset."""
        with self._lock:
            return self._max_in_flight

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    @property
    def errors(self) -> list[BaseException]:
        """Exceptions raised by responders/plans (each answered as a non-retryable 500)."""
        with self._lock:
            return list(self._errors)

    def reset(self) -> None:
        """Forget calls, counters and per-request fault history (the responder stays)."""
        with self._lock:
            in_flight = self._in_flight
            self._reset_state()
            self._in_flight = in_flight
            self._max_in_flight = in_flight

    def _reset_state(self) -> None:
        self._cached_prefixes: set[str] = set()
        self._calls: list[CallRecord] = []
        self._seq = 0
        self._fault_counts: Counter[FaultKind] = Counter()
        self._attempts_by_key: Counter[str] = Counter()
        self._faults_by_key: Counter[str] = Counter()
        self._errors: list[BaseException] = []
        self._in_flight = 0
        self._max_in_flight = 0

    def client(self, **kwargs: Any) -> Any:
        """An ``openai.OpenAI`` pointed at this server, closed when the server stops.

        openai is imported lazily so the server itself does not depend on it.
        """
        import openai

        kwargs.setdefault("api_key", self.api_key or "loopback")
        client = openai.OpenAI(base_url=self.base_url, **kwargs)
        with self._lock:
            self._clients.append(client)
        return client

    def async_client(self, **kwargs: Any) -> Any:
        """An ``openai.AsyncOpenAI`` pointed at this server.

        Not closed by stop(): its connections belong to the caller's event loop, so use
        ``async with server.async_client() as client:``.
        """
        import openai

        kwargs.setdefault("api_key", self.api_key or "loopback")
        return openai.AsyncOpenAI(base_url=self.base_url, **kwargs)

    # ------------------------------------------------------------------- lifecycle

    def start(self) -> LoopbackOpenAI:
        """Bind and serve in a daemon thread; returns once the port is known."""
        if self._thread is not None:
            raise RuntimeError("LoopbackOpenAI already started")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=self._run_loop, args=(loop,), name="loopback-openai", daemon=True
        )
        self._loop, self._thread = loop, thread
        thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start_site(), loop)
        try:
            self._port = future.result(timeout=_START_TIMEOUT_SECONDS)
        except BaseException:
            self._stop_loop()
            raise
        return self

    def stop(self) -> None:
        """Close the listener, cancel stalled handlers and join the thread. Idempotent."""
        with self._lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()
        if self._loop is None:
            return
        if self._runner is not None:
            future = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
            try:
                future.result(timeout=_SHUTDOWN_GRACE_SECONDS + 5.0)
            except Exception:  # a dirty shutdown must not mask the test's own outcome
                logger.exception("loopback server cleanup failed")
            self._runner = None
        self._stop_loop()

    def go_down(self) -> None:
        """An outage: close the listener and drop the requests in flight, as a crashed
        endpoint does (new connections are refused). Counters and settings are kept, and
        `come_up()` serves again on the same port."""
        if self._loop is None or self._runner is None:
            raise RuntimeError("LoopbackOpenAI is not serving")
        runner, self._runner = self._runner, None
        future = asyncio.run_coroutine_threadsafe(runner.cleanup(), self._loop)
        future.result(timeout=_SHUTDOWN_GRACE_SECONDS + 5.0)

    def come_up(self) -> None:
        """Serve again on the port of before the outage."""
        if self._loop is None or self._runner is not None:
            raise RuntimeError("LoopbackOpenAI is not down")
        self._requested_port = self.port
        future = asyncio.run_coroutine_threadsafe(self._start_site(), self._loop)
        future.result(timeout=_START_TIMEOUT_SECONDS)

    @property
    def down(self) -> bool:
        return self._loop is not None and self._runner is None

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=5.0)
        self._loop = self._thread = None
        self._port = None

    def __enter__(self) -> LoopbackOpenAI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @staticmethod
    def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _start_site(self) -> int:
        runner = web.AppRunner(
            self._build_app(),
            access_log=None,
            # Cancel a handler when its client hangs up, so stalled timeout faults do not
            # linger until shutdown.
            handler_cancellation=True,
            shutdown_timeout=_SHUTDOWN_GRACE_SECONDS,
        )
        await runner.setup()
        # A deep backlog so bursts of hundreds of new connections are not refused.
        site = web.TCPSite(runner, self._host, self._requested_port, backlog=1024)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        return int(runner.addresses[0][1])

    def _build_app(self) -> web.Application:
        # Judge prompts embed whole answers; aiohttp's 1 MiB default body limit is too low.
        app = web.Application(middlewares=[self._make_middleware()], client_max_size=_MAX_BODY)
        app.router.add_post("/v1/chat/completions", self._handle_chat)
        app.router.add_get("/v1/models", self._handle_models)
        # Registered last: aiohttp tries routes in order, so this only sees unknown URLs
        # (and known URLs with the wrong method, which the real API also answers with 404).
        app.router.add_route("*", "/{tail:.*}", self._handle_unknown)
        return app

    # -------------------------------------------------------------------- handlers

    def _make_middleware(self) -> Any:
        @web.middleware
        async def middleware(
            request: web.Request,
            handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
        ) -> web.StreamResponse:
            self._enter_flight()
            started_at = time.time()
            try:
                self._check_auth(request)
                return await handler(request)
            except ApiError as exc:
                error = exc
            except web.HTTPException as exc:  # aiohttp's own, e.g. 413 past client_max_size
                error = ApiError(exc.status, exc.reason)
            finally:
                self._leave_flight()
            # Handlers record their own successes (the chat handler before it stalls);
            # every rejection is recorded here, before the response is written.
            self._record(request, error.status, None, started_at=started_at)
            return error.to_response()

        return middleware

    def _enter_flight(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave_flight(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _check_auth(self, request: web.Request) -> None:
        if self.api_key is None:
            return
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "bearer" and token.strip() == self.api_key:
            return
        message = "Incorrect API key provided." if header else "You didn't provide an API key."
        raise ApiError(401, message, code="invalid_api_key")

    async def _handle_unknown(self, request: web.Request) -> web.StreamResponse:
        raise ApiError(404, f"Invalid URL ({request.method} {request.path})", code="unknown_url")

    async def _handle_models(self, request: web.Request) -> web.StreamResponse:
        created = time.time()
        data = [
            {"id": name, "object": "model", "created": int(created), "owned_by": "loopback"}
            for name in self.models
        ]
        self._record(request, 200, None, started_at=created)
        return web.json_response({"object": "list", "data": data})

    async def _handle_chat(self, http_request: web.Request) -> web.StreamResponse:
        started_at = time.time()
        request = ChatRequest.from_body(await self._read_json(http_request))
        self._check_chat_request(request)
        attempt = self._next_attempt(request.key)
        fault, source = self._plan_fault(request, attempt)
        contents: list[str] = []
        if fault is None:
            fault, contents = await self._run_responder(request)
            source = "responder" if fault else None
        latency = self._latency_for(request)
        response = self._build_response(request, fault, contents)
        # Record before sleeping: a client that times out must already see its call
        # counted, not race against the handler's cancellation.
        seq = self._record(
            http_request, response.status, request, fault, source, latency, started_at
        )
        delay = latency + (self._timeout_delay(fault) if fault else 0.0)
        if delay > 0:
            await asyncio.sleep(delay)  # never time.sleep: 64 stalled calls must overlap
        response.headers["x-request-id"] = f"req_loopback_{seq}"
        if fault is not None and fault.kind is FaultKind.TRUNCATED_BODY:
            return await self._send_truncated(http_request, response)
        return response

    async def _read_json(self, http_request: web.Request) -> dict[str, Any]:
        try:
            body = json.loads(await http_request.read() or b"null")
        except ValueError as exc:
            raise ApiError.invalid_request(f"We could not parse the JSON body: {exc}") from exc
        if not isinstance(body, dict):
            raise ApiError.invalid_request("The request body must be a JSON object")
        return body

    def _check_chat_request(self, request: ChatRequest) -> None:
        if request.raw.get("stream"):
            raise ApiError.invalid_request(
                "LoopbackOpenAI does not implement streaming", param="stream"
            )
        if self.strict_models and request.model not in self.models:
            raise ApiError(
                404,
                f"The model `{request.model}` does not exist or you do not have access to it.",
                code="model_not_found",
            )
        if request.model in self.reasoning_models:
            self._check_reasoning_request(request)
        if request.response_format_type == "json_schema" and not self.supports_structured_outputs:
            # Same wording/shape as the real API for models without structured outputs, so
            # the judge client's fallback to JSON mode can key on param == "response_format".
            raise ApiError.invalid_request(
                "Invalid parameter: 'response_format' of type 'json_schema' is not supported "
                "with this model.",
                param="response_format",
            )

    @staticmethod
    def _check_reasoning_request(request: ChatRequest) -> None:
        """What OpenAI's reasoning models answer to parameters they do not take."""
        if "max_tokens" in request.raw:
            raise ApiError.invalid_request(
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                "'max_completion_tokens' instead.",
                param="max_tokens",
            )
        temperature = request.raw.get("temperature")
        if temperature is not None and temperature != 1:
            raise ApiError.invalid_request(
                f"Unsupported value: 'temperature' does not support {temperature} with this "
                "model. Only the default (1) value is supported.",
                param="temperature",
            )

    # --------------------------------------------------------------- fault planning

    def _next_attempt(self, key: str) -> int:
        with self._lock:
            attempt = self._attempts_by_key[key]
            self._attempts_by_key[key] += 1
            return attempt

    def _plan_fault(self, request: ChatRequest, attempt: int) -> tuple[Fault | None, str | None]:
        """Explicit plan first, then the random fault_rate; the responder is not consulted."""
        if self.fault_plan is not None:
            try:
                fault = self.fault_plan(request, attempt)
            except Exception as exc:
                raise self._internal_error("fault_plan", exc) from exc
            if fault is not None:
                return Fault.coerce(fault), "plan"
        fault = self._random_fault(request, attempt)
        return (fault, "fault_rate") if fault else (None, None)

    def _random_fault(self, request: ChatRequest, attempt: int) -> Fault | None:
        if self.fault_rate <= 0 or not self.fault_kinds:
            return None
        with self._lock:
            faults_so_far = self._faults_by_key[request.key]
        limit = self.max_faults_per_request
        if limit is not None and faults_so_far >= limit:
            return None
        # Seed per (seed, body, attempt) rather than sharing one Random: concurrent
        # requests arrive in a nondeterministic order, but each one's fate must not depend
        # on that order for a seeded run to be reproducible.
        rng = random.Random(f"{self.seed}|{request.key}|{attempt}")  # noqa: S311 - not crypto
        if rng.random() >= self.fault_rate:
            return None
        return rng.choice(self.fault_kinds)

    def _timeout_delay(self, fault: Fault) -> float:
        if fault.kind is not FaultKind.TIMEOUT:
            return 0.0
        return self.timeout_delay if fault.delay is None else fault.delay

    def _latency_for(self, request: ChatRequest) -> float:
        latency = self.latency(request) if callable(self.latency) else self.latency
        return max(0.0, float(latency))

    # ------------------------------------------------------------------ responding

    async def _run_responder(self, request: ChatRequest) -> tuple[Fault | None, list[str]]:
        """Call the responder once per choice; the first Fault returned wins."""
        contents: list[str] = []
        for _ in range(request.n):
            try:
                result = self.responder(request)
                if inspect.isawaitable(result):
                    result = await result
            except Exception as exc:
                raise self._internal_error("responder", exc) from exc
            if isinstance(result, Fault):
                return result, []
            contents.append(self._checked_content(request, result))
        return None, contents

    def _checked_content(self, request: ChatRequest, result: Any) -> str:
        if not isinstance(result, dict | list | str):
            raise self._internal_error(
                "responder", TypeError(f"responder returned {type(result).__name__}")
            )
        schema = request.json_schema
        if self.validate_structured_outputs and schema and isinstance(result, dict):
            missing = [k for k in schema.get("required", []) if k not in result]
            if missing:
                # Real structured outputs never miss required keys; a responder that does
                # is a test bug, so fail loudly rather than hand the client odd data.
                raise self._internal_error(
                    "responder", ValueError(f"result misses required keys {missing}")
                )
        return _content_to_text(result)

    def _internal_error(self, where: str, exc: Exception) -> ApiError:
        logger.error("loopback %s raised %r", where, exc, exc_info=exc)
        with self._lock:
            self._errors.append(exc)
        # x-should-retry: false stops the client from retrying a deterministic test bug.
        return ApiError(
            500,
            f"LoopbackOpenAI {where} raised {type(exc).__name__}: {exc}",
            type="server_error",
            code="loopback_internal_error",
            headers={"x-should-retry": "false"},
        )

    def _build_response(
        self, request: ChatRequest, fault: Fault | None, contents: list[str]
    ) -> web.Response:
        if fault is None:
            return web.json_response(self._completion(request, contents))
        if fault.kind in (
            FaultKind.RATE_LIMIT,
            FaultKind.SERVER_ERROR,
            FaultKind.SERVICE_UNAVAILABLE,
        ):
            return self._fault_error(fault).to_response()
        if fault.kind is FaultKind.MALFORMED_JSON:
            content = fault.content if fault.content is not None else DEFAULT_MALFORMED_CONTENT
        elif fault.content is not None:
            content = fault.content
        else:  # timeout / truncated_body: the body that is eventually (partly) sent
            content = _content_to_text(default_responder(request))
        return web.json_response(self._completion(request, [content] * request.n))

    def _fault_error(self, fault: Fault) -> ApiError:
        headers: dict[str, str] = {}
        retry_after = fault.retry_after
        if fault.kind is FaultKind.RATE_LIMIT:
            retry_after = self.retry_after if retry_after is None else retry_after
            status, type_, code = 429, "requests", "rate_limit_exceeded"
            message = "Rate limit reached (injected by LoopbackOpenAI)."
        elif fault.kind is FaultKind.SERVICE_UNAVAILABLE:
            status, type_, code = fault.status or 503, "server_error", "service_unavailable"
            message = "The server is overloaded or not ready yet (injected by LoopbackOpenAI)."
        else:
            status, type_, code = fault.status or 500, "server_error", None
            message = "The server had an error processing your request (injected)."
        if retry_after is not None:
            # The openai client prefers retry-after-ms (precise) over Retry-After (seconds).
            headers["Retry-After"] = _format_seconds(retry_after)
            headers["retry-after-ms"] = str(round(retry_after * 1000))
        return ApiError(status, fault.message or message, type=type_, code=code, headers=headers)

    def _completion(self, request: ChatRequest, contents: list[str]) -> dict[str, Any]:
        choices = []
        completion_tokens = 0
        reasoning = self.reasoning_tokens if request.model in self.reasoning_models else 0
        for index, content in enumerate(contents):
            content, finish_reason = self._apply_max_tokens(request, content, reasoning)
            completion_tokens += approx_tokens(content) + reasoning
            choices.append(
                {
                    "index": index,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            )
        # ~4 tokens of framing per message, as the real tokenizer adds role markers.
        prompt_tokens = approx_tokens(request.prompt_text) + 4 * len(request.messages)
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if self.prompt_cache:
            usage["prompt_tokens_details"] = {"cached_tokens": self._cached_tokens(request)}
        if reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning * len(contents)}
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "system_fingerprint": "fp_loopback",
            "choices": choices,
            "usage": usage,
        }

    def _cached_tokens(self, request: ChatRequest) -> int:
        """Tokens of the longest prefix, in whole blocks, of a prompt seen before (the
        prompt's messages in order, as a provider's cache keys them); remembers this one."""
        text = request.prompt_text
        block = max(1, self.prompt_cache_block) * 4  # characters
        prefixes = [
            hashlib.sha256(text[:end].encode()).hexdigest()
            for end in range(block, len(text) + 1, block)
        ]
        with self._lock:
            hits = 0
            for prefix in prefixes:
                if prefix not in self._cached_prefixes:
                    break
                hits += 1
            self._cached_prefixes.update(prefixes)
        return hits * max(1, self.prompt_cache_block)

    def _apply_max_tokens(
        self, request: ChatRequest, content: str, reasoning: int = 0
    ) -> tuple[str, str]:
        """Cut content at max_tokens like a real model: finish_reason "length", broken JSON.
        A reasoning model's reasoning tokens come out of the same cap first."""
        limit = request.max_tokens
        if limit is None or not self.enforce_max_tokens:
            return content, "stop"
        room = limit - reasoning
        if approx_tokens(content) <= room:
            return content, "stop"
        return content[: max(0, room) * 4], "length"

    @staticmethod
    async def _send_truncated(http_request: web.Request, full: web.Response) -> web.StreamResponse:
        """Announce the full Content-Length, send half of the body, then hang up."""
        body = full.body if isinstance(full.body, bytes) else b""
        response = web.StreamResponse(status=200, headers=full.headers)
        response.content_length = len(body)
        await response.prepare(http_request)
        await response.write(body[: len(body) // 2])
        # Closing with bytes still owed is what a crashing proxy looks like: the client's
        # HTTP parser must notice the short body instead of waiting for more.
        if http_request.transport is not None:
            http_request.transport.close()
        return response

    # ------------------------------------------------------------------- recording

    def _record(
        self,
        http_request: web.Request,
        status: int,
        request: ChatRequest | None,
        fault: Fault | None = None,
        source: str | None = None,
        latency: float = 0.0,
        started_at: float = 0.0,
    ) -> int:
        with self._lock:
            self._seq += 1
            record = CallRecord(
                seq=self._seq,
                method=http_request.method,
                path=http_request.path,
                status=status,
                request=request,
                fault=fault,
                fault_source=source,
                latency=latency,
                started_at=started_at,
            )
            self._calls.append(record)
            if fault is not None:
                self._fault_counts[fault.kind] += 1
                if request is not None:
                    self._faults_by_key[request.key] += 1
            return record.seq
