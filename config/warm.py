"""Ready a web worker before its first request: compile the project's templates, build the
URL resolver, then move everything loaded so far out of the garbage collector's sight.

Why: a worker holds about 260,000 long-lived objects once it has served a few pages
(modules, compiled templates, URL patterns, model metadata). Python's full collection
walks all of them, and it runs every few hundred requests, inside whichever request
happens to allocate at that moment: 100–650 ms added to one request, measured under the
mixed load of bench.web. `gc.freeze()` puts the objects alive now in a generation the
collector never walks, so a full collection then walks only what requests made (5–25 ms).
Compiling the templates first puts them among the frozen objects instead of among the
first requests' garbage-collected ones, and saves the first reader of each page its
compile. gunicorn calls `ready_worker` from config/gunicorn.py.
"""

from __future__ import annotations

import gc
from pathlib import Path

from django.conf import settings
from django.template import engines
from django.urls import get_resolver


def project_template_dirs() -> list[Path]:
    """The template directories that belong to the project (not to installed packages)."""
    base = Path(settings.BASE_DIR).resolve()
    found = []
    for directory in engines["django"].template_dirs:
        path = Path(directory).resolve()
        if path.is_relative_to(base) and ".venv" not in path.parts and path.is_dir():
            found.append(path)
    return found


def compile_templates() -> int:
    """Compile (and so cache, with Django's cached loader and Jinja2's own cache) every
    template of the project; the number compiled. A template that does not compile fails
    here, at start, rather than for the first reader of its page."""
    engine = engines["django"]
    compiled = 0
    for directory in project_template_dirs():
        for path in sorted(directory.rglob("*.html")):
            engine.get_template(path.relative_to(directory).as_posix())
            compiled += 1
    fragments = engines["jinja2"]  # settings.TEMPLATES: the review rows
    for directory in fragments.template_dirs:
        for path in sorted(Path(directory).rglob("*.jinja")):
            fragments.get_template(path.relative_to(directory).as_posix())
            compiled += 1
    return compiled


def ready_worker() -> int:
    """Warm the templates and URLs, then freeze what is alive; the objects frozen."""
    compile_templates()
    get_resolver().reverse_dict  # noqa: B018  (the property builds the reverse lookups)
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def queue_figures_warm_up() -> bool:
    """Queue the background warm-up of every kept figure (evaluation.analytics.warmup) at a
    web server's start, unless settings.FIGURES_WARM_UP is off; True when queued."""
    from evaluation.analytics import warmup  # config imports no app module at load time

    return warmup.queue(why="web server started")
