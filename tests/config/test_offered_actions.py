"""Every action a page offers is one its reader may use (issue 28, point 7).

Each signed-in role of tests/support/world.py, and three more people (a member of the
site-wide Admin group on no dataset, a dataset admin outside that group, an expert with no
checklist yet; see `world` below), opens every HTML page of the URL conf with the world's
objects in its path, and every page of a dataset for an empty dataset as well. A page must
not fail (no 5xx). On each page that answers 200, every action it offers
is collected: a `<form method="post">` (once per named submit button; an empty or missing
`action` is the page itself), an `hx-post`, `hx-put`, `hx-patch` or `hx-delete`, and every
link and `hx-get` into the application. Each write is sent, with the form's hidden fields and
nothing else, in a transaction rolled back after it; each link is followed. Neither may
answer 403 or 404 (nor fail): a button or a link that refuses the person it is shown to is a
page that offers what it should not. A validation error, a 200, a redirect, a 405 for a
link to a write or a 409 for a write with nothing to do are all fine. And every input box
on the pages (text, number, URL, time, file, ...) is one static/css/app.css styles.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.db import transaction
from django.test import Client

from annotation import roles, services
from evaluation.runs.models import Run
from tests.config.matrix_routes import page_routes, page_url
from tests.factories import QueryFactory, UserFactory
from tests.support.world import build_world

pytestmark = pytest.mark.django_db

SWEPT_ROLES = (
    "no_role", "outsider", "other_expert", "reviewer", "expert", "new_expert", "dataset_admin",
    "member_admin", "site_admin",
)  # fmt: skip

# Not pages: files, probes and the login flow itself.
NOT_PAGES = {
    "favicon", "livez", "logout", "login", "dataset-overlaps-csv", "analytics-complexity-csv",
    "analytics-complexity-svg", "export-download",
}  # fmt: skip
# Offered to everyone and allowed to everyone; following them would end the session.
NOT_FOLLOWED = ("/accounts/logout/",)
# Links that leave the application's pages: the API's own pages, the site administration
# (shown to staff only) and static files.
NOT_LINKS = ("/api/", "/admin/", "/static/")
WRITES = ("post", "put", "patch", "delete")
REFUSED = (403, 404)


@dataclass
class Action:
    method: str  # "post", "put", "patch", "delete" or "get" (a link)
    url: str
    data: dict[str, str] = field(default_factory=dict)
    htmx: bool = False
    label: str = ""

    def key(self) -> tuple:
        return (self.method, self.url, tuple(sorted(self.data.items())), self.htmx)

    def describe(self) -> str:
        via = "hx-" if self.htmx else ""
        data = f" {self.data}" if self.data else ""
        return f"{via}{self.method.upper()} {self.url}{data} ({self.label or 'no label'})"


class _Form:
    def __init__(self, attrs: dict[str, str]) -> None:
        self.attrs = attrs
        self.hidden: dict[str, str] = {}
        self.buttons: list[tuple[str, str, str]] = []  # name, value, label


class ActionParser(HTMLParser):
    """The writes and links of one page, as `Action`s, relative to `page`."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.forms: list[_Form] = []
        self.actions: list[Action] = []
        self._open: list[_Form] = []
        self._text_of: list[list[str]] = []  # text of the buttons and links being read
        self._pending: list[Action] = []
        self._in_form: list[tuple[Action, _Form]] = []
        self.input_types: set[str] = set()

    def url(self, value: str | None) -> str:
        return urljoin(self.page, value or "")

    def handle_starttag(self, tag: str, attrs_list) -> None:
        attrs = {k: v or "" for k, v in attrs_list}
        form = self._open[-1] if self._open else None
        if tag == "input":
            self.input_types.add(attrs.get("type", "").lower())
        if tag == "form":
            form = _Form(attrs)
            self._open.append(form)
            self.forms.append(form)
        elif form is not None and tag == "input" and attrs.get("type") == "hidden":
            if attrs.get("name") and attrs["name"] != "csrfmiddlewaretoken":  # not enforced
                form.hidden[attrs["name"]] = attrs.get("value", "")
        elif form is not None and (
            (tag == "button" and attrs.get("type", "submit") == "submit")
            or (tag == "input" and attrs.get("type") == "submit")
        ):
            form.buttons.append(
                (attrs.get("name", ""), attrs.get("value", ""), attrs.get("aria-label", ""))
            )
        for method in (*WRITES, "get"):
            target = attrs.get(f"hx-{method}")
            if target is None or (tag == "form" and method != "get"):
                continue  # a form's write is read with its buttons, at its end
            data = {}
            if attrs.get("name") and tag != "form":
                data[attrs["name"]] = attrs.get("value", "")
            if attrs.get("hx-vals", "").startswith("{"):
                data.update({k: str(v) for k, v in json.loads(attrs["hx-vals"]).items()})
            label = "" if tag in ("a", "button") else f"<{tag} {attrs.get('name', '')}>"
            action = Action(method, self.url(target), data, htmx=True, label=label)
            self.actions.append(action)
            if form is not None and method != "get":
                self._in_form.append((action, form))  # htmx sends the form's fields too
            if not label:
                self._pending.append(action)
        if tag == "a" and attrs.get("href"):
            action = Action("get", self.url(attrs["href"]))
            self.actions.append(action)
            self._pending.append(action)
        if tag in ("a", "button"):
            self._text_of.append([])

    def handle_data(self, data: str) -> None:
        for text in self._text_of:
            text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("a", "button") and self._text_of:
            text = " ".join("".join(self._text_of.pop()).split())
            for action in self._pending:
                action.label = text
            if self._open and tag == "button" and self._open[-1].buttons:
                name, value, label = self._open[-1].buttons[-1]
                self._open[-1].buttons[-1] = (name, value, label or text)
            self._pending = []
        elif tag == "form" and self._open:
            self._open.pop()

    def close(self) -> None:
        super().close()
        for action, form in self._in_form:
            action.data = {**form.hidden, **action.data}
        for form in self.forms:
            sent = [(m, form.attrs[f"hx-{m}"], True) for m in WRITES if f"hx-{m}" in form.attrs]
            if form.attrs.get("method", "get").lower() == "post":
                sent.append(("post", form.attrs.get("action"), False))
            named = [b for b in form.buttons if b[0]] or form.buttons[:1] or [("", "", "")]
            for method, target, htmx in sent:
                for name, value, label in named:
                    data = dict(form.hidden)
                    if name:
                        data[name] = value
                    self.actions.append(
                        Action(method, self.url(target), data, htmx, label=label or "form")
                    )


