"""DELETE /api/datasets/{id}/ answers 202 at once and the dataset is gone for everyone, on
pages and in the API, while a worker deletes its rows (tests/evaluation/data/test_dataset_purge.py).
Only its admins may delete it; the admin site deletes the same way."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Dataset, Query
from evaluation.runs.models import Run
from tests.evaluation.data.imports import META, checklist_files, write, zipped
from tests.factories import PanelFactory, UserFactory

pytestmark = pytest.mark.django_db


def _delete(api, dataset, capture):
    with capture() as queued:
        response = api.delete(f"/api/datasets/{dataset.pk}/")
    return response, queued


def test_delete_answers_202_and_queues_one_deletion(
    owner_api, dataset, query, django_capture_on_commit_callbacks, django_assert_max_num_queries
):
    with django_assert_max_num_queries(8):
        response, queued = _delete(owner_api, dataset, django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["id"] == dataset.pk and body["name"] == dataset.name and body["deleting_since"]
    assert len(queued) == 1
    # Nothing is deleted in the request: the worker does it.
    assert Dataset.objects.filter(pk=dataset.pk).exists() and Query.objects.exists()

    again, queued = _delete(owner_api, dataset, django_capture_on_commit_callbacks)
    assert again.status_code == 202 and again.json()["deleting_since"] == body["deleting_since"]
    assert queued == []  # already marked: no second task (the sweep heals a stalled one)


def test_a_broker_down_at_delete_still_hides_the_dataset_and_the_sweep_deletes_it(
    owner_api, dataset, query, monkeypatch, django_capture_on_commit_callbacks, eager_refresh
):
    """The mark commits with the request; the message cannot be sent. The request still
    answers 202 and the dataset is gone for its users; the workers' sweep queues the
    deletion once the mark has made no progress for RUNS_LEASE_TIMEOUT."""
    from datetime import timedelta

    from celery.canvas import Signature
    from django.utils import timezone

    from evaluation.datasets import purge

    def down(self, *args, **kwargs):
        raise ConnectionError("broker down")

    with monkeypatch.context() as patched:
        patched.setattr(Signature, "apply_async", down)
        with django_capture_on_commit_callbacks(execute=True) as sent:
            response = owner_api.delete(f"/api/datasets/{dataset.pk}/")
    assert response.status_code == 202 and len(sent) == 1  # the send was tried, and failed
    assert Dataset.objects.get(pk=dataset.pk).deleting_since is not None
    assert owner_api.get(f"/api/datasets/{dataset.pk}/").status_code == 404
    assert purge.sweep() == 0  # its mark is fresh: a worker may still be on it
    stalled = timezone.now() - timedelta(hours=1)
    Dataset.objects.filter(pk=dataset.pk).update(deletion_progress_at=stalled)
    assert purge.sweep() == 1  # the broker is back; Celery is eager here: it ran
    assert not Dataset.objects.filter(pk=dataset.pk).exists()
    assert not Query.objects.filter(pk=query.pk).exists()


def test_a_deleted_dataset_is_404_for_its_admin_and_members_at_once(
    client, owner, collaborator, owner_api, collaborator_api, dataset, query
):
    run = Run.objects.create(dataset=dataset, panel=PanelFactory(name="Panel"))
    assert owner_api.delete(f"/api/datasets/{dataset.pk}/").status_code == 202

    for api in (owner_api, collaborator_api):
        assert api.get(f"/api/datasets/{dataset.pk}/").status_code == 404
        assert api.patch(f"/api/datasets/{dataset.pk}/", {"name": "x"}).status_code == 404
        assert api.get(f"/api/queries/{query.pk}/").status_code == 404
        assert api.get("/api/datasets/").json()["results"] == []
        assert api.get("/api/queries/").json()["results"] == []
    assert owner_api.get(f"/api/runs/{run.pk}/").status_code == 404
    assert owner_api.get("/api/runs/").json()["results"] == []

    for user in (owner, collaborator):
        client.force_login(user)
        assert client.get(reverse("dataset-detail", args=[dataset.pk])).status_code == 404
        assert client.get(reverse("query-detail", args=[query.pk])).status_code == 404
        assert dataset.name not in client.get(reverse("home")).content.decode()
    client.force_login(owner)
    assert client.get(reverse("dataset-edit", args=[dataset.pk])).status_code == 404
    assert client.get(reverse("run-detail", args=[run.pk])).status_code == 404


def test_a_superuser_does_not_see_a_deleted_dataset_either(client, owner_api, dataset):
    assert owner_api.delete(f"/api/datasets/{dataset.pk}/").status_code == 202
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    assert client.get(reverse("dataset-detail", args=[dataset.pk])).status_code == 404
    assert dataset.name not in client.get(reverse("home")).content.decode()


@pytest.mark.parametrize(("who", "status"), [("collaborator_api", 403), ("outsider_api", 404)])
def test_only_its_admins_may_delete_a_dataset(
    request, who, status, dataset, django_capture_on_commit_callbacks
):
    api = request.getfixturevalue(who)
    response, queued = _delete(api, dataset, django_capture_on_commit_callbacks)
    assert response.status_code == status
    dataset.refresh_from_db()
    assert dataset.deleting_since is None and queued == []


def test_a_member_cannot_delete_a_dataset_being_deleted_either(
    owner_api, collaborator_api, dataset, django_capture_on_commit_callbacks
):
    assert owner_api.delete(f"/api/datasets/{dataset.pk}/").status_code == 202
    response, queued = _delete(collaborator_api, dataset, django_capture_on_commit_callbacks)
    assert response.status_code == 404 and queued == []


def test_deleting_an_unknown_dataset_is_404(owner_api):
    assert owner_api.delete("/api/datasets/999999/").status_code == 404


def test_the_admin_site_deletes_in_the_background(
    client, dataset, django_capture_on_commit_callbacks
):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    url = reverse("admin:annotation_dataset_delete", args=[dataset.pk])
    confirm = client.get(url)
    assert confirm.status_code == 200 and "in the background" in confirm.content.decode()
    with django_capture_on_commit_callbacks() as queued:
        response = client.post(url, {"post": "yes"}, follow=True)
    assert response.status_code == 200 and len(queued) == 1
    assert "in the background" in response.content.decode()
    dataset.refresh_from_db()
    assert dataset.deleting_since is not None


def test_the_admin_sites_bulk_delete_marks_each_dataset(
    client, owner, dataset, django_capture_on_commit_callbacks
):
    from annotation import services

    other = services.dataset_create(name="Second", by=owner)
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    pks = [dataset.pk, other.pk]
    form = {"action": "delete_selected", "_selected_action": pks, "post": "yes"}
    with django_capture_on_commit_callbacks() as queued:
        response = client.post(reverse("admin:annotation_dataset_changelist"), form)
    assert response.status_code == 302 and len(queued) == 2
    assert Dataset.objects.filter(pk__in=pks, deleting_since__isnull=False).count() == 2


def test_importing_into_the_name_of_a_dataset_being_deleted_is_refused_and_says_why(
    client, owner, owner_api, dataset, query, tmp_path
):
    data = zipped(write(tmp_path / "in", {**checklist_files(), "dataset.json": {
        **META, "name": dataset.name}}))  # fmt: skip
    assert owner_api.delete(f"/api/datasets/{dataset.pk}/").status_code == 202
    client.force_login(owner)
    response = client.post("/api/datasets/import/", {"file": SimpleUploadedFile("s.zip", data)})
    assert response.status_code == 403 and "being deleted" in response.json()["detail"]
    assert list(Query.objects.filter(dataset=dataset)) == [query]  # nothing written
