"""Each dataset is sealed (issue 38, point 7): no route shows a dataset's content to anyone
without a role on it, and none shows an expert another expert's checklist for a query before
they submit their own (the invariants "A dataset is sealed" and "Annotation is blind").

Two datasets, A and B, share a judge (tests/support/sealed_worlds.py): every text B owns
carries a marker, the judge is tuned with B's content (`tune_judge`) and each dataset has a
finished run of it. Then A's admin, reviewer and expert, people on no dataset (`no_role`, and
`site_admin` in the Admin group), anonymous visitors, and a member of both datasets through an
API token limited to A, each request every page route of the URL conf and every GET operation
of the OpenAPI schema, with the path arguments of A's objects and of B's, and with each object
parameter of the query string (a run, a dataset, ...) set to the other dataset's object. No
response may hold one of B's markers: not its body, streamed or not, nor an export's unzipped
files, nor its headers. No redirect is followed. The blind rule is swept the same way by B's
expert whose checklist is a draft and B's expert who has written none, for the markers of the
other experts' checklists.

How it grows with the product: new page routes and API operations are requested with no word
here, from the URL conf and the schema. Their path arguments come from the permission matrix's
PAGE_ARGS and API_IDS (tests/config/matrix_routes.py), which every new route needs anyway; an
argument missing there is guessed from its name (`judge_pk`) or the path segment before it
(`runs/{id}`), else tried with the id of every object of both datasets. A page's query
parameters are in no schema: a page that reads an object's id from its query string belongs in
PAGE_QUERIES. A new dataset-owned text or object, or a site-wide object that can be made to
carry a dataset's content, belongs in the builder with a marker. The last test keeps the
sweep honest: each marker must be seen by someone allowed to see it, so a marker nobody
reaches (a wrong argument, a route that answers 404 to all) is never mistaken for a sealed
dataset.

Only GET is requested: the writes that can carry content across datasets (a judge's examples
and instructions) are made by the builder through the services, and a write's answer echoes
what it was sent.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest
from django.db import transaction
from django.test import Client, override_settings
from rest_framework.test import APIClient

from tests.config.matrix_routes import API_IDS, PAGE_ARGS, page_routes
from tests.support.sealed_worlds import MarkedWorld, SealedWorlds, build_sealed_worlds

pytestmark = pytest.mark.django_db

# A page route that is not an id: a secret its holder was given (holding it is the access).
SECRET_ARGUMENTS = {
    "invitation-accept": "its key is the invitee's: whoever holds it is invited",
}

Ids = dict[str, Callable[[MarkedWorld], int]]


def _run(w: MarkedWorld) -> int:
    return w.run.pk


def _dataset(w: MarkedWorld) -> int:
    return w.dataset.pk


# What an object's id in the API's query string means, by the parameter's name in the schema.
OBJECT_PARAMS: Ids = {
    "dataset": _dataset,
    "query__dataset": _dataset,
    "run": _run,
    "a": _run,  # analytics/compare
    "b": _run,
    "query": lambda w: w.query.pk,
    "answer": lambda w: w.answer.pk,
    "criterion": lambda w: w.submitted_criterion.pk,
    "checklist": lambda w: w.submitted.pk,
}

RUN_PAGES = (
    "dataset-agreement", "agreement-items", "dataset-analytics", "analytics-criteria",
    "analytics-freshness", "analytics-complexity-csv", "analytics-complexity-svg",
    "review-queue", "review-next",
)  # fmt: skip

# The pages that read an object's id from their query string (no schema says so), and what
# each parameter names.
PAGE_QUERIES: dict[str, Ids] = {
    "judge-examples": {"dataset": _dataset},
    "dataset-import": {"dataset": _dataset},
    **{page: {"run": _run} for page in RUN_PAGES},
    "analytics-compare": {"a": _run, "b": _run},
    "dataset-side-by-side": {"a": _run, "b": _run},
    "answer-review": {"run": _run, "criterion": OBJECT_PARAMS["criterion"]},
    "query-overlaps": {"a": OBJECT_PARAMS["checklist"], "b": OBJECT_PARAMS["checklist"]},
}

PLACEHOLDER = re.compile(r"<(?:(\w+):)?(\w+)>|\{(\w+)\}")  # <int:pk> in pages, {id} in the API
MAX_TRIES = 60  # urls per route and world for arguments nobody maps


@dataclass(frozen=True)
class Actor:
    """Someone who requests every route: a user (None: anonymous) through pages (session)
    and the API (their token), or a token alone."""

    name: str
    user: Callable[[SealedWorlds], object | None]
    token: Callable[[SealedWorlds], str | None]
    pages: bool = True


def _of_a(role: str) -> Actor:
    return Actor(f"A's {role}", lambda s: s.a.users[role], lambda s: s.a.tokens[role])


def _outside(name: str) -> Actor:
    return Actor(name, lambda s: s.users[name], lambda s: s.tokens[name])


OUTSIDERS = [
    _of_a("dataset_admin"),  # in the Admin group, as every dataset admin
    _of_a("reviewer"),
    _of_a("other_expert"),  # an expert who has submitted: they see the most of A
    _outside("no_role"),
    _outside("site_admin"),  # the Admin group, no role on any dataset
    Actor("anonymous", lambda s: None, lambda s: None),
    Actor(
        "member of A and B, through a token limited to A",
        lambda s: None,
        lambda s: s.limited_token,
        pages=False,
    ),
]


def _of_b(role: str) -> Actor:
    return Actor(f"B's {role}", lambda s: s.b.users[role], lambda s: s.b.tokens[role])


# B's experts who have not submitted, and the checklists whose content is blind to them.
BLIND = {
    "expert": lambda s: [s.b.submitted],  # their own is a draft
    "idle_expert": lambda s: [s.b.submitted, s.b.draft],  # they have none
}


# -- the targets ------------------------------------------------------------------------------


def _guess(before: str, name: str, w: MarkedWorld) -> str | None:
    """The world's object for an argument the matrix does not map, from its name
    (`judge_pk`: the judge) or from the path segment before it (`runs/<pk>`: API_IDS)."""
    stem = re.sub(r"_(?:pk|id)$", "", name)
    if isinstance(getattr(getattr(w, stem, None), "pk", None), int):
        return str(getattr(w, stem).pk)
    segment = before.rstrip("/").rsplit("/", 1)[-1]
    return str(API_IDS[segment](w)) if segment in API_IDS else None


def _objects(worlds: tuple[MarkedWorld, ...]) -> list[str]:
    """The id of every object of the worlds: what an unguessable argument is tried with."""
    found = {
        getattr(w, f).pk for w in worlds for f in w.__dataclass_fields__
        if isinstance(getattr(getattr(w, f), "pk", None), int)
    }  # fmt: skip
    return [str(pk) for pk in sorted(found)]


def _fill(url: str, values: dict, w: MarkedWorld, worlds: tuple[MarkedWorld, ...]) -> list[str]:
    """`url` with its arguments set: from `values` (the matrix's), else guessed for the world
    `w`, else tried with every object's id (at most MAX_TRIES urls)."""
    for key, value in values.items():
        url = re.sub(rf"<(?:\w+:)?{key}>|\{{{key}\}}", str(value), url)
    left = PLACEHOLDER.search(url)
    if left is None:
        return [url]
    converter, name = left.group(1) or "", left.group(2) or left.group(3)
    if converter == "uuid" or name == "token":
        tries = [str(w.export.token)]
    elif (guessed := _guess(url[: left.start()], name, w)) is not None:
        tries = [guessed]
    elif converter == "int" or name in ("pk", "id") or name.endswith(("_pk", "_id")):
        tries = _objects(worlds)
    else:
        tries = ["x"]
    head, tail = url[: left.start()], url[left.end() :]
    urls = {u for t in tries for u in _fill(head + t + tail, {}, w, worlds)}
    return sorted(urls)[:MAX_TRIES]


def _with_queries(
    urls: list[str], path_world: MarkedWorld, required: Ids, optional: Ids,
    worlds: tuple[MarkedWorld, ...],
) -> Iterator[str]:  # fmt: skip
    """Each url with the required object parameters of its own world, then with each object
    parameter in turn set to the other world's object (A's page asked about B's run)."""
    base = {p: ids(path_world) for p, ids in required.items()}
    others = [w for w in worlds if w is not path_world]
    for url in urls:
        yield url + (f"?{urlencode(base)}" if base else "")
        for param, ids in {**required, **optional}.items():
            for w in others:
                yield f"{url}?{urlencode({**base, param: ids(w)})}"


def page_targets(worlds: tuple[MarkedWorld, ...]) -> list[str]:
    targets: set[str] = set()
    for name, pattern in page_routes():
        if name in SECRET_ARGUMENTS:
            continue
        for w in worlds:
            values = PAGE_ARGS[name](w) if name in PAGE_ARGS else {}
            urls = _fill("/" + pattern, values, w, worlds)
            targets.update(_with_queries(urls, w, {}, PAGE_QUERIES.get(name, {}), worlds))
    return sorted(targets)


def api_targets(worlds: tuple[MarkedWorld, ...]) -> list[str]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    targets: set[str] = set()
    for path, item in schema["paths"].items():
        if "get" not in item:
            continue
        params = [p for p in item["get"].get("parameters", ()) if p["in"] == "query"]
        known = [p for p in params if p["name"] in OBJECT_PARAMS]
        required = {p["name"]: OBJECT_PARAMS[p["name"]] for p in known if p.get("required")}
        optional = {p["name"]: OBJECT_PARAMS[p["name"]] for p in known if not p.get("required")}
        prefix = path.split("/")[2]
        for w in worlds:
            values: dict[str, object] = {"token": w.export.token}
            if prefix in API_IDS:
                values["id"] = API_IDS[prefix](w)
            urls = _fill(path, values, w, worlds)
            targets.update(_with_queries(urls, w, required, optional, worlds))
    return sorted(targets)


# -- the sweep -------------------------------------------------------------------------------


def _text(response) -> str:
    """Everything a response says, lowercased: headers, and the body read whole (streamed
    ones too), with every member of a zip unpacked."""
    # Read, never closed here: the test client closes a response once it is read (closing it
    # again sends request_finished, which closes the connection of a test's transaction).
    body = b"".join(response.streaming_content) if response.streaming else response.content
    parts = [body]
    if body[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            parts += [archive.read(name) for name in archive.namelist()]
    headers = " ".join(f"{k}: {v}" for k, v in response.items())
    return (headers + " " + b" ".join(parts).decode("utf-8", "replace")).lower()


@dataclass(frozen=True)
class Seen:
    method: str
    url: str
    status: int
    text: str


def sweep(actor: Actor, sealed: SealedWorlds, targets) -> Iterator[Seen]:
    pages_client, api_client = Client(raise_request_exception=False), APIClient()
    api_client.raise_request_exception = False
    user, token = actor.user(sealed), actor.token(sealed)
    if user is not None:
        pages_client.force_login(user)
    if token is not None:
        api_client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    pages, api = targets
    for url in pages if actor.pages else ():
        response = pages_client.get(url)
        yield Seen("GET", url, response.status_code, _text(response))
    for url in api:
        response = api_client.get(url)
        yield Seen("GET", url, response.status_code, _text(response))


def found(seen: list[Seen], markers: set[str]) -> list[str]:
    """Each (route, marker) where a marker is seen, as a line."""
    return [
        f"{s.method} {s.url} ({s.status}): {m}"
        for s in seen
        for m in sorted(markers)
        if m.lower() in s.text
    ]


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sealed(django_db_setup, django_db_blocker, tmp_path_factory):
    """Both datasets, built once for the module in a transaction rolled back at its end;
    each test runs in a savepoint inside it (pytest-django's `db`), as in
    test_permission_matrix.py."""
    from loopback import LoopbackOpenAI

    exports = tmp_path_factory.mktemp("exports")
    with (
        django_db_blocker.unblock(),
        LoopbackOpenAI() as server,
        override_settings(DATA_EXPORT_DIR=str(exports), HEALTHZ_WORKER_TIMEOUT=0.1),
    ):
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield build_sealed_worlds(server)
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture(scope="module")
def targets(sealed):
    worlds = (sealed.a, sealed.b)
    return page_targets(worlds), api_targets(worlds)


@pytest.fixture(scope="module")
def sweeps():
    """Each actor's sweep, made once for the tests that read it."""
    return {}


def swept(sweeps: dict, actor: Actor, sealed, targets) -> list[Seen]:
    if actor.name not in sweeps:
        sweeps[actor.name] = list(sweep(actor, sealed, targets))
    return sweeps[actor.name]


# -- the tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("actor", OUTSIDERS, ids=lambda a: a.name)
def test_no_content_of_b_reaches_anyone_without_a_role_on_b(sealed, targets, sweeps, db, actor):
    leaks = found(swept(sweeps, actor, sealed, targets), sealed.b.markers)
    assert not leaks, f"B's content seen by {actor.name}:\n" + "\n".join(leaks)


@pytest.mark.parametrize("role", sorted(BLIND))
def test_no_other_experts_checklist_reaches_a_blind_expert(sealed, targets, sweeps, db, role):
    actor = _of_b(role)
    hidden = set().union(*(sealed.b.checklist_markers[c.pk] for c in BLIND[role](sealed)))
    leaks = found(swept(sweeps, actor, sealed, targets), hidden)
    assert not leaks, f"Another expert's checklist seen by {actor.name}:\n" + "\n".join(leaks)


def test_the_sweep_reaches_every_marker(sealed, targets, sweeps, db):
    """Each marker is seen by someone allowed to see it, so its absence elsewhere means
    something: every marker of B by B's admin, every marker of A by A's admin, and their own
    checklist by B's expert whose checklist is a draft."""
    expected = [
        (_of_b("dataset_admin"), sealed.b.markers),
        (_of_a("dataset_admin"), sealed.a.markers),
        (_of_b("expert"), sealed.b.checklist_markers[sealed.b.draft.pk]),
    ]
    missed = {}
    for actor, markers in expected:
        seen = swept(sweeps, actor, sealed, targets)
        if unseen := sorted(m for m in markers if not any(m.lower() in s.text for s in seen)):
            missed[actor.name] = unseen
    assert not missed, f"Markers no route showed to someone allowed to see them: {missed}"


def _prompts_about(server, tag: str, since: int = 0) -> list[str]:
    """The whole messages of each call the judge received about dataset `tag`'s answers."""
    return [
        json.dumps(c.request.messages, ensure_ascii=False)
        for c in server.calls[since:]
        if f"SEALED-{tag}-" in c.request.last_user_text
    ]


def test_no_content_of_b_is_sent_in_a_prompt_of_a(sealed, db):
    """The judge shared by A and B, tuned with B's content: A's run, cross-evaluation and
    trial sent none of it (built with the worlds), nor does a reward request on A; B's own
    prompts carry B's tuning, so the check is not empty."""
    server = sealed.server
    a_prompts = _prompts_about(server, "A")
    assert a_prompts, "A's runs called the judge"
    assert any("Worked examples" in p for p in _prompts_about(server, "B"))
    before = len(server.calls)
    client = APIClient()
    client.force_authenticate(sealed.a.users["dataset_admin"])
    body = {"dataset": sealed.a.dataset.pk, "panel": sealed.a.panel.pk,
            "items": [{"query": sealed.a.query.external_id,
                       "completion": "SEALED-A-reward-completion answers the query."}]}  # fmt: skip
    answered = client.post("/api/rewards/", body, format="json")
    assert answered.status_code == 200, answered.content
    rewarded = _prompts_about(server, "A", since=before)
    assert rewarded, "the reward request called the judge"
    leaks = [m for p in [*a_prompts, *rewarded] for m in sealed.b.markers if m in p]
    assert not leaks, f"B's content sent in A's prompts: {sorted(set(leaks))}"
    # A's admin cannot ask for rewards on B at all.
    refused = client.post("/api/rewards/", {**body, "dataset": sealed.b.dataset.pk}, format="json")
    assert refused.status_code == 404
