"""The export's zip as a zip: every member deflated at zlib's fastest level (the archive's
`compresslevel`, through public zipfile API) except Parquet, stored as it compresses itself;
readable by all once unpacked, dated 1980-01-01 (docs/data-formats.md); every member's CRC
right and its content read back."""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib

import pytest

from bench.data_io.generate import generate
from evaluation.datasets.export import COMPRESS_LEVEL, export_chunks
from tests.evaluation.data.zips import jsonl

pytestmark = pytest.mark.django_db


def _raw(data: bytes, info: zipfile.ZipInfo) -> bytes:
    """The member's bytes as stored in the zip (compressed), after its local header."""
    start = info.header_offset
    name_length, extra_length = struct.unpack("<HH", data[start + 26 : start + 30])
    begin = start + 30 + name_length + extra_length
    return data[begin : begin + info.compress_size]


def _deflated(content: bytes, level: int) -> bytes:
    compressor = zlib.compressobj(level, zlib.DEFLATED, -15)  # raw deflate, as zipfile writes
    return compressor.compress(content) + compressor.flush()


def test_members_are_deflated_at_level_1_parquet_stored_and_read_back(owner):
    dataset = generate("Zip members", admin=owner)
    data = b"".join(export_chunks(dataset))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.testzip() is None  # every member's CRC
        infos = archive.infolist()
        contents = {info.filename: archive.read(info) for info in infos}
    assert len(infos) > 30 and COMPRESS_LEVEL == 1
    for info in infos:
        content = contents[info.filename]
        assert info.file_size == len(content)
        assert info.external_attr >> 16 == 0o644, info.filename
        assert info.date_time == (1980, 1, 1, 0, 0, 0)  # the time is in manifest.json
        if info.filename.endswith(".parquet"):
            assert info.compress_type == zipfile.ZIP_STORED
            assert _raw(data, info) == content and content.startswith(b"PAR1")
        else:
            assert info.compress_type == zipfile.ZIP_DEFLATED, info.filename
            assert _raw(data, info) == _deflated(content, 1), info.filename
    # The check can tell the levels apart: zlib's default (6) deflates the verdicts smaller.
    (verdicts,) = [i for i in infos if i.filename.endswith("/verdicts.jsonl")]
    assert len(_deflated(contents[verdicts.filename], 6)) < verdicts.compress_size
    # Read back: the files are whole.
    assert len(jsonl(data, "verdicts.jsonl")) == 144
    manifest = json.loads(next(c for n, c in contents.items() if n.endswith("manifest.json")))
    assert manifest["tables"]["verdicts"]["rows"] == 144
