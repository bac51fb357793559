"""The loopback judge in a process of its own, so that it does not share a GIL with the
code under test: `python -m bench.judge_throughput.server --latency 0.2`.

Prints one line `base_url=<url>` when ready; on SIGTERM or SIGINT prints one line
`stats=<json>` (calls, peak concurrency, faults) and exits.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import signal
import sys
import threading

from loopback import LoopbackOpenAI, verdict_responder


def scripted_verdict(request) -> str:
    """Pass or fail as a pure function of the prompt, so both sides get the same verdicts."""
    return "pass" if hashlib.sha256(request.last_user_text.encode()).digest()[0] % 2 else "fail"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.judge_throughput.server")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per response")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = LoopbackOpenAI(
        responder=verdict_responder(scripted_verdict, failure_kind="missing"),
        latency=args.latency,
        port=args.port,
    )
    with server:
        print(f"base_url={server.base_url}", flush=True)
        while not stop.wait(0.2):
            pass
        stats = {
            "calls": server.call_count,
            "max_concurrency": server.max_concurrency,
            "faults": {str(k): n for k, n in server.fault_counts.items()},
            "errors": [repr(e) for e in server.errors[:5]],
            "cpu_s": round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), 2),
        }
    print(f"stats={json.dumps(stats)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
