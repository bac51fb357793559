"""`--lock-waits`: who waits for whom in PostgreSQL during the load.

A thread samples pg_stat_activity every INTERVAL_S on a connection of its own: each backend
of the database waiting for a lock, with the backends holding it up (`pg_blocking_pids`),
their state and statements. Counted by (waiting statement, holder's state, holder's
statement), the samples say which writes queue behind which. A holder "idle in
transaction" is waiting on its client between two statements: under a CPU-bound load, a
web thread waiting for the CPU while it holds a row lock.

Each sample is one cheap query; at 50 a second it costs about a hundredth of a core, which
is why it is an option rather than always on. PostgreSQL only.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

INTERVAL_S = 0.02
SHOWN = 10  # the most frequent pairs printed
STATEMENT_CHARS = 60  # enough to tell the statements apart

_WAITING = f"""
SELECT left(regexp_replace(w.query, '\\s+', ' ', 'g'), {STATEMENT_CHARS}),
       b.state,
       left(regexp_replace(b.query, '\\s+', ' ', 'g'), {STATEMENT_CHARS})
FROM pg_stat_activity w
CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS holder(pid)
JOIN pg_stat_activity b ON b.pid = holder.pid
WHERE w.datname = current_database() AND w.wait_event_type = 'Lock'
"""


def django_conninfo() -> str | None:
    """A connection string to the database of Django's default connection; None when it is
    not PostgreSQL."""
    from django.db import connection
    from psycopg.conninfo import make_conninfo

    if connection.vendor != "postgresql":
        return None
    given = connection.settings_dict
    return make_conninfo(
        dbname=given["NAME"], user=given["USER"] or None, password=given["PASSWORD"] or None,
        host=given["HOST"] or None, port=str(given["PORT"]) if given["PORT"] else None,
    )  # fmt: skip


@dataclass
class LockWaits:
    """Samples lock waits from `start()` to `stop()`, on its own connection to `conninfo`
    (a libpq connection string or postgresql:// URL)."""

    conninfo: str
    interval_s: float = INTERVAL_S
    samples: int = 0
    waits: Counter = field(default_factory=Counter)  # (waiting, holder state, holder) → n
    error: str = ""
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _started: float = 0.0
    _seconds: float = 0.0

    def start(self) -> LockWaits:
        import psycopg

        # Connect here, not in the thread: a wrong address fails the command at once.
        connection = psycopg.connect(self.conninfo, autocommit=True)
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._sample, args=(connection,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._seconds = time.monotonic() - self._started
        return self.summary()

    def _sample(self, connection) -> None:
        try:
            while not self._stop.is_set():
                for row in connection.execute(_WAITING).fetchall():
                    self.waits[tuple(row)] += 1
                self.samples += 1
                self._stop.wait(self.interval_s)
        except Exception as exc:  # reported with the figures; the load goes on
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            connection.close()

    def summary(self) -> dict:
        waiting = sum(self.waits.values())
        return {
            "samples": self.samples,
            "seconds": round(self._seconds, 1),
            "waiting_samples": waiting,
            # Each waiting sample stands for about one interval of one backend's waiting.
            "waiting_s": round(waiting * self._seconds / self.samples, 2) if self.samples else 0,
            "pairs": [
                {"waiting": w, "holder_state": state, "holder": holder, "samples": n}
                for (w, state, holder), n in self.waits.most_common()
            ],
            "error": self.error,
        }


def print_lock_waits(summary: dict) -> None:
    print(f"\nlock waits (PostgreSQL, sampled every {INTERVAL_S * 1000:.0f} ms): "
          f"{summary['waiting_samples']} waiting in {summary['samples']} samples over "
          f"{summary['seconds']} s, about {summary['waiting_s']} s of waiting in all")  # fmt: skip
    if summary["error"]:
        print(f"  sampling stopped early: {summary['error']}")
    for pair in summary["pairs"][:SHOWN]:
        print(f"  {pair['samples']:5d}  {pair['waiting']!r}\n"
              f"         held by ({pair['holder_state']}) {pair['holder']!r}")  # fmt: skip
