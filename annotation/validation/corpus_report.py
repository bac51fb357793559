"""How often each rule fires on a corpus of human-written checklists.

    python -m annotation.validation.corpus_report PATH.jsonl [--preset generic|finance]
        [--format biggen|kqa]

Each JSONL row with a non-empty `atomic_checklist` list (the BiGGen format) is one checklist;
every item is a criterion of kind "fact". Prints a markdown table: criterion-level findings
are counted per criterion, checklist-level findings per checklist. A rule that fires on most
careful human criteria is a bad rule; this report is how we find out.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from annotation.validation.presets import PRESETS, preset
from annotation.validation.rules import RULES, validate_checklist
from annotation.validation.types import ChecklistInput, CriterionInput, GuidelineConfig


@dataclass
class RuleStat:
    rule_id: str
    severity: str  # the configured severity, or "off"
    unit: str  # "criteria" or "checklists"
    fired: int = 0
    total: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.fired / self.total if self.total else 0.0


@dataclass(frozen=True)
class Corpus:
    checklists: tuple[ChecklistInput, ...]
    skipped_rows: int  # rows without a non-empty checklist

    @property
    def criteria(self) -> int:
        return sum(len(c.criteria) for c in self.checklists)


def load_corpus(path: Path) -> Corpus:
    checklists: list[ChecklistInput] = []
    skipped = 0
    with path.open(encoding="utf-8") as lines:
        for row_number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            items = json.loads(line).get("atomic_checklist")
            if not isinstance(items, list) or not items:
                skipped += 1
                continue
            criteria = tuple(
                CriterionInput(key=f"{row_number}:{index}", text=str(item), kind="fact")
                for index, item in enumerate(items)
            )
            checklists.append(ChecklistInput(criteria=criteria))
    return Corpus(tuple(checklists), skipped)


def load_kqa(path: Path) -> Corpus:
    """The K-QA questions file: each question's `Must_have` and `Nice_to_have` statements
    as one checklist of fact criteria (how evaluation/datasets/kqa.py imports them)."""
    checklists: list[ChecklistInput] = []
    skipped = 0
    with path.open(encoding="utf-8") as lines:
        for row_number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            items = [*(row.get("Must_have") or []), *(row.get("Nice_to_have") or [])]
            items = [str(item) for item in items if str(item).strip()]
            if not items:
                skipped += 1
                continue
            criteria = tuple(
                CriterionInput(key=f"{row_number}:{index}", text=item, kind="fact")
                for index, item in enumerate(items)
            )
            checklists.append(ChecklistInput(criteria=criteria))
    return Corpus(tuple(checklists), skipped)


LOADERS = {"biggen": load_corpus, "kqa": load_kqa}


def rule_stats(
    checklists: Sequence[ChecklistInput], config: GuidelineConfig, *, examples: int = 2
) -> list[RuleStat]:
    """Per rule, how many criteria (or checklists) it fired on, with the first examples."""
    text_by_key = {c.key: c.text for checklist in checklists for c in checklist.criteria}
    stats: dict[str, RuleStat] = {}
    for info in RULES:
        setting = config.setting(info.id)
        severity = (setting.severity or info.default_severity) if setting.enabled else "off"
        # Duplicates are checklist-scope but reported on a criterion, so they count criteria.
        on_criteria = info.scope == "criterion" or info.id in ("duplicate", "near-duplicate")
        unit = "criteria" if on_criteria else "checklists"
        total = len(text_by_key) if on_criteria else len(checklists)
        stats[info.id] = RuleStat(info.id, severity, unit, total=total)
    for checklist in checklists:
        report = validate_checklist(checklist, config)
        seen: set[tuple[str, str | None]] = set()
        for finding in report.findings:
            where = (finding.rule_id, finding.criterion_key)
            if where in seen:
                continue  # one criterion with two bad citations counts once
            seen.add(where)
            stat = stats[finding.rule_id]
            stat.fired += 1
            if len(stat.examples) < examples:
                stat.examples.append(_example(finding.criterion_key, checklist, text_by_key))
    return list(stats.values())


def _example(key: str | None, checklist: ChecklistInput, text_by_key: dict[str, str]) -> str:
    if key is not None:
        return text_by_key[key]
    first = checklist.criteria[0].text if checklist.criteria else ""
    return f"({len(checklist.criteria)} criteria) {first}"


def _cell(text: str, limit: int = 110) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("|", "\\|")


def markdown_table(stats: Iterable[RuleStat]) -> str:
    lines = [
        "| Rule | Severity | Fired on | Share | Examples |",
        "|---|---|---:|---:|---|",
    ]
    for stat in stats:
        if stat.severity == "off":
            lines.append(f"| `{stat.rule_id}` | off | – | – | |")
            continue
        examples = "<br>".join(f"“{_cell(e)}”" for e in stat.examples)
        lines.append(
            f"| `{stat.rule_id}` | {stat.severity} | {stat.fired} / {stat.total} {stat.unit} "
            f"| {stat.share:.2%} | {examples} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="JSONL file with an atomic_checklist per row")
    parser.add_argument(
        "--format",
        choices=sorted(LOADERS),
        default="biggen",
        help="biggen: `atomic_checklist` lists; kqa: `Must_have` and `Nice_to_have` lists",
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default="generic")
    parser.add_argument("--examples", type=int, default=2, help="example texts per rule")
    args = parser.parse_args(argv)

    corpus = LOADERS[args.format](args.path)
    started = time.perf_counter()
    stats = rule_stats(corpus.checklists, preset(args.preset), examples=args.examples)
    elapsed = time.perf_counter() - started
    print(
        f"Preset `{args.preset}`: {len(corpus.checklists)} checklists, {corpus.criteria} "
        f"criteria ({corpus.skipped_rows} rows without a checklist skipped).\n"
    )
    print(markdown_table(stats))
    # Timing varies from run to run, so it goes to stderr and the table stays reproducible.
    print(f"validated in {elapsed * 1000:.0f} ms", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
