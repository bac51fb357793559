"""The loopback judge in a process of its own, so that it does not share a GIL with the
code under test: `python -m bench.judge_throughput.server --latency 0.2`.

Prints one line `base_url=<url>` when ready; on SIGTERM or SIGINT prints one line
`stats=<json>` (calls, answered, peak concurrency, faults) and exits. `--port` serves on a
given port, so that a benchmark can stop it and start it again where the judges point
(bench/faults).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import signal
import sys
import threading

from aiohttp import web

from loopback import LoopbackOpenAI, verdict_responder


def scripted_verdict(request) -> str:
    """Pass or fail as a pure function of the prompt, so both sides get the same verdicts."""
    return "pass" if hashlib.sha256(request.last_user_text.encode()).digest()[0] % 2 else "fail"


class CountingLoopback(LoopbackOpenAI):
    """Also counts the chat completions it answered. `calls` counts a request when it
    arrives; one still waiting out its latency when the server stops was received but never
    answered (nor, from a provider, paid for)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.answered = 0  # touched only on the server's event loop

    def _build_app(self):
        app = super()._build_app()
        app.middlewares.append(self._count_answer)  # innermost: around the handler
        return app

    @web.middleware
    async def _count_answer(self, request, handler):
        response = await handler(request)
        if response.status == 200 and request.path == "/v1/chat/completions":
            self.answered += 1
        return response


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.judge_throughput.server")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per response")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = CountingLoopback(
        responder=verdict_responder(scripted_verdict, failure_kind="missing"),
        latency=args.latency,
        port=args.port,
    )
    with server:
        print(f"base_url={server.base_url}", flush=True)
        while not stop.wait(0.2):
            pass
    # Counted once stopped: a call in flight may still be answered during the shutdown's
    # grace (0.25 s), or dropped.
    stats = {
        "calls": server.call_count,
        "answered": server.answered,
        "max_concurrency": server.max_concurrency,
        "faults": {str(k): n for k, n in server.fault_counts.items()},
        "errors": [repr(e) for e in server.errors[:5]],
        "cpu_s": round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), 2),
    }
    print(f"stats={json.dumps(stats)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
