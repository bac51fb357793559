"""Reading and writing table files: JSON Lines, CSV and Parquet, chunk by chunk.

Writers take rows as tuples in the table's column order and write them in chunks, so memory
does not grow with the table. Readers yield (line, row) pairs with the line (or row) number
that error messages name. Text comes in as UTF-8 with or without a byte-order mark (Excel's
"CSV UTF-8" writes one); anything else is refused with a message that says what the file
looks like instead.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import IO, Any

from config import limits
from evaluation.tables.schema import BOOL, FLOAT, INT, JSON, LIST, Table

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CHUNK_ROWS = 2_000  # rows per write for JSONL and CSV
PARQUET_ROWS = 50_000  # rows per Parquet row group


def _arrow() -> tuple[ModuleType, ModuleType]:
    """pyarrow and pyarrow.parquet, imported on first use rather than with this module:
    they add about 50 MB and 0.2 s to every web process that imports the data formats,
    and only Parquet imports and exports need them."""
    import pyarrow
    import pyarrow.parquet

    return pyarrow, pyarrow.parquet


class FileRejected(Exception):
    """A file cannot be read at all (encoding, syntax); `errors` are ready-made messages."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("\n".join(errors))


# --- text and encodings ----------------------------------------------------------------


def _looks_like(data: bytes) -> str:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "UTF-16 (it starts with a UTF-16 byte-order mark)"
    if data[:200].count(b"\x00") > 10:
        return "UTF-16 or another two-byte encoding (it holds NUL bytes)"
    try:
        data.decode("cp1252")
    except UnicodeDecodeError:
        return "a legacy encoding"
    return "Windows-1252 or Latin-1 (Excel's plain “CSV” and many older tools)"


def not_utf8(name: str, data: bytes, exc: UnicodeDecodeError | None = None) -> str:
    where = ""
    if exc is not None:
        line = data.count(b"\n", 0, exc.start) + 1
        where = f" at line {line} (byte 0x{data[exc.start]:02x})"
    return (
        f"{name}: not UTF-8 text{where}; it looks like {_looks_like(data)}. Save it as UTF-8 "
        "(in Excel: “CSV UTF-8 (comma delimited)”) and import it again."
    )


