"""A small client of the reward endpoint for RL trainers: a TRL `reward_funcs` callable and
verl `compute_score` functions (batched and per sample), sending to `POST /api/rewards/`;
openrlhf_reward.py beside it is OpenRLHF's `reward_func`, on the same `post_json`.

It runs in the trainer's process, not the workbench's: no Django and no third-party package
here, only the standard library (urllib). Copy this one file beside a training script if
the workbench is not installed there. docs/rewards.md shows a runnable example of each.

A completion the workbench could not score (a judge call failed) has no reward: the TRL
function returns None for it, which TRL leaves out of that reward's mean, and the verl
function returns `failed_reward` with `failed: 1` in its logged extras, so a failure is
always visible and never a silent zero. Pass `failed_reward=None` to TRL's to keep None,
or a number to both to choose.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Environment variables read when an argument is not given (verl passes only its own
# arguments to compute_score, so its settings come from here or `reward_kwargs`).
ENV_URL, ENV_TOKEN = "CWB_URL", "CWB_TOKEN"
ENV_DATASET, ENV_PANEL = "CWB_DATASET", "CWB_PANEL"
DEFAULT_BATCH = 256  # the server's default REWARDS_MAX_BATCH
DEFAULT_TIMEOUT = 600.0  # seconds; a batch waits for every judge call it makes
# A 429 (quota) or 503 (the rewards service is full) is asked again after its Retry-After,
# this many times; a refused connection too, one second apart. Past that, RewardError.
DEFAULT_RETRIES = 8
RETRY_STATUSES = (429, 503)
MAX_RETRY_AFTER = 60.0  # seconds: a longer Retry-After is the trainer's decision, not ours


class RewardError(Exception):
    """The endpoint refused the batch (bad input, quota, permission) or could not be
    reached. The message is the server's `detail` when it sent one."""

    def __init__(self, message: str, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


@dataclass(frozen=True)
class Scored:
    """One completion's answer from the endpoint."""

    reward: float | None
    failed: bool
    undecided: int
    criteria: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RewardClient:
    """Rewards for (query external id, completion) pairs, `batch_size` per request."""

    url: str
    token: str
    dataset: int
    panel: int
    batch_size: int = DEFAULT_BATCH
    timeout: float = DEFAULT_TIMEOUT
    options: Mapping[str, Any] = field(default_factory=dict)  # e.g. {"max_words": 400}
    retries: int = DEFAULT_RETRIES

    @classmethod
    def from_env(cls, **given: Any) -> RewardClient:
        """Arguments given win; the rest come from CWB_URL, CWB_TOKEN, CWB_DATASET and
        CWB_PANEL. A missing one raises a RewardError naming the variable."""
        values = {}
        for name, variable, convert in (
            ("url", ENV_URL, str), ("token", ENV_TOKEN, str),
            ("dataset", ENV_DATASET, int), ("panel", ENV_PANEL, int),
        ):  # fmt: skip
            value = given.pop(name, None)
            if value is None:
                value = os.environ.get(variable)
            if value in (None, ""):
                raise RewardError(f"Set {variable} or pass {name}= to reach the reward endpoint.")
            values[name] = convert(value)
        return cls(**values, **given)

    def score(self, queries: Sequence[str], completions: Sequence[str]) -> list[Scored]:
        """Each completion scored against its query's checklists, in order."""
        if len(queries) != len(completions):
            raise ValueError(f"{len(queries)} query ids for {len(completions)} completions")
        scored: list[Scored] = []
        for start in range(0, len(completions), max(1, self.batch_size)):
            end = start + self.batch_size
            scored.extend(self._batch(queries[start:end], completions[start:end]))
        return scored

    def _batch(self, queries: Sequence[str], completions: Sequence[str]) -> list[Scored]:
        pairs = zip(queries, completions, strict=True)
        body = {
            "dataset": self.dataset, "panel": self.panel, **self.options,
            "items": [{"query": q, "completion": c} for q, c in pairs],
        }  # fmt: skip
        answer = post_json(
            f"{self.url.rstrip('/')}/api/rewards/", self.token, body,
            timeout=self.timeout, retries=self.retries,
        )  # fmt: skip
        items = answer["items"]
        return [
            Scored(
                reward=item["reward"], failed=item["failed"], undecided=item["undecided"],
                criteria=item.get("criteria", []),
            )
            for item in items
        ]  # fmt: skip


def post_json(
    url: str,
    token: str,
    body: Any,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    retries: int = DEFAULT_RETRIES,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """POST `body` as JSON with the token; the decoded answer. A 429 or 503 is asked again
    after the seconds its Retry-After says (the quota, or a rewards service at its
    REWARDS_MAX_PENDING), a connection that failed one second later, `retries` times; any
    other refusal at once raises RewardError with the server's detail."""
    if not url.startswith(("http://", "https://")):
        raise RewardError(f"The workbench's URL must start with http:// or https://: {url}")
    data = json.dumps(body).encode()
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    for attempt in range(retries + 1):
        last = attempt == retries
        # S310: only http(s), checked just above.
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                return json.loads(response.read())
        except urllib.error.HTTPError as refused:
            content = refused.read()
            if refused.code not in RETRY_STATUSES or last:
                raise _refusal(refused.code, content) from None
            sleep(_retry_after(refused.headers.get("Retry-After")))
        except (urllib.error.URLError, OSError) as exc:
            if last:
                raise RewardError(f"The reward endpoint could not be reached: {exc}") from exc
            sleep(1.0)
    raise AssertionError("unreachable")  # the last attempt returns or raises


def _retry_after(header: str | None) -> float:
    try:
        seconds = float(header) if header else 1.0
    except ValueError:
        seconds = 1.0
    return min(MAX_RETRY_AFTER, max(0.0, seconds))


def _refusal(status: int, content: bytes) -> RewardError:
    try:
        body: Any = json.loads(content)
    except ValueError:
        body = content.decode(errors="replace")
    detail = body.get("detail") if isinstance(body, dict) else None
    return RewardError(
        f"The reward endpoint answered {status}: {detail or body}", status=status, body=body
    )


def completion_text(completion: Any) -> str:
    """TRL gives a completion as text, or (conversational datasets) as a list of messages;
    the text graded is the assistant's, joined."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        return "\n\n".join(
            str(m.get("content", ""))
            for m in completion
            if isinstance(m, Mapping) and m.get("role", "assistant") == "assistant"
        )
    raise TypeError(f"a completion is text or a list of messages, not {type(completion).__name__}")


def trl_reward_func(
    client: RewardClient | None = None, *, query_column: str = "query_id", failed_reward=None
) -> Callable[..., list[float | None]]:
    """A reward function for TRL's GRPOTrainer (`reward_funcs=[...]`). TRL passes the
    dataset's other columns as keyword arguments: `query_column` must hold each prompt's
    query external id. The whole batch of completions goes to the workbench at once."""
    client = client or RewardClient.from_env()

    def checklist_reward(completions: Sequence[Any], **columns: Any) -> list[float | None]:
        queries = columns.get(query_column)
        if queries is None:
            raise RewardError(
                f"The training dataset needs a “{query_column}” column holding each prompt's "
                "query external id (or pass query_column= to trl_reward_func)."
            )
        texts = [completion_text(c) for c in completions]
        return [
            failed_reward if s.failed or s.reward is None else s.reward
            for s in client.score([str(q) for q in queries], texts)
        ]

    checklist_reward.__name__ = "checklist_reward"  # TRL logs each reward by its name
    return checklist_reward


def verl_compute_score(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[str],
    extra_infos: Sequence[Any] | None = None,
    *,
    failed_reward: float = 0.0,
    **reward_kwargs: Any,
) -> list[dict[str, float]]:
    """verl's batched `compute_score` (reward_model.reward_manager=batch, with
    custom_reward_function.path pointing at this file and name `verl_compute_score`). Each
    sample's ground truth is its query's external id; `reward_kwargs` (verl's
    custom_reward_function.reward_kwargs) may give url, token, dataset, panel, batch_size,
    else the CWB_* environment variables do. Each result is a dict verl logs: `score`,
    `failed` (1.0 when no reward could be made: the score is then `failed_reward`) and
    `undecided` (criteria the panel could not decide)."""
    del data_sources, extra_infos  # the checklist is found by the query id alone
    client = RewardClient.from_env(**reward_kwargs)
    return [
        {
            "score": failed_reward if s.failed or s.reward is None else float(s.reward),
            "failed": 1.0 if s.failed or s.reward is None else 0.0,
            "undecided": float(s.undecided),
        }
        for s in client.score([str(g) for g in ground_truths], list(solution_strs))
    ]


def verl_compute_score_one(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: Any = None,
    *,
    failed_reward: float = 0.0,
    **reward_kwargs: Any,
) -> dict[str, float]:
    """verl's per-sample `compute_score` (the naive reward manager, the default: it calls
    compute_score(data_source=, solution_str=, ground_truth=, extra_info=) once per sample),
    with custom_reward_function.name `verl_compute_score_one`. One request per sample; the
    same dict as verl_compute_score's."""
    [scored] = verl_compute_score(
        [data_source], [solution_str], [ground_truth], [extra_info],
        failed_reward=failed_reward, **reward_kwargs,
    )  # fmt: skip
    return scored
