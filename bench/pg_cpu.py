"""CPU time from Linux's /proc: of any process, and of the PostgreSQL backend that serves
this process's Django connection (PostgreSQL runs on this machine). With the machine
shared, CPU time is the figure that does not depend on what else runs: wall time does."""

from __future__ import annotations

import os
from pathlib import Path


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a live process, or None (gone, or no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # After the command name (which may hold spaces, hence the split on its ")"), fields 14
    # and 15 of proc(5), utime and stime, in clock ticks.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def backend_cpu_seconds() -> float | None:
    """CPU seconds the PostgreSQL backend of Django's default connection has used so far,
    or None (another database, or the backend's /proc entry cannot be read)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    return process_cpu_seconds(pid)
