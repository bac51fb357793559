"""A web worker or a dataset export never calls a judge nor touches an archive file, and
does not carry their libraries: the openai SDK (about 38 MB and 0.85 s of start-up) and
pyarrow (about 45 MB) are imported at the first judge call or archive, not with the
modules that use them. What it bought: the export's peak RSS under its 200 MB bound at
the month preset's 120,000 criteria (docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LOADED = """
import json, os, sys
import django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns  # every view module, as a web worker's first request loads them
import evaluation.datasets.export, evaluation.archive.services  # noqa: E401
print(json.dumps({name: name in sys.modules for name in ("openai", "pyarrow")}))
"""


def _loaded(code: str) -> dict:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_web_worker_and_the_export_load_neither_the_judge_sdk_nor_pyarrow():
    assert _loaded(LOADED) == {"openai": False, "pyarrow": False}


def test_a_judge_call_and_an_archive_load_them_when_needed(tmp_path):
    code = LOADED.replace(
        "print(",
        "from evaluation.judging import client\n"
        "client.http_library()\n"
        "from evaluation.archive import parquet\n"
        f"parquet.write(__import__('pathlib').Path({str(tmp_path / 'v.parquet')!r}), [])\n"
        "print(",
    )
    assert _loaded(code) == {"openai": True, "pyarrow": True}
    assert (tmp_path / "v.parquet").exists()  # an empty archive, written with its schema