def decode(name: str, data: bytes) -> str:
    """UTF-8 text of an uploaded file, without a byte-order mark; FileRejected naming the
    encoding otherwise."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise FileRejected([not_utf8(name, data)])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileRejected([not_utf8(name, data, exc)]) from None


def strip_bom(text: str) -> str:
    return text[1:] if text.startswith("\ufeff") else text


# --- reading ---------------------------------------------------------------------------


def format_of(name: str) -> str:
    lower = name.lower()
    if lower.endswith(".csv"):
        return "csv"
    if lower.endswith(".parquet"):
        return "parquet"
    return "jsonl"


def read_text_rows(name: str, text: str) -> Iterator[tuple[int, dict]]:
    """(line, row) pairs from JSONL or CSV text, chosen by the file name. A JSONL line that
    is not an object yields {"__not_an_object__": True}; invalid JSON raises FileRejected."""
    text = strip_bom(text)
    if format_of(name) == "csv":
        yield from _csv_rows(name, io.StringIO(text, newline=""))
    else:
        yield from _jsonl_rows(name, io.StringIO(text))


def read_rows(name: str, stream: IO[bytes]) -> Iterator[tuple[int, dict]]:
    """(line, row) pairs from a binary stream (a file, a zip member), chunk by chunk."""
    kind = format_of(name)
    if kind == "parquet":
        yield from _parquet_rows(name, stream)
        return
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="" if kind == "csv" else None)
    try:
        if kind == "csv":
            yield from _csv_rows(name, text)
        else:
            yield from _jsonl_rows(name, text)
    except UnicodeDecodeError as exc:
        raise FileRejected(
            [f"{name}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x}); save it as UTF-8"]
        ) from None


def _jsonl_rows(name: str, lines: Iterable[str]) -> Iterator[tuple[int, dict]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        _refuse_hostile(name, number, line)
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FileRejected([f"{name}:{number}: not valid JSON ({exc.msg})"]) from None
        yield number, value if isinstance(value, dict) else {"__not_an_object__": True}


def _refuse_hostile(name: str, number: int, line: str) -> None:
    """What would crash a later step, refused with its line (issue 13): a NUL character
    (PostgreSQL stores none) and JSON nested past limits.JSON_DEPTH (json recurses)."""
    if "\x00" in line:
        raise FileRejected([f"{name}:{number}: contains a NUL character; not a text file?"])
    if limits.json_too_deep(line):
        raise FileRejected([f"{name}:{number}: JSON nested deeper than {limits.JSON_DEPTH} levels"])


def _csv_rows(name: str, text: IO[str]) -> Iterator[tuple[int, dict]]:
    reader = csv.reader(text)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise FileRejected([f"{name}:1: not valid CSV ({exc})"]) from None
    header = [h.strip() for h in header]
    start = reader.line_num + 1
    try:
        for cells in reader:
            if any("\x00" in c for c in cells):
                _refuse_hostile(name, start, "\x00")
            if any(c.strip() for c in cells):
                # A record may span several lines (quoted newlines): name its first line.
                yield start, dict(zip(header, cells, strict=False))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise FileRejected([f"{name}:{start}: not valid CSV ({exc})"]) from None


def _parquet_rows(name: str, stream: IO[bytes]) -> Iterator[tuple[int, dict]]:
    _, pq = _arrow()

    try:
        parquet = pq.ParquetFile(stream)
    except Exception as exc:  # pyarrow raises several kinds for a damaged file
        raise FileRejected([f"{name}: not a Parquet file ({exc})"]) from None
    number = 0
    for batch in parquet.iter_batches(batch_size=PARQUET_ROWS):
        for row in batch.to_pylist():
            number += 1
            yield number, row


def unneutralise(value: str) -> str:
    """Undo csv_safe: "'=SUM(A1)" read from a CSV becomes "=SUM(A1)" again."""
    if value.startswith("'") and value[1:2] and value[1:].startswith(_FORMULA_STARTS):
        return value[1:]
    return value


def cell(table: Table, column: str, value: Any, *, from_csv: bool) -> Any:
    """A cell as the column's type says, from JSON, Parquet or CSV text. ValueError says
    what was expected."""
    spec = table.column(column)
    kind = spec.type if spec else "str"
    if from_csv and isinstance(value, str):
        value = unneutralise(value)
        if value == "" and kind != "str":
            return None
        if kind == LIST:
            try:
                value = json.loads(value) if value.strip().startswith("[") else [value]
            except json.JSONDecodeError:
                raise ValueError("expected a JSON list of strings") from None
        elif kind == BOOL:
            lowered = value.strip().lower()
            if lowered not in ("true", "false", "1", "0"):
                raise ValueError("expected true or false")
            return lowered in ("true", "1")
    if value is None:
        return None
    if kind == INT:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError("expected a whole number")
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ValueError("expected a whole number") from None
    if kind == FLOAT:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError("expected a number") from None
    if kind == BOOL:
        if not isinstance(value, bool):
            raise ValueError("expected true or false")
        return value
    if kind == LIST:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError("expected a list of strings")
        return value
    if kind == JSON:
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else None
            except json.JSONDecodeError:
                raise ValueError("expected JSON text") from None
        return value
    return value if isinstance(value, str) else str(value)


# --- writing ---------------------------------------------------------------------------


def csv_safe(value: object) -> object:
    """Spreadsheets run a cell starting with = + - @ tab or CR as a formula: prefix such
    text with a single quote. Numbers and None pass unchanged."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def _json_text(value: Any) -> str | None:
    # PostgreSQL's jsonb text has these separators: the verdicts formatted by the server
    # (export_sql) write their judge_params exactly as this does.
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False)


