"""Every model registered in the Django admin opens: list and add pages."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import reverse

from tests.factories import UserFactory


@pytest.mark.django_db
def test_every_admin_page_opens(client):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    for model in admin.site._registry:
        meta = model._meta
        changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        assert client.get(changelist).status_code == 200, changelist
        add = reverse(f"admin:{meta.app_label}_{meta.model_name}_add")
        assert client.get(add).status_code in (200, 403), add
