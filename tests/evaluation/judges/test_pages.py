"""Judges pages: admins only (the Admin group's model permissions), keys only by variable
name, and "test connection" making one real call to the loopback server."""

from __future__ import annotations

import asyncio
import html
import os
import socket
import uuid

import pytest
import redis
from django.test import Client
from django.urls import reverse

from evaluation.judges.models import Judge, Panel, PanelMember
from evaluation.judging import circuit
from loopback import LoopbackOpenAI
from tests.factories import PanelFactory

pytestmark = pytest.mark.django_db

KEY_VAR = "JUDGE_KEY_H4_TEST"


def judge_on(server, **fields) -> Judge:
    return Judge.objects.create(
        **{"name": "Loop", "base_url": server.base_url, "model": "gpt-4o-mini", **fields}
    )


def form_data(**overrides) -> dict:
    data = {
        "name": "GPT", "kind": "llm", "base_url": "https://api.example.com/v1",
        "model": "gpt-4o-mini", "api_key_env": "JUDGE_KEY_OPENAI", "temperature": "0",
        "max_tokens": "512", "seed": "", "timeout": "30", "rpm_limit": "", "tpm_limit": "",
        "prompt_price": "0.15", "completion_price": "0.60", "prompt_version": "verdict-v1",
    }  # fmt: skip
    return {**data, **overrides}


def test_judge_pages_by_role(client, owner, collaborator, reviewer, outsider, loopback_openai):
    judge = judge_on(loopback_openai)
    urls = [
        reverse("judge-list"), reverse("judge-create"), reverse("judge-edit", args=[judge.pk]),
        reverse("panel-list"), reverse("panel-create"),
    ]  # fmt: skip
    for url in urls:
        assert client.get(url).status_code == 302, url  # to the login page
        for user in (collaborator, reviewer, outsider):
            client.force_login(user)
            assert client.get(url).status_code == 403, (url, user.username)
        client.force_login(owner)
        assert client.get(url).status_code == 200, url
        client.logout()
    client.force_login(reviewer)
    assert client.post(reverse("judge-test", args=[judge.pk])).status_code == 403
    assert client.post(reverse("judge-create"), form_data()).status_code == 403
    assert loopback_openai.call_count == 0
    assert not Judge.objects.filter(name="GPT").exists()


def test_create_stores_the_variable_name_never_a_key(client, owner, monkeypatch):
    client.force_login(owner)
    page = client.get(reverse("judge-create")).content.decode()
    assert 'type="password"' not in page and 'api_key"' not in page
    pasted = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
    response = client.post(reverse("judge-create"), form_data(api_key_env=pasted))
    assert response.status_code == 400
    assert "never the key itself" in response.content.decode()
    assert not Judge.objects.exists()

    monkeypatch.setenv(KEY_VAR, "secret-value")
    response = client.post(reverse("judge-create"), form_data(api_key_env=KEY_VAR))
    judge = Judge.objects.get(name="GPT")
    assert response.status_code == 302 and response.url == reverse("judge-edit", args=[judge.pk])
    assert judge.api_key_env == KEY_VAR and str(judge.prompt_price) == "0.1500"
    page = client.get(reverse("judge-edit", args=[judge.pk])).content.decode()
    assert "secret-value" not in page
    assert f"<code>{KEY_VAR}</code> is <strong>set</strong>" in page
    listing = client.get(reverse("judge-list")).content.decode()
    assert "set here" in listing and "secret-value" not in listing
    monkeypatch.delenv(KEY_VAR)
    page = client.get(reverse("judge-edit", args=[judge.pk])).content.decode()
    assert "<strong>not set</strong>" in page


def test_edit_validates_by_field_and_changes_nothing_on_error(client, owner):
    judge = Judge.objects.create(name="GPT", base_url="https://api.example.com/v1", model="m")
    client.force_login(owner)
    url = reverse("judge-edit", args=[judge.pk])
    response = client.post(url, form_data(model="", temperature="3", prompt_price="-1"))
    assert response.status_code == 400
    form = response.context["form"]
    assert set(form.errors) == {"model", "temperature", "prompt_price"}
    judge.refresh_from_db()
    assert judge.model == "m"
    assert client.post(url, form_data(model="gpt-4.1", seed="7")).status_code == 302
    judge.refresh_from_db()
    assert (judge.model, judge.seed) == ("gpt-4.1", 7)


def test_judge_list_query_count_is_flat(client, owner, django_assert_max_num_queries):
    client.force_login(owner)

    def make(n: int, start: int) -> None:
        for i in range(start, start + n):
            Judge.objects.create(name=f"J{i}", base_url="http://x/v1", model="m")

    make(2, 0)
    with django_assert_max_num_queries(10) as few:
        client.get(reverse("judge-list"))
    make(30, 2)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get(reverse("judge-list")).content.decode().count("data-judge=") == 32


# --- Test connection -----------------------------------------------------------------------


