"""Run LoopbackOpenAI in the foreground so a developer can point a judge at it.

    python -m loopback --port 8001 --latency 0.2 --fault-rate 0.1

Prints the base URL, serves until Ctrl-C, then prints what it saw.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Sequence

from loopback.scripts import jitter
from loopback.server import (
    DEFAULT_FAULT_KINDS,
    DEFAULT_MODELS,
    FaultKind,
    Latency,
    LoopbackOpenAI,
)


def _kinds(value: str) -> list[FaultKind]:
    try:
        return [FaultKind(part.strip()) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        choices = ", ".join(k.value for k in FaultKind)
        raise argparse.ArgumentTypeError(f"{exc}; choose from: {choices}") from exc


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m loopback",
        description="OpenAI-compatible chat-completions server for local testing.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8001, help="port (default 8001); 0 = ephemeral")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per response")
    parser.add_argument(
        "--jitter", type=float, default=0.0, help="± seconds of seeded uniform jitter"
    )
    parser.add_argument(
        "--fault-rate", type=float, default=0.0, help="probability of a fault (0..1)"
    )
    parser.add_argument(
        "--fault-kinds",
        type=_kinds,
        default=",".join(DEFAULT_FAULT_KINDS),  # argparse runs type= on string defaults
        help="comma-separated kinds drawn by --fault-rate (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault plan")
    parser.add_argument(
        "--max-faults-per-request",
        type=int,
        default=1,
        help="times one request body may fault; negative = unlimited (default 1)",
    )
    parser.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds on 429")
    parser.add_argument(
        "--timeout-delay", type=float, default=30.0, help="stall of a timeout fault"
    )
    parser.add_argument("--api-key", default=None, help="require this bearer key")
    parser.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help="comma-separated names listed by GET /v1/models",
    )
    parser.add_argument(
        "--no-structured-outputs",
        action="store_true",
        help="reject response_format json_schema with 400 (test the JSON-mode fallback)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    latency: Latency = args.latency
    if args.jitter > 0:
        latency = jitter(args.latency, args.jitter, seed=args.seed)
    server = LoopbackOpenAI(
        latency=latency,
        host=args.host,
        port=args.port,
        models=[m.strip() for m in args.models.split(",") if m.strip()],
        api_key=args.api_key,
        supports_structured_outputs=not args.no_structured_outputs,
        fault_rate=args.fault_rate,
        fault_kinds=args.fault_kinds,
        seed=args.seed,
        max_faults_per_request=(
            None if args.max_faults_per_request < 0 else args.max_faults_per_request
        ),
        retry_after=args.retry_after,
        timeout_delay=args.timeout_delay,
    )
    # Ctrl-C (SIGINT) and SIGTERM stop it, whatever this process inherited: a shell starts
    # background commands with SIGINT ignored, and Python then installs no handler for it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with server:
        print(f"LoopbackOpenAI listening: base_url={server.base_url}", flush=True)
        print("Ctrl-C to stop.", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()  # the server lives in its own thread
        faults = {str(kind): n for kind, n in server.fault_counts.items()}
        print(
            f"\nserved {server.call_count} requests, faults={faults}, "
            f"max_concurrency={server.max_concurrency}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
