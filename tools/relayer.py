"""Move modules to the package of their layer and rewrite every reference to them (issue 39).

    python3.11 tools/relayer.py             # move the files, rewrite the references, sort imports
    python3.11 tools/relayer.py --dry-run   # print what would move and which files would change
    python3.11 tools/relayer.py --map evaluation.old.mod=evaluation.new.mod   # an extra move

The moves are the table MOVES below (old dotted module -> new dotted module; a package moves
with everything under it, its templates under templates/ too); SYMBOLS lists the names that
hand-written commits moved between modules. For every tracked text file outside migrations,
the script rewrites:

- `from old import a, b` statements, splitting them when the names now live in different
  modules (a moved submodule keeps its old name with `as`);
- `from evaluation.models import A, B` (the model hub) into imports from the modules that own
  A and B, as the hub itself imports them, so that no package imports every other one's models
  through the hub (the hub and migrations keep theirs);
- every other dotted mention (`evaluation.data.tasks.x` task names and routes, `mock.patch`
  targets, docstrings) and path mention (`evaluation/data/export.py`, template names
  `evaluation/data/x.html`, docs).

It is idempotent and meant to be run again on a tree where others have since added imports of
old paths: a file moves only while its old path exists, and a rewrite maps old names only. The
one old name that is reused (`evaluation.datasets`, the shipped files, frees its name for the
dataset import/export) is mapped only while `evaluation/data/` still exists, that is on the
first run. Migrations are left alone (they name models by app label). Then it runs
`ruff check --select I --fix` and `ruff format` on the files it changed.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUFF = ROOT / ".venv" / "bin" / "ruff"
if not RUFF.exists():
    RUFF = Path("/work/main/.venv/bin/ruff")

# Order matters where a new name is an old one: the shipped files leave `evaluation.datasets`
# before the import/export package takes the name.
MOVES: list[tuple[str, str]] = [
    # Point 5: the K-QA and BiGGen files are fixtures, not a package.
    ("evaluation.datasets", "evaluation.fixtures"),
    # Point 5: one checks/ (the criterion checks' model, form, views folded in).
    ("evaluation.criterion_checks", "evaluation.checks"),
    # Point 3: answers and systems in a package of their own, below runs.
    ("evaluation.data.agent_fields", "evaluation.answers.agent_fields"),
    ("evaluation.data.rendering", "evaluation.answers.rendering"),
    ("evaluation.data.answers_upload", "evaluation.answers.upload"),
    ("evaluation.data.answers_api", "evaluation.answers.api"),
    # The tables and file formats that exports, imports and answer uploads share (no Django
    # models): below everything that writes or reads a file.
    ("evaluation.data.rows", "evaluation.tables.rows"),
    ("evaluation.data.schema", "evaluation.tables.schema"),
    ("evaluation.data.formats", "evaluation.tables.formats"),
    # Point 3: the dataset import/export, at the top; `data` said nothing.
    ("evaluation.data", "evaluation.datasets"),
    # Point 3: the generic stale-while-revalidate refresh of kept figures, in kept/ (runs'
    # scores use it, and runs sit below analytics).
    ("evaluation.analytics.refresh", "evaluation.kept.refresh"),
    # Point 3: the human labels and adjudications (models only) below runs and judges, which
    # read them; review's pages, services and queues stay above runs.
    ("evaluation.review.models", "evaluation.labels.models"),
    # Point 3: a verdict's prompt rebuilt from the version it records reads runs' grading:
    # in runs, above judges.
    ("evaluation.judges.rebuild", "evaluation.runs.rebuild"),
    # Point 5: one access-helper convention, access.py, in every package.
    ("evaluation.runs.permissions", "evaluation.runs.access"),
    ("evaluation.review.permissions", "evaluation.review.access"),
    ("annotation.permissions", "annotation.access"),
    ("accounts.permissions", "accounts.access"),
]
# Mapped only while this file exists (a moved folder may stay behind with its __pycache__).
REUSED = {"evaluation.datasets": ROOT / "evaluation" / "data" / "__init__.py"}

# Names that hand-written commits moved out of a module that stays (old module.name -> module).
SYMBOLS: dict[str, str] = {
    "evaluation.data.models.System": "evaluation.answers.models",
    "evaluation.data.models.Answer": "evaluation.answers.models",
    "evaluation.data.forms.AnswersUploadForm": "evaluation.answers.forms",
    "evaluation.data.services.access_export": "evaluation.datasets.access",
    "evaluation.datasets.services.access_export": "evaluation.datasets.access",
}

# Single templates that leave their package's folder (template name without .html).
TEMPLATES: list[tuple[str, str]] = [
    ("evaluation/data/dataset_answers", "evaluation/answers/dataset_answers"),
]

TEXT_SUFFIXES = {".py", ".md", ".html", ".txt", ".toml", ".cfg", ".ini", ".yml", ".yaml", ".js"}
TEXT_NAMES = {"run", "Makefile", ".gitignore"}
HUB = "evaluation.models"
HUB_FILE = ROOT / "evaluation" / "models" / "__init__.py"
TOPS = ("evaluation", "annotation", "accounts")
TOP = "|".join(TOPS)
DOTTED = re.compile(rf"(?<![\w.])((?:{TOP})(?:\.\w+)+)")
PATHS = re.compile(rf"(?<![\w./-])((?:{TOP})(?:/\w+)+)")
# Every task's name (evaluation/task_names.py): what a queued message carries.
TASK_NAMES = frozenset(
    re.findall(r'^\w+_TASK = "([\w.]+)"', (ROOT / "evaluation" / "task_names.py").read_text(), re.M)
)


def active_moves(extra: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(o, n) for o, n in MOVES + extra if o not in REUSED or REUSED[o].exists()]


class Mapper:
    """Longest-prefix mapping of dotted names (and of slash paths, the same table)."""

    def __init__(self, moves: list[tuple[str, str]]):
        self.moves = dict(moves)
        self.paths = {o.replace(".", "/"): n.replace(".", "/") for o, n in moves}
        self.paths.update(dict(TEMPLATES))

    @staticmethod
    def _map(table: dict[str, str], name: str, sep: str) -> str:
        parts = name.split(sep)
        for i in range(len(parts), 0, -1):
            head = sep.join(parts[:i])
            if head in table:
                return sep.join([table[head], *parts[i:]])
        return name

    def dotted(self, name: str) -> str:
        if name in TASK_NAMES:  # a wire name, wherever it is written: never renamed
            return name
        return self._map(self.moves, name, ".")

    def path(self, name: str) -> str:
        return self._map(self.paths, name, "/")

    def symbol(self, module: str, name: str) -> str:
        """The module that now holds `module.name` (a name imported from a module)."""
        for key in (f"{module}.{name}", f"{self.dotted(module)}.{name}"):
            if key in SYMBOLS:
                return self.dotted(SYMBOLS[key])
        return self.dotted(module)

    def is_module(self, dotted: str) -> bool:
        if dotted in self.moves or any(o.startswith(dotted + ".") for o in self.moves):
            return True
        base = ROOT / dotted.replace(".", "/")
        return base.with_suffix(".py").exists() or base.is_dir()


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def tracked() -> list[Path]:
    return [ROOT / p for p in git("ls-files").splitlines()]


def move_files(moves: list[tuple[str, str]], dry: bool) -> int:
    """git mv every tracked file under an old module (and its templates) to the new place."""
    mapper = Mapper(moves)
    moved = 0
    files = [p.relative_to(ROOT).as_posix() for p in tracked()]
    # A reused name's files leave first, so that its new owner moves into an empty place.
    reused = tuple(o.replace(".", "/") + "/" for o, _ in moves if o in REUSED)
    files.sort(key=lambda rel: not rel.startswith(reused))
    for rel in files:
        src = ROOT / rel
        if not src.exists() or "/migrations/" in rel:
            continue
        prefix = "templates/" if rel.startswith("templates/") else ""
        stem, dot, ext = rel.removeprefix(prefix).rpartition(".")
        new = f"{prefix}{mapper.path(stem)}{dot}{ext}" if dot else f"{prefix}{mapper.path(rel)}"
        if new == rel:
            continue
        dst = ROOT / new
        print(f"move {rel} -> {new}")
        moved += 1
        if dry:
            continue
        if dst.exists():
            if src.name == "__init__.py":  # folding a package into one that exists
                git("rm", "-q", rel)
                continue
            sys.exit(f"relayer: {new} exists; move {rel} by hand first")
        dst.parent.mkdir(parents=True, exist_ok=True)
        if (
            src.suffix == ".py"
            and src.name != "__init__.py"
            and not (dst.parent / "__init__.py").exists()
        ):
            init = dst.parent / "__init__.py"
            init.write_text("")
            git("add", init.relative_to(ROOT).as_posix())
        git("mv", rel, new)
        prune(src.parent)
    return moved


def prune(folder: Path) -> None:
    """Remove a folder its files left, with its byte-code cache, and its parents left empty."""
    while folder != ROOT and folder.is_dir():
        cache = folder / "__pycache__"
        if cache.is_dir() and not any(folder.glob("*.py")):
            for pyc in cache.iterdir():
                pyc.unlink()
            cache.rmdir()
        if any(folder.iterdir()):
            return
        folder.rmdir()
        folder = folder.parent


def hub_owners() -> dict[str, str]:
    owners = {}
    for node in ast.parse(HUB_FILE.read_text()).body:
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("evaluation.")
        ):
            for alias in node.names:
                owners[alias.name] = node.module
    return owners


def rewrite_import(
    node: ast.ImportFrom, mapper: Mapper, owners: dict[str, str] | None
) -> list[str] | None:
    """The `from ... import` lines that replace node, or None when it stays as it is."""
    groups: dict[str, list[str]] = {}
    changed = False
    for alias in node.names:
        module, name, asname = node.module, alias.name, alias.asname
        if module == HUB and owners is not None and name in owners:
            target, base = owners[name], name
        elif name != "*" and mapper.is_module(f"{module}.{name}"):
            full = mapper.dotted(f"{module}.{name}")
            target, _, base = full.rpartition(".")
        else:
            target, base = mapper.symbol(module, name), name
        local = asname or name
        text = base if local == base else f"{base} as {local}"
        changed |= target != module or base != name
        groups.setdefault(target, []).append(text)
    if not changed:
        return None
    return [f"from {target} import {', '.join(names)}" for target, names in groups.items()]


def rewrite_text(text: str, mapper: Mapper) -> str:
    text = DOTTED.sub(lambda m: mapper.dotted(m.group(1)), text)
    return PATHS.sub(lambda m: mapper.path(m.group(1)), text)


def rewrite_python(source: str, mapper: Mapper, owners: dict[str, str] | None) -> str:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return rewrite_text(source, mapper)
    lines = source.splitlines(keepends=True)
    spans: list[tuple[int, int, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            new = rewrite_import(node, mapper, owners)
            if new is not None:
                spans.append((node.lineno - 1, node.end_lineno, new))
    spans.sort()
    out, at = [], 0
    for start, end, new in spans:
        out.append(rewrite_text("".join(lines[at:start]), mapper))
        first = lines[start]
        indent = first[: len(first) - len(first.lstrip())]
        last = lines[end - 1]
        comment = last[last.index("#") :].rstrip("\n") if "#" in last and start == end - 1 else ""
        for i, line in enumerate(new):
            tail = f"  {comment}" if comment and i == len(new) - 1 else ""
            out.append(f"{indent}{line}{tail}\n")
        at = end
    out.append(rewrite_text("".join(lines[at:]), mapper))
    return "".join(out)


# Paths written as joined parts (Path(...) / "datasets" / "kqa"): the fixtures' folders.
PARTS = re.compile(r'"datasets"(\s*/\s*"(?:kqa|biggen)")')


def rewrite_files(moves: list[tuple[str, str]], dry: bool) -> list[Path]:
    mapper = Mapper(moves)
    owners = hub_owners() if HUB_FILE.exists() else {}
    changed = []
    for path in tracked():
        rel = path.relative_to(ROOT).as_posix()
        if (
            not path.exists()
            or "/migrations/" in rel
            or rel == "tools/relayer.py"
            # Task names are wire names: a message queued before a move must still find its
            # task after it, so a name that holds an old module path stays as it is.
            or rel == "evaluation/task_names.py"
            or rel == "docs/benchmarks-history.md"  # history: the paths of its day
            or path == HUB_FILE
        ):
            continue
        if path.suffix not in TEXT_SUFFIXES and path.name not in TEXT_NAMES:
            continue
        old = path.read_text()
        if path.suffix == ".py":
            new = rewrite_python(old, mapper, owners)
            if "evaluation.datasets" in dict(moves):
                new = PARTS.sub(r'"fixtures"\1', new)
        else:
            new = rewrite_text(old, mapper)
        if new != old:
            changed.append(path)
            print(f"rewrite {rel}")
            if not dry:
                path.write_text(new)
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--map", action="append", default=[], metavar="OLD=NEW")
    args = parser.parse_args()
    extra = [tuple(m.split("=", 1)) for m in args.map]
    moves = active_moves(extra)
    # The hub is rewritten first: its imports name the owners the other files are pointed to.
    move_files(moves, args.dry_run)
    changed = []
    if HUB_FILE.exists():
        hub = rewrite_python(HUB_FILE.read_text(), Mapper(moves), None)
        if hub != HUB_FILE.read_text():
            changed.append(HUB_FILE)
            if not args.dry_run:
                HUB_FILE.write_text(hub)
    changed += rewrite_files(moves, args.dry_run)
    py = [str(p) for p in changed if p.suffix == ".py"]
    if py and not args.dry_run:
        subprocess.run(
            [str(RUFF), "check", "-q", "--select", "I", "--fix", *py], cwd=ROOT, check=False
        )
        subprocess.run([str(RUFF), "format", "-q", *py], cwd=ROOT, check=False)
    print(f"relayer: {len(changed)} files rewritten")


if __name__ == "__main__":
    main()
