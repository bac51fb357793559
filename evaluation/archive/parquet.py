"""The archive file of one run's verdicts: one Parquet file, one row per verdict, every
column of the verdict table under its own name, written and read a batch at a time (flat
memory at any run size).

Values keep their database form: ids and counts as integers, text as text, the judge's
parameters as PostgreSQL's own text of the jsonb value (so that it goes back unchanged),
times as UTC microseconds. `COLUMNS` is the table's columns in its order; a restore writes
them back in that order by COPY.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluation.runs.models import Verdict

if TYPE_CHECKING:
    import pyarrow as pa

# Rows per batch read from the database and written to the file: about 50 MB of Python
# objects at the largest raw outputs seen (1 KB a verdict).
BATCH = 50_000

_INTEGER = {"AutoField", "BigAutoField", "ForeignKey", "PositiveIntegerField",
            "PositiveSmallIntegerField", "IntegerField", "BigIntegerField"}  # fmt: skip


def _arrow() -> tuple[Any, Any]:
    """pyarrow and its parquet module, imported when an archive is written or read rather
    than with this module: every web worker and the dataset export import it (through the
    archive services) and never touch a file, and pyarrow costs about 45 MB of memory in
    each (the export's peak RSS, docs/benchmarks.md)."""
    import pyarrow
    import pyarrow.parquet

    return pyarrow, pyarrow.parquet


def _arrow_type(field) -> pa.DataType:
    pa, _ = _arrow()
    kind = field.get_internal_type()
    if kind in _INTEGER:
        return pa.int64()
    if kind == "BooleanField":
        return pa.bool_()
    if kind == "DateTimeField":
        return pa.timestamp("us", tz="UTC")
    return pa.string()  # text, choices and the jsonb's text


COLUMNS: tuple[str, ...] = tuple(f.column for f in Verdict._meta.concrete_fields)


@functools.cache
def schema() -> pa.Schema:
    """The file's schema: every column of the verdict table, in its order."""
    pa, _ = _arrow()
    fields = Verdict._meta.concrete_fields
    return pa.schema([pa.field(f.column, _arrow_type(f), nullable=f.null) for f in fields])


JSON_COLUMNS = frozenset(
    f.column for f in Verdict._meta.concrete_fields if f.get_internal_type() == "JSONField"
)


def select_list() -> str:
    """The SELECT list that reads COLUMNS in the file's form (jsonb as its text)."""
    return ", ".join(f"{c}::text" if c in JSON_COLUMNS else c for c in COLUMNS)


def write(path: Path, batches: Iterable[list[tuple]]) -> int:
    """Write the rows (tuples in COLUMNS order, by batches) to `path`; the rows written."""
    pa, pq = _arrow()
    file_schema = schema()
    n = 0
    with pq.ParquetWriter(path, file_schema, compression="zstd") as writer:
        for rows in batches:
            if not rows:
                continue
            columns = list(zip(*rows, strict=True))
            writer.write_table(pa.Table.from_arrays(
                [pa.array(col, type=file_schema.field(i).type) for i, col in enumerate(columns)],
                schema=file_schema,
            ))  # fmt: skip
            n += len(rows)
    return n


def read(path: Path) -> Iterator[list[tuple]]:
    """The file's rows, by batches of tuples in COLUMNS order; refuses a file whose columns
    are not this release's (an archive of another schema is restored by the release that
    wrote it, or converted first)."""
    found = _arrow()[1].ParquetFile(path)
    if found.schema_arrow.names != list(COLUMNS):
        raise ValueError(
            f"{path.name}: columns {found.schema_arrow.names} are not the verdict table's "
            f"{list(COLUMNS)}"
        )
    for batch in found.iter_batches(batch_size=BATCH):
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        yield list(zip(*columns, strict=True))


def rows_in(path: Path) -> int:
    return _arrow()[1].ParquetFile(path).metadata.num_rows


def verdict_rows(path: Path, columns: tuple[str, ...]) -> list[tuple]:
    """The file's verdicts as the dataset export reads a run's (evaluation.datasets.export):
    `columns` (Verdict attribute names) in the order of the verdicts' unique index
    (answer, criterion, judge, sample), the judge's parameters as a dict. One run at a
    time in memory (the file is read whole, without the columns not asked)."""
    table = _arrow()[1].read_table(path, columns=list(columns))
    table = table.sort_by([(c, "ascending") for c in ORDER])
    lists = [table.column(c).to_pylist() for c in columns]
    for at, column in enumerate(columns):
        if column in JSON_COLUMNS:
            lists[at] = [json.loads(v) if v is not None else None for v in lists[at]]
    return list(zip(*lists, strict=True))


# The order of a run's verdicts in an export: their unique index's.
ORDER = ("answer_id", "criterion_id", "judge_id", "sample")
