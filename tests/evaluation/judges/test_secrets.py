"""No secret of the server leaves it through a judge (issue 13, point 1).

The probe found: a judge's `api_key_env` could name SECRET_KEY or DATABASE_URL, and "Test
connection" sent that value as a bearer token to any URL; the test echoed the target's reply;
the judge list told which variables exist. Keys now come only from JUDGE_KEY_* variables (or
settings.JUDGE_KEY_VARIABLES), the test shows a status and a short classified error, and
settings.JUDGE_ALLOWED_HOSTS can restrict where judges call.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.judges.models import Judge
from evaluation.judging import client as judge_client
from evaluation.judging import keys
from loopback import Fault, LoopbackOpenAI

pytestmark = pytest.mark.django_db

CANARY = "CANARY-internal-page-7f3a"


def judge_form(**overrides) -> dict:
    data = {
        "name": "GPT", "kind": "llm", "base_url": "https://api.example.com/v1",
        "model": "gpt-4o-mini", "api_key_env": "JUDGE_KEY_OPENAI", "temperature": "0",
        "max_tokens": "512", "seed": "", "timeout": "30", "rpm_limit": "", "tpm_limit": "",
        "prompt_price": "", "completion_price": "", "prompt_version": "verdict-v1",
    }  # fmt: skip
    return {**data, **overrides}


def press_test(client, judge: Judge) -> str:
    response = client.post(reverse("judge-test", args=[judge.pk]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "PATH", "HOME", "MY_VAR"])
def test_the_page_form_refuses_variables_that_are_not_judge_keys(client, owner, name):
    client.force_login(owner)
    response = client.post(reverse("judge-create"), judge_form(api_key_env=name))
    assert response.status_code == 400
    assert "Judge keys are read only from variables whose name starts with JUDGE_KEY_" in (
        response.content.decode()
    )
    assert not Judge.objects.exists()


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "PATH"])
def test_the_api_refuses_them_too(owner_api, name):
    body = {
        "name": "GPT", "kind": "llm", "base_url": "https://api.example.com/v1",
        "model": "gpt-4o-mini", "api_key_env": name,
    }  # fmt: skip
    response = owner_api.post("/api/judges/", body, format="json")
    assert response.status_code == 400
    assert "JUDGE_KEY_" in response.json()["api_key_env"][0]
    judge = Judge.objects.create(name="Ok", base_url="https://api.example.com/v1", model="m")
    patched = owner_api.patch(f"/api/judges/{judge.pk}/", {"api_key_env": name}, format="json")
    assert patched.status_code == 400
    judge.refresh_from_db()
    assert judge.api_key_env == ""


def test_an_allow_list_in_settings_admits_named_variables(client, owner, settings):
    settings.JUDGE_KEY_VARIABLES = ["OPENAI_API_KEY"]
    client.force_login(owner)
    response = client.post(reverse("judge-create"), judge_form(api_key_env="OPENAI_API_KEY"))
    assert response.status_code == 302
    # The project's own secrets stay refused even when someone lists them.
    settings.JUDGE_KEY_VARIABLES = ["SECRET_KEY"]
    assert keys.api_key_env_problem("SECRET_KEY")
    assert keys.read_key("SECRET_KEY") == ""


def test_a_judge_saved_before_the_rule_never_sends_the_secret(client, owner, monkeypatch):
    # Stored directly (an old row, or the Django admin): test connection and runs alike
    # refuse to read the variable, and no request reaches the listener.
    monkeypatch.setenv("SECRET_KEY", "the-real-secret")
    with LoopbackOpenAI(api_key="the-real-secret") as listener:
        judge = Judge.objects.create(
            name="Thief", base_url=listener.base_url, model="m", api_key_env="SECRET_KEY"
        )
        client.force_login(owner)
        page = press_test(client, judge)
        assert 'data-connection="key_not_allowed"' in page
        assert listener.call_count == 0
        endpoint = judge_client.Endpoint(listener.base_url, "m", api_key_env="SECRET_KEY")
        assert endpoint.api_key() == ""
        with pytest.raises(judge_client.JudgeRejected, match="may not hold a judge key"):
            judge_client.run_sync(
                judge_client.complete_json(
                    endpoint, [{"role": "user", "content": "x"}], schema_name="s", schema={}
                )
            )
        assert listener.call_count == 0


def test_test_connection_never_echoes_the_reply(client, owner):
    with LoopbackOpenAI(responder=lambda request: {"reply": CANARY}) as server:
        judge = Judge.objects.create(name="Loop", base_url=server.base_url, model="m")
        client.force_login(owner)
        page = press_test(client, judge)
        assert 'data-connection="ok"' in page and " ms" in page
        assert CANARY not in page
        assert server.call_count == 1


def test_test_connection_never_echoes_an_error_body(client, owner):
    fault = Fault.server_error(status=500, message=CANARY)
    with LoopbackOpenAI(responder=lambda request: fault) as server:
        judge = Judge.objects.create(name="Loop", base_url=server.base_url, model="m")
        client.force_login(owner)
        page = press_test(client, judge)
        assert 'data-connection="server_error"' in page and "HTTP 500" in page
        assert CANARY not in page


def test_the_judge_list_tells_nothing_about_other_variables(client, owner, monkeypatch):
    monkeypatch.setenv("SOME_OTHER_SECRET", "x")
    Judge.objects.create(name="Old", base_url="https://a.example/v1", model="m",
                         api_key_env="SOME_OTHER_SECRET")  # fmt: skip
    client.force_login(owner)
    listing = client.get(reverse("judge-list")).content.decode()
    assert "not set here" in listing and '<span class="badge ok">set here' not in listing


def test_allowed_hosts_restrict_where_judges_call(client, owner, settings):
    settings.JUDGE_ALLOWED_HOSTS = ["api.openai.com", ".openai.azure.com"]
    client.force_login(owner)
    refused = client.post(reverse("judge-create"), judge_form(base_url="http://127.0.0.1:5432/v1"))
    assert refused.status_code == 400
    assert "not in JUDGE_ALLOWED_HOSTS" in refused.content.decode()
    ok = client.post(reverse("judge-create"), judge_form(base_url="https://x.openai.azure.com/v1"))
    assert ok.status_code == 302
    with LoopbackOpenAI() as server:  # a judge saved before the setting
        judge = Judge.objects.create(name="Inside", base_url=server.base_url, model="m")
        assert 'data-connection="host_not_allowed"' in press_test(client, judge)
        assert server.call_count == 0
