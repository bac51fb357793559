"""OpenRLHF's custom reward function for the workbench: pass this file's path as
`--remote_rm_url`, and OpenRLHF loads `reward_func` from it (its
SingleTurnAgentExecutor imports a `--remote_rm_url` ending in .py by path and calls
`reward_func(queries, prompts, labels)` in a thread, one sample per call, every sample of a
rollout at once). No proxy and no wrapper: this file sends the token OpenRLHF's own HTTP
client does not (docs/rewards.md#openrlhf).

Settings come from the environment of the training job:

    CWB_URL       the rewards service, e.g. http://rewards.internal:8001
    CWB_TOKEN     a rewards token of the dataset
    CWB_DATASET   the dataset's id
    CWB_PANEL     the judge panel's id
    CWB_STRIP     optional: end-of-sequence tokens to cut off each completion, separated by
                  spaces (e.g. "<|im_end|> <|endoftext|>"), which OpenRLHF decodes with it

The answer is the workbench's OpenRLHF shape, as OpenRLHF's HTTP client would return it:
`rewards` and `scores` (lists, one per sample) and `extra_logs` (logged to wandb). A sample
the judges could not score gets 0.0 with extra_logs.failed = 1.0 (and no_reward = 1.0):
marked, never a silent zero. A 429 or 503 is asked again after its Retry-After; a refusal
(bad label, wrong token) raises with the server's reason, which OpenRLHF logs.

Standard library only, like trainers.py beside it (which it loads by path, so that the two
files may be copied anywhere together).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import urllib.parse
from pathlib import Path
from typing import Any

ENV_STRIP = "CWB_STRIP"


def _trainers():
    """evaluation.rewards.trainers: imported when the workbench is installed, else loaded
    from the file beside this one (OpenRLHF loads this file by path, outside any package)."""
    try:
        from evaluation.rewards import trainers
    except ImportError:
        name = "checklist_workbench_trainers"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("trainers.py"))
        trainers = importlib.util.module_from_spec(spec)
        sys.modules[name] = trainers
        spec.loader.exec_module(trainers)
    return trainers


def endpoint(environ: Any = None) -> str:
    """The OpenRLHF route's URL with the dataset, panel and strip tokens as parameters."""
    environ = os.environ if environ is None else environ
    trainers = _trainers()
    missing = [
        v for v in (trainers.ENV_URL, trainers.ENV_DATASET, trainers.ENV_PANEL)
        if not environ.get(v)
    ]  # fmt: skip
    if missing:
        raise trainers.RewardError(f"Set {', '.join(missing)} to reach the reward endpoint.")
    parameters = [
        ("dataset", environ[trainers.ENV_DATASET]),
        ("panel", environ[trainers.ENV_PANEL]),
        *(("strip", token) for token in environ.get(ENV_STRIP, "").split()),
    ]
    base = environ[trainers.ENV_URL].rstrip("/")
    return f"{base}/api/rewards/openrlhf/?{urllib.parse.urlencode(parameters)}"


def reward_func(queries, prompts, labels, **kwargs) -> dict[str, Any]:
    """OpenRLHF's `reward_func`: `queries` are prompt + completion as decoded, `prompts` the
    prompts, `labels` the queries' external ids (the dataset's label column)."""
    del kwargs  # newer OpenRLHF versions may pass more; the workbench needs none of it
    trainers = _trainers()
    token = os.environ.get(trainers.ENV_TOKEN)
    if not token:
        raise trainers.RewardError(f"Set {trainers.ENV_TOKEN} to reach the reward endpoint.")
    body = {"query": list(queries), "prompts": list(prompts), "labels": list(labels)}
    return trainers.post_json(endpoint(), token, body)
