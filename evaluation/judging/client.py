"""The one judge client: OpenAI-compatible chat completions that return JSON.

Nothing else in the project imports `openai`. Structured outputs (a JSON schema) are asked
for first; an endpoint that refuses them (400 on `response_format`) is remembered and asked
in JSON mode from then on. Transient failures (429, 5xx, timeouts, dropped connections) are
retried by the openai client with exponential backoff and jitter, honouring Retry-After;
they surface as JudgeUnavailable when the retries are spent.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import openai

# Endpoints (base URL, model) known to refuse json_schema response formats.
_NO_STRUCTURED_OUTPUTS: set[tuple[str, str]] = set()

Mode = Literal["json_schema", "json_object"]


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key_env: str = ""  # the *name* of the environment variable holding the key
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = None
    timeout: float = 60.0
    max_retries: int = 4

    def api_key(self) -> str:
        # Local servers (vLLM, Ollama, the loopback test server) accept any key.
        return os.environ.get(self.api_key_env, "") if self.api_key_env else "not-needed"


@dataclass(frozen=True)
class Completion:
    data: dict[str, Any] | None  # None when the output is not a JSON object
    raw: str
    mode: Mode
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


class JudgeUnavailable(Exception):
    """The endpoint could not be reached or kept failing after the client's retries."""


class JudgeRejected(Exception):
    """The endpoint refused the request (bad key, unknown model, invalid request)."""


def parse_json_object(raw: str) -> dict[str, Any] | None:
    """Strict: the whole content must be one JSON object (a fenced block is tolerated)."""
    text = raw.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _response_format(mode: Mode, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    if mode == "json_object":
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


async def complete_json(
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    *,
    schema_name: str,
    schema: dict[str, Any],
) -> Completion:
    client = openai.AsyncOpenAI(
        base_url=endpoint.base_url,
        api_key=endpoint.api_key(),
        timeout=endpoint.timeout,
        max_retries=endpoint.max_retries,
    )
    key = (endpoint.base_url, endpoint.model)
    mode: Mode = "json_object" if key in _NO_STRUCTURED_OUTPUTS else "json_schema"
    try:
        while True:
            started = time.monotonic()
            try:
                response = await client.chat.completions.create(
                    model=endpoint.model,
                    messages=messages,
                    temperature=endpoint.temperature,
                    max_tokens=endpoint.max_tokens,
                    seed=endpoint.seed,
                    response_format=_response_format(mode, schema_name, schema),
                )
            except openai.BadRequestError as exc:
                if mode == "json_schema" and getattr(exc, "param", None) == "response_format":
                    _NO_STRUCTURED_OUTPUTS.add(key)
                    mode = "json_object"
                    continue
                raise JudgeRejected(str(exc)) from exc
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                raise JudgeRejected(str(exc)) from exc
            except (openai.NotFoundError, openai.UnprocessableEntityError) as exc:
                raise JudgeRejected(str(exc)) from exc
            except (openai.APIConnectionError, openai.APIStatusError) as exc:
                # APITimeoutError is an APIConnectionError; 429 and 5xx are APIStatusErrors.
                raise JudgeUnavailable(f"{type(exc).__name__}: {exc}") from exc
            raw = response.choices[0].message.content or ""
            usage = response.usage
            return Completion(
                data=parse_json_object(raw),
                raw=raw,
                mode=mode,
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                latency_ms=round((time.monotonic() - started) * 1000),
            )
    finally:
        await client.close()