class TableWriter:
    """Writes one table in one format to a binary stream; rows are tuples in column order."""

    def __init__(self, table: Table, out: IO[bytes]) -> None:
        self.table = table
        self.out = out
        self.rows = 0
        self._json = [i for i, c in enumerate(table.columns) if c.type == JSON]

    def write(self, rows: list[tuple]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def _with_json_text(self, rows: list[tuple]) -> list[tuple]:
        if not self._json:
            return rows
        fixed = []
        for row in rows:
            row = list(row)
            for i in self._json:
                row[i] = _json_text(row[i])
            fixed.append(tuple(row))
        return fixed


class JsonlWriter(TableWriter):
    """JSON columns are nested objects and lists in JSON Lines (CSV and Parquet write them
    as JSON text); the importer reads either (formats.cell), so older exports, which wrote
    JSON text here too, still import."""

    def write(self, rows: list[tuple]) -> None:
        names = self.table.names
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
        lines = [dumps(dict(zip(names, row, strict=True))) for row in rows]
        if lines:
            self.out.write(("\n".join(lines) + "\n").encode())
        self.rows += len(rows)


class CsvWriter(TableWriter):
    def __init__(self, table: Table, out: IO[bytes]) -> None:
        super().__init__(table, out)
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, lineterminator="\r\n")
        self._lists = [i for i, c in enumerate(table.columns) if c.type == LIST]
        self._bools = [i for i, c in enumerate(table.columns) if c.type == BOOL]
        self._writer.writerow(table.names)

    def write(self, rows: list[tuple]) -> None:
        for row in self._with_json_text(rows):
            row = list(row)
            for i in self._lists:
                row[i] = _json_text(row[i])
            for i in self._bools:
                if row[i] is not None:
                    row[i] = "true" if row[i] else "false"
            self._writer.writerow([csv_safe(v) for v in row])
        self.rows += len(rows)
        self._flush()

    def _flush(self) -> None:
        data = self._buffer.getvalue()
        if data:
            self.out.write(data.encode())
            self._buffer.seek(0)
            self._buffer.truncate()

    def close(self) -> None:
        self._flush()


class _Tell:
    """pyarrow needs tell() on its output; a zip member being written has none."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out, self.position, self.closed = out, 0, False

    def write(self, data: bytes) -> int:
        self.out.write(data)
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def arrow_schema(table: Table):
    pa, _ = _arrow()

    types = {
        "int": pa.int64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "list": pa.list_(pa.string()),
    }
    return pa.schema([(c.name, types.get(c.type, pa.string())) for c in table.columns])


class ParquetWriter(TableWriter):
    def __init__(self, table: Table, out: IO[bytes]) -> None:
        _, pq = _arrow()

        super().__init__(table, out)
        self._schema = arrow_schema(table)
        self._writer = pq.ParquetWriter(_Tell(out), self._schema, compression="zstd")
        self._pending: list[tuple] = []

    def write(self, rows: list[tuple]) -> None:
        self._pending.extend(rows)
        self.rows += len(rows)
        if len(self._pending) >= PARQUET_ROWS:
            self._flush()

    def _flush(self) -> None:
        pa, _ = _arrow()

        rows = self._with_json_text(self._pending)
        columns = list(zip(*rows, strict=True)) if rows else [()] * len(self.table.columns)
        arrays = [
            pa.array(list(values), type=field.type)
            for values, field in zip(columns, self._schema, strict=True)
        ]
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=self._schema))
        self._pending = []

    def close(self) -> None:
        if self._pending or not self.rows:
            self._flush()  # an empty table still gets its schema
        self._writer.close()


WRITERS = {"jsonl": JsonlWriter, "csv": CsvWriter, "parquet": ParquetWriter}
