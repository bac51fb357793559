"""Where a judge may call (issue 38, point 4): the address rule alert webhooks follow
(config/egress.py). Link-local and cloud metadata addresses never, even listed or with the
switch; loopback and private ones only when JUDGE_ALLOWED_HOSTS lists the host or
JUDGE_ALLOW_PRIVATE_NETWORK is on; no credentials in the URL; no redirect followed. Checked
when a judge is saved (page and API: 400 naming base_url), before a run starts, and at every
call, so that a judge stored without the check (the ORM, an import) calls nothing. Real
servers on loopback, the real openai client."""

from __future__ import annotations

import asyncio
import socket

import pytest
from django.urls import reverse

from evaluation.judges.models import Judge
from evaluation.judging import client as judge_client
from evaluation.judging import engine
from evaluation.judging.ratelimit import Unlimited
from evaluation.runs import lifecycle, scope
from evaluation.runs import services as runs
from evaluation.runs.models import Run, Verdict
from evaluation.runs.preflight import RunRefused
from loopback import LoopbackOpenAI
from tests.evaluation.runs.workload import build_workload, scripted_judge
from tests.factories import PanelFactory, loopback_judges
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.django_db

REFUSED = ["http://169.254.169.254/", "http://[::ffff:a9fe:a9fe]/", "http://10.1.2.3/"]
METADATA = [
    "http://169.254.169.254/latest/meta-data/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[fd00:ec2::254]/",
]
MESSAGES = [{"role": "user", "content": "Does the answer state the revenue?"}]
VERDICT = {"verdict": "pass", "failure_kind": None, "rationale": "States it."}


@pytest.fixture
def guarded(settings):
    """The defaults: no allow list, private networks off (the tests' conftest turns it on)."""
    settings.JUDGE_ALLOWED_HOSTS = []
    settings.JUDGE_ALLOW_PRIVATE_NETWORK = False


def form_data(**overrides) -> dict:
    data = {
        "name": "GPT", "kind": "llm", "base_url": "https://93.184.215.14/v1", "model": "m",
        "api_key_env": "", "temperature": "0", "max_tokens": "512", "seed": "", "timeout": "30",
        "rpm_limit": "", "tpm_limit": "", "prompt_price": "", "completion_price": "",
        "prompt_version": "verdict-v1",
    }  # fmt: skip
    return {**data, **overrides}


def page_refuses(client, url: str) -> str:
    response = client.post(reverse("judge-create"), form_data(base_url=url))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors) == ["base_url"], errors
    assert not Judge.objects.exists()
    return errors["base_url"][0]


