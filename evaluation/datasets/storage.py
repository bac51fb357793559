"""A disk that cannot take more, as users of exports and imports are told about it.

An export job that cannot write its zip, an upload that cannot be stored and an import the
database refuses half way all end the same way for the user: nothing was written, a message
says where the trouble is (the setting that names the folder, or the database) and what to do,
and no traceback. The operator's side is docs/operations.md, "A full disk".
"""

from __future__ import annotations

import errno

FULL = frozenset({errno.ENOSPC, errno.EDQUOT})  # no space left; over the user's quota
DISK_FULL_SQLSTATE = "53100"  # PostgreSQL's disk_full (psycopg's errors.DiskFull)

FULL_EXPORTS = (
    "The disk holding exports is full (DATA_EXPORT_DIR): the export was not written. "
    "Ask an operator to free space there, then export again."
)
FULL_IMPORTS = (
    "The disk holding uploaded imports is full (DATA_IMPORT_DIR): the file could not be "
    "received and nothing was imported. Ask an operator to free space there, then import again."
)
FULL_DATABASE = (
    "The database server's disk is full: nothing was imported (an import is written in one "
    "transaction). Ask an operator to free space on the database server, then import again."
)


class NotStored(Exception):
    """Nothing was written because the server could not store it: its disk, not the file.
    `message` is for the user; `full` says the disk is full (HTTP 507) rather than another
    fault of the server (500)."""

    def __init__(self, message: str, *, full: bool) -> None:
        self.message = message
        self.full = full
        super().__init__(message)

    @property
    def status(self) -> int:
        return 507 if self.full else 500


def _causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def disk_full(exc: BaseException) -> bool:
    """A full disk or quota, on this machine (OSError) or the database server's (Django
    wraps psycopg's DiskFull, whose `sqlstate` is 53100)."""
    for cause in _causes(exc):
        if isinstance(cause, OSError) and cause.errno in FULL:
            return True
        if getattr(cause, "sqlstate", None) == DISK_FULL_SQLSTATE:
            return True
    return False


def export_failure(exc: BaseException) -> str:
    """What the Export page and the API say about an export job that failed with `exc`."""
    if isinstance(exc, OSError) and exc.errno in FULL:
        return FULL_EXPORTS
    if isinstance(exc, OSError):
        return (
            f"The export could not be written to DATA_EXPORT_DIR ({exc.strerror or exc}). "
            "Ask an operator to check that folder, then export again."
        )
    if disk_full(exc):
        return (
            "The database server's disk is full: the export could not be read. Ask an "
            "operator to free space on the database server, then export again."
        )
    return str(exc)


def upload_failure(exc: OSError) -> NotStored:
    """The refusal of an upload that could not be written to DATA_IMPORT_DIR."""
    if exc.errno in FULL:
        return NotStored(FULL_IMPORTS, full=True)
    return NotStored(
        f"The upload could not be stored in DATA_IMPORT_DIR ({exc.strerror or exc}): nothing "
        "was imported. Ask an operator to check that folder, then import again.",
        full=False,
    )
