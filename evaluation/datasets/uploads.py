"""Receiving an uploaded import file: it is copied chunk by chunk into DATA_IMPORT_DIR
(never read whole into memory) and removed when the import is over.

The one place uploads of dataset imports come in, so that limits on them (size caps) wrap
`received` and every interface gets them.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from evaluation.datasets import storage

SUFFIXES = (".zip", ".jsonl", ".csv", ".parquet")


@contextlib.contextmanager
def received(upload: UploadedFile) -> Iterator[Path]:
    """The upload as a file on disk, named like the upload (the import reads the name's
    suffix); a single table file is put in a folder of its own, as an import reads them.
    NotStored when it cannot be written (a full disk): nothing is left behind."""
    name = Path(upload.name or "upload.zip").name
    try:
        folder = Path(settings.DATA_IMPORT_DIR)
        folder.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="import-", dir=folder))
    except OSError as exc:
        raise storage.upload_failure(exc) from exc
    target = workdir / name
    try:
        try:
            with target.open("wb") as out:
                for chunk in upload.chunks():
                    out.write(chunk)
        except OSError as exc:
            # Only the receiving is the disk's fault; errors reading the file come later,
            # from the import, as what they are.
            raise storage.upload_failure(exc) from exc
        yield target if name.lower().endswith(".zip") else workdir
    finally:
        for path in workdir.iterdir():
            path.unlink(missing_ok=True)
        os.rmdir(workdir)