def api_refuses(api, url: str) -> str:
    body = {"name": "GPT", "base_url": url, "model": "m"}
    response = api.post("/api/judges/", body, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["base_url"], response.json()
    assert not Judge.objects.exists()
    return response.json()["base_url"][0]


def call(endpoint: judge_client.Endpoint) -> judge_client.Completion:
    return asyncio.run(
        judge_client.complete_json(endpoint, MESSAGES, schema_name="verdict", schema={})
    )


@pytest.fixture
def names(monkeypatch):
    """Host names of our own, as a DNS server would answer them: `names[name] = address`."""
    table: dict[str, str] = {}
    real = socket.getaddrinfo

    def resolver(host, port, *args, **kwargs):
        return real(table.get(host, host), port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    return table


# --- on save -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "words"),
    list(
        zip(REFUSED, ["metadata address", "metadata address", "private or reserved"], strict=True)
    ),
)
def test_the_page_and_the_api_refuse_them_naming_base_url(
    client, owner, owner_api, guarded, url, words
):
    client.force_login(owner)
    for said in (page_refuses(client, url), api_refuses(owner_api, url)):
        assert words in said


def test_the_message_says_why(client, owner, guarded):
    client.force_login(owner)
    said = page_refuses(client, "http://169.254.169.254/")
    assert "link-local or cloud metadata address (169.254.169.254)" in said
    assert "even when the host is listed in JUDGE_ALLOWED_HOSTS" in said
    said = page_refuses(client, "http://10.1.2.3/")
    assert "private or reserved address (10.1.2.3)" in said
    assert "JUDGE_ALLOWED_HOSTS or sets JUDGE_ALLOW_PRIVATE_NETWORK=1" in said


def test_loopback_only_with_the_switch_or_the_list(client, owner, owner_api, settings, guarded):
    client.force_login(owner)
    url = "http://127.0.0.1:8001/v1"
    page_refuses(client, url)
    api_refuses(owner_api, url)
    settings.JUDGE_ALLOW_PRIVATE_NETWORK = True
    assert client.post(reverse("judge-create"), form_data(base_url=url)).status_code == 302
    settings.JUDGE_ALLOW_PRIVATE_NETWORK = False
    settings.JUDGE_ALLOWED_HOSTS = ["localhost"]
    body = {"name": "Ollama", "base_url": "http://localhost:11434/v1", "model": "m"}
    assert owner_api.post("/api/judges/", body, format="json").status_code == 201


@pytest.mark.parametrize("url", METADATA)
def test_metadata_even_with_the_switch_and_the_list(client, owner, owner_api, settings, url):
    settings.JUDGE_ALLOW_PRIVATE_NETWORK = True
    settings.JUDGE_ALLOWED_HOSTS = [
        "169.254.169.254", "::ffff:169.254.169.254", "::ffff:a9fe:a9fe", "64:ff9b::a9fe:a9fe",
        "fd00:ec2::254",
    ]  # fmt: skip
    client.force_login(owner)
    assert "metadata" in page_refuses(client, url)
    assert "metadata" in api_refuses(owner_api, url)


def test_a_name_pointing_at_metadata_is_refused(client, owner, settings, names):
    settings.JUDGE_ALLOW_PRIVATE_NETWORK = True
    settings.JUDGE_ALLOWED_HOSTS = ["models.corp.test"]
    names["models.corp.test"] = "169.254.169.254"
    client.force_login(owner)
    assert "metadata" in page_refuses(client, "http://models.corp.test/v1")


def test_a_name_that_does_not_resolve_here_is_saved(client, owner, guarded):
    """It may resolve only where the workers run; every call checks it again."""
    client.force_login(owner)
    response = client.post(reverse("judge-create"), form_data(base_url="http://vllm.invalid/v1"))
    assert response.status_code == 302


@pytest.mark.parametrize(
    "url", ["http://user:sk-secret@93.184.215.14/v1", "https://sk-secret@api.example.com/v1"]
)
def test_credentials_in_the_url_are_refused(client, owner, owner_api, url):
    client.force_login(owner)
    for said in (page_refuses(client, url), api_refuses(owner_api, url)):
        assert "without a user name or password" in said and "API key variable" in said
        assert "sk-secret" not in said


# --- when calling --------------------------------------------------------------------------


@pytest.mark.parametrize("url", REFUSED)
def test_a_judge_stored_without_the_check_calls_nothing(client, owner, guarded, url):
    judge = Judge.objects.create(name="Stored", base_url=url, model="m")  # the ORM: no check
    endpoint = judge_client.Endpoint(judge.base_url, judge.model, timeout=2, max_retries=0)
    with pytest.raises(judge_client.HostRefused, match="No call made") as refused:
        call(endpoint)
    assert refused.value.kind == "host_not_allowed"
    assert "169.254" not in str(refused.value) and "10.1.2.3" not in str(refused.value)
    # As a run records it: an error verdict of that kind, no attempt made.
    [result] = judge_client.run_sync(
        engine.judge_all([engine.Call(1, 0, "k", MESSAGES, endpoint)], concurrency=1,
                         limiter=Unlimited(), policy=judge_client.RetryPolicy(attempts=2))
    )  # fmt: skip
    assert (result.outcome, result.error_kind, result.attempts) == ("error", "host_not_allowed", 0)
    client.force_login(owner)
    page = client.post(reverse("judge-test", args=[judge.pk]), HTTP_HX_REQUEST="true")
    assert 'data-connection="host_not_allowed"' in page.content.decode()


def test_loopback_is_called_only_with_the_switch(settings, guarded):
    with LoopbackOpenAI(responder=lambda request: VERDICT) as server:
        endpoint = judge_client.Endpoint(server.base_url, "m", timeout=5, max_retries=0)
        with pytest.raises(judge_client.HostRefused, match="JUDGE_ALLOW_PRIVATE_NETWORK"):
            call(endpoint)
        assert server.call_count == 0
        settings.JUDGE_ALLOW_PRIVATE_NETWORK = True
        assert call(endpoint).data == VERDICT
        assert server.call_count == 1


def test_a_name_is_resolved_when_calling(settings, guarded, names):
    """DNS that points a harmless-looking name at the metadata address or at loopback: the
    call is refused before any connection (the server on loopback gets nothing)."""
    settings.JUDGE_ALLOWED_HOSTS = ["models.example.com", "metadata.example.com"]
    names["metadata.example.com"] = "169.254.169.254"
    with pytest.raises(judge_client.HostRefused, match="metadata"):
        call(judge_client.Endpoint("http://metadata.example.com/v1", "m", max_retries=0))
    settings.JUDGE_ALLOWED_HOSTS = []
    with LoopbackOpenAI(responder=lambda request: VERDICT) as server:
        names["models.example.com"] = "127.0.0.1"
        url = f"http://models.example.com:{server.port}/v1"
        with pytest.raises(judge_client.HostRefused, match="private address"):
            call(judge_client.Endpoint(url, "m", timeout=5, max_retries=0))
        assert server.call_count == 0


def test_a_redirect_is_not_followed(client, owner):
    """An endpoint answering 302 towards another server: the call fails with kind
    "redirect" and the other server never hears of it."""
    with (
        LoopbackOpenAI(responder=lambda request: VERDICT) as elsewhere,
        WebhookReceiver(status=302, location=f"{elsewhere.base_url}/chat/completions") as hop,
    ):
        endpoint = judge_client.Endpoint(f"http://127.0.0.1:{hop.port}/v1", "m", max_retries=0)
        with pytest.raises(judge_client.JudgeRejected, match="redirect") as rejected:
            call(endpoint)
        assert rejected.value.kind == "redirect"
        [result] = judge_client.run_sync(
            engine.judge_all([engine.Call(1, 0, "k", MESSAGES, endpoint)], concurrency=1,
                             limiter=Unlimited(), policy=judge_client.RetryPolicy(attempts=2))
        )  # fmt: skip
        assert (result.outcome, result.error_kind) == ("error", "redirect")
        judge = Judge.objects.create(name="Hop", base_url=endpoint.base_url, model="m")
        client.force_login(owner)
        page = client.post(reverse("judge-test", args=[judge.pk]), HTTP_HX_REQUEST="true")
        assert 'data-connection="redirect"' in page.content.decode()
        assert "(HTTP 302)" in page.content.decode()
        assert len(hop.received) == 3
        assert elsewhere.call_count == 0


def test_a_run_refuses_the_judge_before_starting(dataset, guarded):
    build_workload(dataset, queries=1, answers_per_query=1, criteria=1)
    judge = Judge.objects.create(name="Metadata", base_url="http://169.254.169.254/v1", model="m")
    run = runs.run_create(dataset=dataset, panel=PanelFactory(judges=[judge]))
    with pytest.raises(RunRefused) as refused:
        runs.run_start(run=run)
    assert refused.value.problems == [
        "Judge “Metadata”: its host is at a link-local or cloud metadata address, which judges "
        "never call."
    ]


def test_a_run_whose_workers_may_not_call_the_judge_ends_with_that_error(
    dataset, settings, loopback_openai
):
    """Started where the switch is on, run where it is off (a worker the operator did not
    allow it on): every vote is an error of kind host_not_allowed, and nothing is called."""
    loopback_openai.responder = scripted_judge
    build_workload(dataset, queries=1, answers_per_query=2, criteria=2)
    panel = PanelFactory(judges=loopback_judges(loopback_openai, 1))
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel))
    settings.JUDGE_ALLOW_PRIVATE_NETWORK = False
    for answer in scope.run_answers(run):
        lifecycle.run_task(
            run_id=run.pk, answer_id=answer.pk, judge_id=panel.members.get().judge_id,
            worker="test",
        )  # fmt: skip
    run.refresh_from_db()
    assert run.status == Run.Status.DONE_WITH_ERRORS and "host_not_allowed" in run.reason
    assert set(Verdict.objects.filter(run=run).values_list("outcome", "error_kind")) == {
        ("error", "host_not_allowed")
    }
    assert Verdict.objects.filter(run=run).count() == 4
    assert loopback_openai.call_count == 0
