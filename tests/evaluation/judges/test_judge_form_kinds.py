"""Issue 40: the judge page shows each kind what applies to it. Its key placeholder is a
name saving accepts; a no-LLM judge's page has no LLM field and no Connection card; an LLM
judge's page names its base prompt version and, per dataset that tunes it, the tuned version
that dataset's runs and Examples page use."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evaluation.judges import tuning
from evaluation.judges.models import Judge
from tests.evaluation.judges.test_secrets import judge_form
from tests.factories import DatasetFactory, offline_judge

pytestmark = pytest.mark.django_db


def llm_fieldset(page: str) -> str:
    return re.search(r"<fieldset class=\"llm-fields\"[^>]*>", page).group(0)


def test_the_key_placeholder_is_a_name_that_saving_accepts(client, owner):
    client.force_login(owner)
    page = client.get(reverse("judge-create")).content.decode()
    placeholder = re.search(r'name="api_key_env"[^>]*placeholder="([^"]+)"', page)
    placeholder = placeholder or re.search(r'placeholder="([^"]+)"[^>]*name="api_key_env"', page)
    name = placeholder.group(1)
    assert name == "JUDGE_KEY_OPENAI" and "OPENAI_API_KEY" not in page
    response = client.post(reverse("judge-create"), judge_form(api_key_env=name))
    assert response.status_code == 302
    assert Judge.objects.get().api_key_env == name


def test_the_placeholder_follows_the_sites_prefix(client, owner, settings):
    settings.JUDGE_KEY_PREFIX = "MODEL_KEY_"
    client.force_login(owner)
    page = client.get(reverse("judge-create")).content.decode()
    assert 'placeholder="MODEL_KEY_OPENAI"' in page


def test_a_no_llm_judges_page_shows_no_llm_fields_and_no_connection(client, owner):
    judge = offline_judge("Checks")
    client.force_login(owner)
    page = client.get(reverse("judge-edit", args=[judge.pk])).content.decode()
    assert "hidden" in llm_fieldset(page)
    assert "Connection" not in page and "Test connection" not in page
    assert "data-tuning" not in page and "Prices are per million tokens" not in page
    assert "calls no endpoint, needs no key" in page
    # Saving it from that page keeps it what it is.
    response = client.post(reverse("judge-edit", args=[judge.pk]), {
        **judge_form(name="Checks renamed", kind="no_llm", base_url="", model="", api_key_env=""),
    })  # fmt: skip
    assert response.status_code == 302
    judge.refresh_from_db()
    assert (judge.name, judge.kind) == ("Checks renamed", "no_llm")


def test_an_llm_judges_page_shows_its_fields_and_connection(client, owner):
    client.force_login(owner)
    client.post(reverse("judge-create"), judge_form())
    judge = Judge.objects.get()
    page = client.get(reverse("judge-edit", args=[judge.pk])).content.decode()
    assert "hidden" not in llm_fieldset(page)
    assert "Test connection" in page and "Base prompt version" in page


def test_an_error_in_an_llm_field_is_shown_whatever_the_kind(client, owner):
    client.force_login(owner)
    response = client.post(
        reverse("judge-create"), judge_form(kind="no_llm", api_key_env="SECRET_KEY")
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "hidden" not in llm_fieldset(page) and "JUDGE_KEY_" in page


def test_the_judge_page_names_each_tuned_version_the_examples_page_uses(client, owner, dataset):
    client.force_login(owner)
    client.post(reverse("judge-create"), judge_form())
    judge = Judge.objects.get()
    tuning.tuning_save(judge=judge, dataset=dataset, by=owner, instructions="Be strict.")
    hidden = DatasetFactory(name="Not yours")
    tuning.tuning_save(judge=judge, dataset=hidden, by=None, instructions="Be lenient.")
    version = tuning.current(judge, dataset.pk).version
    assert version.startswith("verdict-v1+tuned-")
    page = client.get(reverse("judge-edit", args=[judge.pk])).content.decode()
    assert "Base prompt version: <code>verdict-v1</code>" in page
    assert f"{dataset.name}</a>: <code>{version}</code>" in page
    assert "Not yours" not in page
    examples = reverse("judge-examples", args=[dataset.pk, judge.pk])
    assert f"<code>{version}</code>" in client.get(examples).content.decode()
