"""Figures kept between requests in the database (KeptFigure rows), shared by every web
process: `remembered(state, compute)` returns what `compute()` returned for the same state
(`evaluation.kept.readers.state`), or computes and keeps it.

A row lives in its figure's slot (dataset, kind, run, part); keeping a new state replaces
the rows of the slot, in one transaction, so a reader finds the old state's rows or the
new one's, never neither. Values are JSON.
"""

from __future__ import annotations

import json
import re
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from django.db import connection, transaction
from django.db.models import Case, QuerySet, Value, When

from evaluation.kept.models import KeptFigure
from evaluation.kept.readers import Basis, State


class ThreadFlag:
    """A flag of the current thread, set inside `on()` and restored on the way out. A
    thread-local, not an argument: a figure that reads it is computed deep inside readers
    shared with the pages, and every one of them would have to pass it down."""

    def __init__(self) -> None:
        self._local = threading.local()

    @contextmanager
    def on(self) -> Iterator[None]:
        before = getattr(self._local, "on", False)
        self._local.on = True
        try:
            yield
        finally:
            self._local.on = before

    def __bool__(self) -> bool:
        return getattr(self._local, "on", False)


# Set inside `read_only()`: the figures of a dataset export are computed deep inside readers
# shared with the pages (analytics, agreement, scores). One thread runs one export's
# snapshot at a time.
_reading = ThreadFlag()


def read_only() -> AbstractContextManager[None]:
    """Inside, figures are computed but never kept: the caller reads in a READ ONLY
    transaction (the dataset export's snapshot), where PostgreSQL refuses any write, a
    temporary table included (`writes_refused`)."""
    return _reading.on()


def writes_refused() -> bool:
    """Inside `read_only()`: the database refuses any write, a temporary table included."""
    return bool(_reading)


def fill_lock(where: Basis | State) -> None:
    """Take the slot's fill lock until the transaction ends (PostgreSQL; SQLite
    serialises writers anyway): readers who all found a figure missing compute it one
    after another, not at once, and each one after the first finds it kept."""
    if connection.vendor != "postgresql":
        return
    b = where.basis if isinstance(where, State) else where
    slot_id = zlib.crc32(b.slot.encode()) - 2**31  # the lock's key is two int4s
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [b.dataset_id, slot_id])


def slot(where: Basis | State) -> QuerySet[KeptFigure]:
    """Every row kept in the slot of a figure, whatever its state."""
    b = where.basis if isinstance(where, State) else where
    return KeptFigure.objects.filter(
        dataset_id=b.dataset_id, kind=b.figure.kind, run_id=b.run_id, part=b.part
    )


def slots_of_runs(where: Basis, run_ids: list[int]) -> QuerySet[KeptFigure]:
    """Every row kept in the slots of a figure's part for each of these runs (the basis's
    own run is not read): what a reader of many runs' kept figures reads in one query."""
    return KeptFigure.objects.filter(
        dataset_id=where.dataset_id, kind=where.figure.kind, part=where.part, run_id__in=run_ids
    )


def row(state: State, cells: Any, piece: str = "") -> KeptFigure:
    """An unsaved row of `state` (one of its pieces)."""
    b = state.basis
    return KeptFigure(
        dataset_id=b.dataset_id, kind=b.figure.kind, run_id=b.run_id, part=b.part,
        revision=state.revision, key=state.key_of(piece), cells=cells,
    )  # fmt: skip


def store(state: State, cells: Any) -> None:
    """Keep `cells` for `state`, replacing every other row of its slot: the one place a
    single figure is written, so that read-only readers skip it."""
    store_pieces(state, {"": cells})


def store_pieces(state: State, pieces: dict[str, Any]) -> None:
    """Keep several rows of one state (by piece name; "" is `kept(state)`'s), replacing
    every other row of the slot. One transaction: a reader sees all of them or none, and
    the old rows or the new ones. No savepoint inside a caller's transaction: that one
    already makes the writes one."""
    if writes_refused():
        return
    _replace_slot(state, pieces, kept=[state.key_of(piece) for piece in pieces])


def _replace_slot(state: State, pieces: dict[str, Any], *, kept: list[str]) -> None:
    """Write `pieces` for `state` and delete every row of its slot whose key is not in
    `kept` (the pieces' keys among them)."""
    # Each piece's JSON as a value of its own: for plain values Django 5.2 inserts the rows
    # through UNNEST of one jsonb[] array, and psycopg escapes every quote of every piece
    # in Python to build it (8 of the 31 s of the first scores of a million-verdict run).
    cells_field = KeptFigure._meta.get_field("cells")
    with transaction.atomic(savepoint=False):
        slot(state).exclude(key__in=kept).delete()
        KeptFigure.objects.bulk_create(
            [
                row(state, Value(cells, output_field=cells_field), piece)
                for piece, cells in pieces.items()
            ],
            ignore_conflicts=True,
        )


class PiecesGone(Exception):
    """`move_pieces` found some pieces of the state before missing: another writer kept
    the slot meanwhile. Raised inside the caller's transaction, which it rolls back."""


