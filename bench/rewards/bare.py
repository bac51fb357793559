"""The peer: a bare openai client making the same judge calls as a reward batch, at the same
concurrency, with nothing around them (no checklists, caches, votes, scores or records).
It is what a team would write in a notebook; the reward path is measured against it."""

from __future__ import annotations

import asyncio
import json
import time

import openai

from evaluation.judging import prompts


async def _batch(client, model: str, messages: list[list[dict]], concurrency: int) -> int:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(m: list[dict]) -> bool:
        async with semaphore:
            reply = await client.chat.completions.create(
                model=model, messages=m, temperature=0, max_tokens=512,
                response_format={"type": "json_schema", "json_schema": {
                    "name": "verdict", "schema": prompts.SCHEMA, "strict": True}},
            )  # fmt: skip
            return json.loads(reply.choices[0].message.content)["verdict"] == "pass"

    return sum(await asyncio.gather(*(one(m) for m in messages)))


def run_batches(
    *, base_url: str, model: str, batches: list[list[list[dict]]], concurrency: int
) -> list[float]:
    """Seconds per batch, one batch after the other on one client (its pool kept warm)."""

    async def main() -> list[float]:
        client = openai.AsyncOpenAI(
            base_url=base_url, api_key="bench", max_retries=0,
            http_client=openai.DefaultAioHttpClient(timeout=60),
        )  # fmt: skip
        seconds = []
        try:
            for messages in batches:
                started = time.perf_counter()
                await _batch(client, model, messages, concurrency)
                seconds.append(time.perf_counter() - started)
        finally:
            await client.close()
        return seconds

    return asyncio.run(main())