def press_test_connection(client, owner, judge: Judge) -> tuple[str, str]:
    """POST the button as htmx does; the partial alone comes back."""
    client.force_login(owner)
    response = client.post(reverse("judge-test", args=[judge.pk]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" not in body and 'id="connection-result"' in body
    return body.split('data-connection="', 1)[1].split('"', 1)[0], body


def test_connection_success_shows_the_latency_never_the_reply(client, owner, loopback_openai):
    loopback_openai.latency = 0.05
    loopback_openai.responder = lambda request: {"reply": "ok from loopback"}
    kind, body = press_test_connection(client, owner, judge_on(loopback_openai))
    assert kind == "ok"
    assert " ms" in body and "structured outputs" in body and "was a JSON object" in body
    assert "ok from loopback" not in body  # the endpoint's bytes never reach the page
    assert loopback_openai.call_count == 1
    call = loopback_openai.calls[0]
    assert call.request.max_tokens <= 64 and call.request.response_format_type == "json_schema"


def test_connection_with_a_key_from_the_environment(client, owner, monkeypatch):
    monkeypatch.setenv(KEY_VAR, "right-key")
    with LoopbackOpenAI(api_key="right-key") as server:
        judge = judge_on(server, api_key_env=KEY_VAR)
        assert press_test_connection(client, owner, judge)[0] == "ok"
        monkeypatch.setenv(KEY_VAR, "wrong-key")
        kind, body = press_test_connection(client, owner, judge)
        assert kind == "unauthorized" and "HTTP 401" in body
        monkeypatch.delenv(KEY_VAR)
        kind, body = press_test_connection(client, owner, judge)
        assert kind == "missing_key" and "no call was made" in body
        assert server.call_count == 2


def test_connection_failures_are_named(client, owner):
    with LoopbackOpenAI(strict_models=True, models=("known-model",)) as server:
        kind, body = press_test_connection(client, owner, judge_on(server, model="unknown-model"))
        assert kind == "model_not_found" and "unknown-model" in body
        root = server.base_url.removesuffix("/v1")
        kind, _ = press_test_connection(
            client, owner, judge_on(server, name="No v1", base_url=root)
        )
        assert kind == "not_found"
    with LoopbackOpenAI(latency=3.0) as slow:
        judge = judge_on(slow, name="Slow", timeout=0.3)
        kind, body = press_test_connection(client, owner, judge)
        assert kind == "timeout" and "No answer within the timeout" in body
    # A port held by a socket that never listens: refused at once, and no other process can
    # take it while the test runs.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        judge = Judge.objects.create(name="Down", base_url=f"http://127.0.0.1:{port}/v1", model="m")
        assert press_test_connection(client, owner, judge)[0] == "unreachable"


def test_connection_needs_the_csrf_token(owner, loopback_openai):
    judge = judge_on(loopback_openai)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    url = reverse("judge-test", args=[judge.pk])
    assert browser.post(url, HTTP_HX_REQUEST="true").status_code == 403
    page = browser.get(reverse("judge-edit", args=[judge.pk]))
    token = page.context["csrf_token"]
    assert 'hx-post="' + url in page.content.decode()
    response = browser.post(url, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=str(token))
    assert response.status_code == 200 and 'data-connection="ok"' in response.content.decode()
    assert loopback_openai.call_count == 1


def test_no_llm_judge_has_no_connection_to_test(client, owner):
    judge = Judge.objects.create(name="Offline", kind=Judge.Kind.NO_LLM)
    kind, body = press_test_connection(client, owner, judge)
    assert kind == "error" and "calls no endpoint" in body


# --- Panels --------------------------------------------------------------------------------


def panel_data(members: list[tuple], **overrides) -> dict:
    data = {
        "name": "Three models", "description": "", "method": "majority", "threshold": "0.5",
        "members-TOTAL_FORMS": str(len(members)), "members-INITIAL_FORMS": "0",
        "members-MIN_NUM_FORMS": "0", "members-MAX_NUM_FORMS": "20",
    }  # fmt: skip
    for i, (judge, samples, temps) in enumerate(members):
        data |= {
            f"members-{i}-judge": str(judge.pk) if judge else "",
            f"members-{i}-samples": str(samples),
            f"members-{i}-temperatures": temps,
        }
    return {**data, **overrides}


@pytest.fixture
def judges():
    return [Judge.objects.create(name=f"J{i}", base_url="http://x/v1", model="m") for i in (1, 2)]


def test_create_and_edit_a_panel(client, owner, judges):
    client.force_login(owner)
    data = panel_data([(judges[0], 3, "0, 0.5, 1"), (judges[1], 1, ""), (None, "", "")])
    response = client.post(reverse("panel-create"), {**data, "graded": "on"})
    panel = Panel.objects.get(name="Three models")
    assert response.status_code == 302 and response.url == reverse("panel-edit", args=[panel.pk])
    assert panel.graded
    members = {m.judge.name: (m.samples, m.temperatures) for m in panel.members.all()}
    assert members == {"J1": (3, [0.0, 0.5, 1.0]), "J2": (1, [])}
    page = client.get(reverse("panel-edit", args=[panel.pk])).content.decode()
    assert 'value="0, 0.5, 1"' in page

    # Edit: J1 goes, J2 is sampled twice, the method changes, the graded view is turned off.
    data = panel_data([(judges[1], 2, "0.2")], method="mean_threshold", threshold="0.7")
    assert client.post(reverse("panel-edit", args=[panel.pk]), data).status_code == 302
    panel.refresh_from_db()
    assert (panel.method, panel.threshold, panel.graded) == ("mean_threshold", 0.7, False)
    assert [(m.judge.name, m.samples, m.temperatures) for m in panel.members.all()] == [
        ("J2", 2, [0.2])
    ]


@pytest.mark.parametrize(
    ("members", "overrides", "field", "message"),
    [
        ([(1, 2, "0, 0.5, 1")], {}, "temperatures", "3 temperatures for 2 samples"),
        ([(1, 1, "0, hot")], {}, "temperatures", "'hot' is not a number"),
        ([(1, 1, "5")], {}, "temperatures", "outside 0 to 2"),
        ([(1, 0, "")], {}, "samples", "greater than or equal to 1"),
        ([(1, 1, ""), (1, 2, "")], {}, "judge", "already in the panel"),
        ([], {}, None, "at least one judge"),
        ([(1, 1, "")], {"threshold": "1.5"}, "threshold", "Between 0 and 1"),
        ([(1, 1, "")], {"name": ""}, "name", "required"),
    ],
)
def test_panel_errors_name_the_field_and_change_nothing(
    client, owner, judges, members, overrides, field, message
):
    client.force_login(owner)
    rows = [(judges[0] if j == 1 else None, s, t) for j, s, t in members]
    response = client.post(reverse("panel-create"), panel_data(rows, **overrides))
    assert response.status_code == 400
    body = html.unescape(response.content.decode())
    assert message in body
    if field in ("temperatures", "samples", "judge"):
        assert f'data-field="members-{len(rows) - 1}-{field}"' in body or (
            f'data-field="members-0-{field}"' in body
        )
    elif field:
        assert field in response.context["form"].errors
    assert not Panel.objects.exists() and not PanelMember.objects.exists()


def test_a_running_runs_panel_can_be_edited_and_the_run_keeps_its_snapshot(
    client, owner, judges, dataset
):
    from evaluation.runs import snapshot
    from evaluation.runs.models import Run

    panel = PanelFactory(name="Busy", judges=[judges[0]])
    run = Run.objects.create(
        dataset=dataset, panel=panel, status=Run.Status.RUNNING, snapshot=snapshot.take(panel)
    )
    client.force_login(owner)
    response = client.post(
        reverse("panel-edit", args=[panel.pk]), panel_data([(judges[1], 1, "")], name="Busy")
    )
    assert response.status_code == 302
    assert [m.judge_id for m in panel.members.all()] == [judges[1].pk]
    run.refresh_from_db()
    assert [m.judge_id for m in snapshot.of(run).members] == [judges[0].pk]


def test_panel_list_query_count_is_flat(client, owner, django_assert_max_num_queries):
    client.force_login(owner)

    def make(n: int, start: int) -> None:
        for i in range(start, start + n):
            judges = [Judge.objects.get_or_create(name=f"J{j}", model="m")[0] for j in range(3)]
            PanelFactory(
                name=f"P{i}", judges=[(judge, {"samples": j + 1}) for j, judge in enumerate(judges)]
            )

    make(2, 0)
    with django_assert_max_num_queries(12) as few:
        client.get(reverse("panel-list"))
    make(20, 2)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get(reverse("panel-list")).content.decode().count("data-panel=") == 22


# --- Reachability ---------------------------------------------------------------------------


def test_a_judge_whose_circuit_is_open_shows_as_unreachable(client, owner, settings):
    """The workers' circuit breaker (evaluation/judging/circuit.py) keeps its state in the
    broker's Redis; the judge pages read it there."""
    url = "redis://127.0.0.1:6379/0"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.exceptions.ConnectionError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"Redis at {url} is unreachable: {exc}")
    settings.CELERY_BROKER_URL = url
    host = f"http://down-{uuid.uuid4().hex[:8]}.example/v1"
    down = Judge.objects.create(name="Down", base_url=host, model="m")
    up = Judge.objects.create(name="Up", base_url=host.replace("down", "up"), model="m")
    key = circuit.circuit_key(down.pk, down.base_url)
    store, config = circuit.RedisStore(url), circuit.Config(failures=1)
    asyncio.run(store.fail(key, now=1e9, error="Connection refused", config=config))
    client.force_login(owner)
    try:
        listing = client.get(reverse("judge-list")).content.decode()
        row = listing.split(f'data-judge="{down.pk}"', 1)[1].split("</tr>", 1)[0]
        assert "unreachable since" in row and "Connection refused" in row
        other = listing.split(f'data-judge="{up.pk}"', 1)[1].split("</tr>", 1)[0]
        assert "unreachable" not in other
        page = client.get(reverse("judge-edit", args=[down.pk])).content.decode()
        assert "<strong>Unreachable</strong> since 2001-09-09" in page
        assert "Connection refused" in page
        assert "Unreachable" not in client.get(reverse("judge-edit", args=[up.pk])).content.decode()
    finally:
        asyncio.run(store.close(key, sent=None))
    assert "unreachable" not in client.get(reverse("judge-list")).content.decode()