def move_pieces(before: State, after: State, moved: list[str], written: dict[str, Any]) -> None:
    """Keep a state that differs from `before` in a few pieces: the pieces named in `moved`
    pass from `before` to `after` by their keys alone (their JSON is not read or written
    again), `written` are stored for `after`, and every other row of the slot goes, as
    `store_pieces` does. Call it inside a transaction: PiecesGone when a moved piece is
    missing."""
    if writes_refused():
        return
    keys = {before.key_of(piece): after.key_of(piece) for piece in moved}
    if keys:
        renamed = KeptFigure.objects.filter(dataset_id=before.dataset_id, key__in=list(keys))
        count = renamed.update(
            key=Case(*(When(key=old, then=Value(new)) for old, new in keys.items())),
            revision=after.revision,
        )
        if count != len(keys):
            raise PiecesGone(f"{len(keys) - count} of {len(keys)} pieces are gone")
    _replace_slot(after, written, kept=[after.key_of(piece) for piece in [*moved, *written]])


STORE_BATCH = 50  # rows per INSERT of `store_all`


def store_all(figures: list[tuple[State, Any]]) -> None:
    """Keep many figures, each replacing the rows of its own slot as `store` does, in one
    transaction: a DELETE per (dataset, kind, run), an INSERT per STORE_BATCH rows.
    Readers see every one of them or none; a run's analytics refresh keeps its hundred-odd
    slots (the criterion health's chunks) in a few statements and one commit, not two
    statements and a commit each."""
    if writes_refused() or not figures:
        return
    cells_field = KeptFigure._meta.get_field("cells")
    owners: dict[tuple[int, str, int | None], list[State]] = {}
    for state, _ in figures:
        b = state.basis
        owners.setdefault((b.dataset_id, b.figure.kind, b.run_id), []).append(state)
    with transaction.atomic(savepoint=False):
        for (dataset_id, kind, run_id), states in owners.items():
            KeptFigure.objects.filter(
                dataset_id=dataset_id, kind=kind, run_id=run_id,
                part__in=[s.basis.part for s in states],
            ).exclude(key__in=[s.key for s in states]).delete()  # fmt: skip
        KeptFigure.objects.bulk_create(
            [row(state, Value(cells, output_field=cells_field)) for state, cells in figures],
            ignore_conflicts=True,
            # psycopg builds each statement whole in Python: a few MB at most, not a run's
            # every chunk of criterion health (12 MB at 120,000 criteria) at once.
            batch_size=STORE_BATCH,
        )


def kept(state: State) -> Any | None:
    """What is kept for `state`, or None; never computes."""
    found = KeptFigure.objects.filter(dataset_id=state.dataset_id, key=state.key)
    return next(iter(found.values_list("cells", flat=True)), None)


def kept_pieces(state: State, pieces: Iterable[str]) -> dict[str, Any]:
    """The pieces kept for `state`, by piece name, in one query; missing ones left out."""
    return kept_by_key(state.dataset_id, {state.key_of(piece): piece for piece in pieces})


def kept_by_key(dataset_id: int, names: dict[str, Any]) -> dict[Any, Any]:
    """The rows kept under these keys, by the name each key is given in `names`, in one
    query; missing ones left out."""
    found = KeptFigure.objects.filter(dataset_id=dataset_id, key__in=list(names))
    return {names[key]: cells for key, cells in found.values_list("key", "cells")}


_KEY_NAME = re.compile(r"[\w-]+")


def kept_entries(dataset_id: int, keys: Iterable[str], paths: list[str | int]) -> dict[str, list]:
    """For each row kept under `keys`, by key: its JSON's values at `paths` (an object's
    member when a str, an array's element when an int; None where it has none), picked
    in the database rather than the whole row decoded in Python. A run's scores index
    maps 6,000 answers to their rows: 2-3 ms to read whole, 0.3 ms for one answer (the
    answer page reads ten runs' entries). Rows missing are left out; one query."""
    keys = list(keys)
    if not keys:
        return {}
    picks: list[str] = []  # no paths: which of the rows are kept, their keys only
    params: list = []
    if paths and connection.vendor == "postgresql":
        picks = ["cells -> %s::int" if isinstance(p, int) else "cells -> %s::text" for p in paths]
        params = list(paths)
    elif paths:  # SQLite's JSON paths; member names are answer ids and the like, never quoted
        if any(isinstance(p, str) and not _KEY_NAME.fullmatch(p) for p in paths):
            raise ValueError(f"not a plain member name among {paths!r}")
        picks = ["cells -> %s"] * len(paths)
        params = [f"$[{p}]" if isinstance(p, int) else f'$."{p}"' for p in paths]
    marks = ", ".join(["%s"] * len(keys))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(['key', *picks])} FROM {KeptFigure._meta.db_table} "  # noqa: S608
            f"WHERE dataset_id = %s AND key IN ({marks})",
            [*params, dataset_id, *keys],
        )  # the table's name from the model; every value a parameter
        return {
            key: [None if v is None else json.loads(v) for v in values]
            for key, *values in cursor.fetchall()
        }


def remembered(state: State, compute: Callable[[], Any]) -> Any:
    """What is kept for `state`, or `compute()`, kept now."""
    value = kept(state)
    if value is None:
        value = compute()
        store(state, value)
    return value
