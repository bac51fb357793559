"""The same workload through Inspect AI: one sample per (answer, criterion, judge), a solver
that sends the app's exact prompt to the same loopback server through Inspect's
OpenAI-compatible provider (`openai-api/loopback/<model>`), and a scorer that parses the
verdict with the app's strict parser. Concurrency: max_connections = max_samples = C, so at
most C calls are in flight (Inspect pools connections per model, hence the max_samples cap).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

from bench.judge_throughput.workload import Workload


@dataclass(frozen=True)
class InspectResult:
    judgments: int  # samples scored with a parsed verdict
    samples: int
    wall_s: float  # Inspect's own stats: started_at → completed_at of the eval
    outcomes: dict[str, int]


def run_inspect(
    workload: Workload, *, base_url: str, concurrency: int, max_tokens: int = 512
) -> InspectResult:
    from datetime import datetime

    from inspect_ai import Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import (
        ChatMessageSystem,
        ChatMessageUser,
        GenerateConfig,
        ResponseSchema,
        get_model,
    )
    from inspect_ai.scorer import Score, Target, mean, scorer
    from inspect_ai.solver import Generate, TaskState, solver
    from inspect_ai.util import JSONSchema

    from evaluation.judging import client, prompts

    # Inspect's openai-api provider reads <SERVICE>_API_KEY and <SERVICE>_BASE_URL.
    os.environ["LOOPBACK_API_KEY"] = "not-needed"
    os.environ["LOOPBACK_BASE_URL"] = base_url
    config = GenerateConfig(
        max_connections=concurrency, max_tokens=max_tokens, temperature=0.0,
        response_schema=ResponseSchema(
            name="verdict", json_schema=JSONSchema.model_validate(prompts.SCHEMA), strict=True
        ),
    )  # fmt: skip
    models = {j: get_model(f"openai-api/loopback/{workload.judge_model(j)}", config=config)
              for j in range(workload.judges)}  # fmt: skip

    samples = [
        Sample(
            id=f"a{a}-c{c}-j{j}",
            input=workload.messages(a, c)[1]["content"],
            metadata={"answer": a, "criterion": c, "judge": j},
        )
        for a in range(workload.answers)
        for c in range(workload.criteria)
        for j in range(workload.judges)
    ]

    @solver
    def judge_call():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            a, c = state.metadata["answer"], state.metadata["criterion"]
            system, user = workload.messages(a, c)
            state.messages = [
                ChatMessageSystem(content=system["content"]),
                ChatMessageUser(content=user["content"]),
            ]
            state.output = await models[state.metadata["judge"]].generate(state.messages)
            return state

        return solve

    @scorer(metrics=[mean()])
    def verdict():
        async def score(state: TaskState, target: Target) -> Score:
            parsed = prompts.parse(client.parse_json_object(state.output.completion))
            outcome = parsed.verdict if parsed else "unparseable"
            return Score(value=1 if outcome == "pass" else 0, answer=outcome)

        return score

    task = Task(dataset=MemoryDataset(samples), solver=judge_call(), scorer=verdict())
    with tempfile.TemporaryDirectory(prefix="bench-inspect-") as log_dir:
        (log,) = eval(
            task, model=f"openai-api/loopback/{workload.judge_model(0)}", log_dir=log_dir,
            display="none", max_samples=concurrency, max_connections=concurrency,
            fail_on_error=False, log_samples=True,
        )  # fmt: skip
        outcomes: dict[str, int] = {}
        for sample in log.samples or []:
            for score in (sample.scores or {}).values():
                outcomes[str(score.answer)] = outcomes.get(str(score.answer), 0) + 1
            if sample.error:
                outcomes["error"] = outcomes.get("error", 0) + 1
    started = datetime.fromisoformat(log.stats.started_at)
    completed = datetime.fromisoformat(log.stats.completed_at)
    return InspectResult(
        judgments=outcomes.get("pass", 0) + outcomes.get("fail", 0),
        samples=len(log.samples or []),
        wall_s=(completed - started).total_seconds(),
        outcomes=outcomes,
    )