def read_page(page: str, html: str) -> tuple[list[Action], set[str]]:
    """The actions a page offers inside the application, and the types of its inputs."""
    parser = ActionParser(page)
    parser.feed(html)
    parser.close()
    inside = []
    for action in parser.actions:
        parts = urlsplit(action.url)
        if parts.scheme not in ("", "http") or parts.netloc not in ("", "testserver"):
            continue
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        if path.startswith(NOT_LINKS) or path.startswith(NOT_FOLLOWED):
            continue
        action.url = path
        inside.append(action)
    return inside, parser.input_types


def offered_actions(page: str, html: str) -> list[Action]:
    return read_page(page, html)[0]


# Inputs that are not boxes to type in: the browser's own look is the one wanted.
NOT_BOXES = {"hidden", "checkbox", "radio", "submit", "button", "image", "reset"}


def styled_input_types() -> set[str]:
    """The input types static/css/app.css gives the form style ("" for an input without a
    type, which is a text box)."""
    css = (settings.BASE_DIR / "static" / "css" / "app.css").read_text()
    styled = set(re.findall(r"input\[type=\"?([a-z-]+)\"?\]", css))
    return styled | ({""} if "input:not([type])" in css else set())


def pages(world) -> list[tuple[str, str]]:
    """(url name, URL) of every HTML page, with the world's objects; then the submitted
    checklist as well as the expert's draft, the running run as well as the finished one,
    the assigned query, and every page of a dataset for the empty dataset too."""
    found = []
    for name, pattern in page_routes():
        if name in NOT_PAGES:
            continue
        if pattern.startswith("datasets/<int:pk>/") and pattern.count("<") == 1:
            # A page of a dataset, new or old: the world's dataset, then the empty one.
            for dataset in (world.dataset, world.empty):
                found.append((name, "/" + pattern.replace("<int:pk>", str(dataset.pk))))
        else:
            found.append((name, page_url(pattern, name, world)))
    found.append(("checklist-detail", f"/checklists/{world.submitted.pk}/"))
    found.append(("run-detail", f"/runs/{world.running.pk}/"))
    found.append(("query-detail", f"/queries/{world.assigned.pk}/"))
    return found


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """tests/support/world.py's world, and: `site_admin`, in the site-wide Admin group (may
    make datasets, judges, panels, guidelines) and on no dataset; `member_admin`, an admin of
    the dataset who is not in the Admin group (of the Expert group); `new_expert`, an expert
    on the dataset with no checklist yet; a run still running; a query assigned to the
    other expert alone; and an empty dataset (no query), where experts may not add queries,
    with the same members."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            w = build_world()
            for name, group in (
                ("site_admin", "ADMIN"), ("new_expert", "EXPERT"), ("member_admin", "EXPERT")
            ):  # fmt: skip
                user = UserFactory(username=name)
                user.groups.add(Group.objects.get(name=getattr(roles.Group, group).value))
                w.users[name] = user
            services.dataset_set_role(
                dataset=w.dataset, user=w.users["new_expert"], role=roles.DatasetRole.EXPERT
            )
            services.dataset_set_role(
                dataset=w.dataset, user=w.users["member_admin"], role=roles.DatasetRole.ADMIN
            )
            w.running = Run.objects.create(
                dataset=w.dataset, panel=w.panel, status=Run.Status.RUNNING, expected=6
            )
            w.assigned = QueryFactory(dataset=w.dataset)  # to the other expert only
            w.assigned.assigned_experts.add(w.users["other_expert"])
            # Experts may not add queries to this one: their pages must not offer it.
            w.empty = services.dataset_create(name="Empty dataset", by=w.users["dataset_admin"])
            w.empty.experts_create_queries = False
            w.empty.save(update_fields=["experts_create_queries"])
            for name in ("expert", "other_expert", "new_expert", "reviewer", "member_admin"):
                role = {"reviewer": "REVIEWER", "member_admin": "ADMIN"}.get(name, "EXPERT")
                services.dataset_set_role(
                    dataset=w.empty, user=w.users[name], role=getattr(roles.DatasetRole, role)
                )
            yield w
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def send(client: Client, action: Action):
    headers = {"HX-Request": "true"} if action.htmx else {}
    if action.method == "get":
        return client.get(action.url, headers=headers)
    if action.method == "post":
        return client.post(action.url, action.data, headers=headers)
    return client.generic(action.method.upper(), action.url, headers=headers)


@pytest.fixture(autouse=True)
def _no_worker_wait(settings):
    # /healthz asks for a worker, which does not run here: fail it fast.
    settings.HEALTHZ_WORKER_TIMEOUT = 0.1


@pytest.mark.parametrize("role", SWEPT_ROLES)
def test_every_action_a_page_offers_is_allowed_to_its_reader(world, db, role):
    user = world.users[role]
    client = Client(raise_request_exception=False)
    client.force_login(user)
    problems: list[str] = []
    tried: dict[tuple, int] = {}
    styled = styled_input_types()
    for name, url in pages(world):
        response = client.get(url)
        if response.status_code >= 500:
            problems.append(f"{role}: page {name} {url} answers {response.status_code}")
            continue
        if response.status_code != 200 or "html" not in response.get("Content-Type", ""):
            continue
        actions, input_types = read_page(url, response.content.decode())
        for kind in sorted(input_types - styled - NOT_BOXES):
            problems.append(f"{role}: page {name} {url} has an <input type={kind}> app.css misses")
        for action in actions:
            if action.key() in tried:
                code = tried[action.key()]
            else:
                session = client.cookies.get("sessionid")
                with transaction.atomic():
                    code = send(client, action).status_code
                    transaction.set_rollback(True)
                if client.cookies.get("sessionid") != session:
                    client.force_login(user)
                tried[action.key()] = code
                if os.environ.get("OFFERED_PRINT"):  # what was tried, for a reader to check
                    with open(os.environ["OFFERED_PRINT"], "a") as out:
                        out.write(f"{role} {name} {code} {action.describe()}\n")
            if code in REFUSED or code >= 500:
                problems.append(
                    f"{role}: page {name} {url} offers {action.describe()}, which answers {code}"
                )
    assert tried, f"{role} was offered nothing at all"
    assert not problems, "\n".join(problems)


def test_the_parser_finds_forms_htmx_writes_and_links():
    html = """
      <form method="post"><input type="hidden" name="a" value="1">
        <button name="do" value="x">X</button><button name="do" value="y">Y</button></form>
      <form method="post" action="/other/"><button>Go</button></form>
      <form method="get" action="/search/"><button>Search</button></form>
      <form hx-post="/rows/"><button name="go" value="1">Add</button>
        <input type="hidden" name="c" value="3"></form>
      <button hx-delete="/rows/1/" hx-vals='{"b": 2}'>Delete</button>
      <a href="../up/">Up</a> <a href="https://example.com/">Away</a>
      <a href="/api/docs/">API</a> <a href="#top">Top</a>
    """
    found = {a.describe() for a in offered_actions("/page/here/", html)}
    assert found == {
        "POST /page/here/ {'a': '1', 'do': 'x'} (X)",
        "POST /page/here/ {'a': '1', 'do': 'y'} (Y)",
        "POST /other/ (Go)",
        "hx-POST /rows/ {'c': '3', 'go': '1'} (Add)",
        "hx-DELETE /rows/1/ {'b': '2'} (Delete)",
        "GET /page/up/ (Up)",
        "GET /page/here/ (Top)",
    }


def test_the_form_style_covers_the_input_boxes_the_pages_use():
    assert {"", "text", "number", "url", "time", "date", "email", "file"} <= styled_input_types()
