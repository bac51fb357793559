"""Reading export zips in tests."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path


def zip_bytes(response) -> bytes:
    content = getattr(response, "streaming_content", None)
    return b"".join(content) if content is not None else response.content


def members(data: bytes) -> dict[str, bytes]:
    """File name (without the export's folder) -> bytes."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {Path(n).name: archive.read(n) for n in archive.namelist()}


def jsonl(data: bytes, name: str) -> list[dict]:
    return [json.loads(line) for line in members(data)[name].decode().splitlines() if line]


def write_zip(path: Path, files: dict[str, bytes]) -> Path:
    """A zip of `files` (name -> bytes) at `path`: an export edited by a test."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def unzip(data: bytes, folder: Path) -> Path:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(folder)
    (top,) = [p for p in folder.iterdir() if p.is_dir()]
    return top
