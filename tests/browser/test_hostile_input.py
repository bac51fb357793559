"""Hostile input (issue 13, point 8): an XSS corpus stored in every user-written field, then
every page crawled in Chromium as the superuser (who sees them all) with the
Content-Security-Policy bypassed, so that only escaping stands between a payload and its
execution. No payload may run: no `window.__xss`, no dialog, no request to a payload URL.
"""

from __future__ import annotations

import itertools

import pytest

from annotation.models import Citation, Criterion, Dataset, DomainTag, Query, QueryCategory
from evaluation.answers.models import Answer, System
from evaluation.judges.models import Judge, Panel
from evaluation.labels.models import Adjudication, HumanLabel
from evaluation.runs.models import Run
from tests.config.matrix_routes import page_routes, page_url
from tests.config.matrix_table import MATRIX
from tests.support.world import build_world

pytestmark = pytest.mark.browser

# Each payload sets window.__xss when it runs. Markup, attribute breaks, event handlers,
# javascript: and data: URLs, markdown links and images, template syntax, SVG and MathML.
RUN = "window.__xss=1"
CORPUS = [
    f"<script>{RUN}</script>",
    f"<img src=x onerror={RUN}>",
    f'"><img src=x onerror="{RUN}">',
    f"'><img src=x onerror='{RUN}'>",
    f"<svg onload={RUN}>",
    f"<svg><script>{RUN}</script></svg>",
    '<iframe srcdoc="<script>parent.__xss=1</script>"></iframe>',
    f"<body onload={RUN}>",
    f"<details open ontoggle={RUN}>",
    f"<input autofocus onfocus={RUN}>",
    f'<a href="javascript:{RUN}">click</a>',
    f"javascript:{RUN}",
    f"[link](javascript:{RUN})",
    f'![img](x" onerror="{RUN})',
    f"<math><mtext><table><mglyph><style><img src=x onerror={RUN}>",
    f"</textarea><script>{RUN}</script>",
    f"</title><script>{RUN}</script>",
    f"--><script>{RUN}</script><!--",
    f"<style>*{{background:url('javascript:{RUN}')}}</style>",
    f'<object data="javascript:{RUN}"></object>',
    f'<embed src="javascript:{RUN}">',
    f"<form><button formaction=javascript:{RUN}>x</button></form>",
    f'<meta http-equiv=refresh content="0;url=javascript:{RUN}">',
    "{{ 7|add:7 }} {% csrf_token %} ${7*7} #{7*7}",
    f'<div hx-get="/" hx-trigger="load" hx-on::load="{RUN}">htmx</div>',
    f'<div x-init="{RUN}" hx-on:click="{RUN}">',
    f'"onmouseover="{RUN}" x="',
    f'<img src="data:image/svg+xml,<svg onload={RUN}>">',
    f'<a href="data:text/html,<script>{RUN}</script>">d</a>',
    f"<scr<script>ipt>{RUN}</scr</script>ipt>",
    f"<IMG SRC=x oNeRrOr={RUN}>",
    f"<video><source onerror={RUN}></video>",
    f"<audio src=x onerror={RUN}>",
    f"%3Cscript%3E{RUN}%3C/script%3E",
]


def store_the_corpus(world) -> None:
    payloads = itertools.cycle(CORPUS)

    def text(limit: int = 10_000) -> str:
        return next(payloads)[:limit]

    dataset: Dataset = world.dataset
    dataset.description = text()
    dataset.save()
    query: Query = world.query
    query.text, query.reference_answer = text(), text()
    query.category = QueryCategory.objects.create(name=text(100))
    query.save()
    query.tags.add(DomainTag.objects.create(name=text(60)))
    for criterion in Criterion.objects.filter(checklist__query=query):
        criterion.text, criterion.notes = text(), text()
        criterion.save()
    for payload in CORPUS:  # every payload once where it is rendered as markdown or text
        Criterion.objects.create(
            checklist=world.submitted, position=99, text=payload, notes=payload
        )
    Citation.objects.filter(pk=world.citation.pk).update(title=text(300), url=text(500))
    answer: Answer = world.answer
    answer.text = "\n\n".join(CORPUS)  # markdown: every payload in one rendered answer
    answer.external_id, answer.run_label = text(200), text(100)
    answer.save()
    Answer.objects.filter(pk=world.perfect_answer.pk).update(text="\n\n".join(CORPUS))
    System.objects.filter(pk=world.system.pk).update(name=text(100), version=text(50))
    Judge.objects.filter(pk=world.judge.pk).update(name=text(100), model=text(100))
    Panel.objects.filter(pk=world.panel.pk).update(name=text(100), description=text())
    Run.objects.filter(pk=world.run.pk).update(name=text(200))
    HumanLabel.objects.filter(pk=world.label.pk).update(note=text(), rater=text(150))
    Adjudication.objects.filter(pk=world.adjudication.pk).update(reason=text())
    for user in world.users.values():
        user.first_name, user.last_name = text(150), text(150)
        user.save()


def test_no_stored_payload_runs_on_any_page(browser, live_server, transactional_db):
    world = build_world()
    store_the_corpus(world)
    context = browser.new_context(base_url=live_server.url, bypass_csp=True)
    context.set_default_timeout(10_000)
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    context.add_cookies(
        [{"name": "sessionid", "value": _session_for(world.users["superuser"]),
          "url": live_server.url}]
    )  # fmt: skip
    patterns = dict(page_routes())
    visited = []
    # Every page the superuser can GET, as the permission matrix records it.
    readable = [
        n
        for n in sorted(patterns)
        # Downloads (CSV, the SVG chart) are attachments, not pages; the chart is crawled
        # inline on the analytics page.
        if MATRIX[("GET", n)].split()[-1] == "200" and not patterns[n].endswith((".csv", ".svg"))
    ]
    for name in readable:
        url = page_url(patterns[name], name, world)
        page.goto(url)
        page.wait_for_load_state("load")
        page.wait_for_timeout(50)  # onerror and onload handlers fire after load
        assert page.evaluate("window.__xss") is None, f"a payload ran on {url}"
        visited.append(url)
    # The pages that show the answers, criteria and notes, with their query strings.
    extra = [
        f"/answers/{world.answer.pk}/review/?run={world.run.pk}",
        f"/runs/{world.run.pk}/answers/{world.answer.pk}/",
        f"/checklists/{world.submitted.pk}/",
        f"/checklists/{world.submitted.pk}/perfect-answer/",
        f"/datasets/{world.dataset.pk}/?q=%3Cscript%3E",
    ]
    for url in extra:
        page.goto(url)
        page.wait_for_timeout(50)
        assert page.evaluate("window.__xss") is None, f"a payload ran on {url}"
    assert not dialogs
    assert len(visited) >= 25, visited
    context.close()


def _session_for(user) -> str:
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    store = import_module(settings.SESSION_ENGINE).SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    return store.session_key
