"""Cost of the vague-wording and fact-anchor rules: the finance preset over the BiGGen corpus
(3,279 criteria) with both rules off and on, their caches cleared before each pass.

    python3.11 bench/vagueness/run.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from annotation.validation import FINANCE, validate_checklist
from annotation.validation import vagueness as vz
from annotation.validation.corpus_report import load_corpus

CORPUS = Path(__file__).resolve().parents[2] / "evaluation/fixtures/biggen/atomic_checklists.jsonl"


def timed(corpus, config) -> float:
    vz.vague_terms.cache_clear()
    vz.has_anchor.cache_clear()
    start = time.perf_counter()
    for checklist in corpus.checklists:
        validate_checklist(checklist, config)
    return time.perf_counter() - start


def main() -> None:
    corpus = load_corpus(CORPUS)
    off = FINANCE.with_rule("vague-wording", enabled=False).with_rule("fact-anchor", enabled=False)
    for name, config in (("both off", off), ("both on", FINANCE)):
        best = min(timed(corpus, config) for _ in range(3))
        each = best / corpus.criteria * 1e6
        print(f"{name}: {best * 1000:.0f} ms for {corpus.criteria} criteria ({each:.0f} µs each)")


if __name__ == "__main__":
    main()
