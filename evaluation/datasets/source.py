"""Where an import reads its files: a zip (an export, or any zip of table files) or a folder.

The files may sit at the top or in one folder inside (an export has one). A table may come as
JSONL, CSV or Parquet: the first found of `<table>.jsonl`, `.csv`, `.parquet` is read.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO

from evaluation.tables.formats import FileRejected, read_rows

PREFERENCE = ("jsonl", "csv", "parquet")


class Source:
    """The files of one import, by table name."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        names: list[str]
        if path.is_dir():
            names = [p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()]
        else:
            try:
                self._zip = zipfile.ZipFile(path)
            except (zipfile.BadZipFile, OSError) as exc:
                raise FileRejected([f"{path.name}: not a zip file or a folder ({exc})"]) from None
            names = [n for n in self._zip.namelist() if not n.endswith("/")]
        # The top folder, or the one folder the files are in (an export's layout).
        folders = {PurePosixPath(n).parent for n in names if "__MACOSX" not in n}
        top = PurePosixPath(".")
        if len(folders) == 1:
            top = folders.pop()
        self.files: dict[str, str] = {}
        for name in names:
            pure = PurePosixPath(name)
            if pure.parent == top:
                self.files[pure.name] = name

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def table_file(self, table: str) -> str | None:
        """The file name (as error messages show it) of a table, or None."""
        for fmt in PREFERENCE:
            name = f"{table}.{fmt}"
            if name in self.files:
                return name
        return None

    def open(self, name: str) -> IO[bytes]:
        member = self.files[name]
        if self._zip is not None:
            return self._zip.open(member)
        return (self.path / member).open("rb")

    def rows(self, table: str) -> Iterator[tuple[int, dict]]:
        name = self.table_file(table)
        if name is None:
            return
        with self.open(name) as stream:
            yield from read_rows(name, stream)

    def dataset_json(self) -> dict | None:
        if "dataset.json" not in self.files:
            return None
        with self.open("dataset.json") as stream:
            raw = stream.read()
        try:
            value = json.loads(raw.decode("utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FileRejected([f"dataset.json: not valid JSON ({exc})"]) from None
        if not isinstance(value, dict):
            raise FileRejected(["dataset.json: must be a JSON object"])
        return value
