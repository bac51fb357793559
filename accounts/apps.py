from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """People: invitations, accounts made in the app, dataset members, the profile page and
    the API tokens people make there."""

    name = "accounts"
    verbose_name = "Accounts"
