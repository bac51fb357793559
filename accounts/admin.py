from __future__ import annotations

from django.contrib import admin

from accounts.models import ApiToken, Invitation


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """To look up and withdraw invitations; they are made on a dataset's members page (the
    key exists only in the email)."""

    list_display = [
        "email", "dataset", "role", "invited_by", "created_at", "expires_at", "accepted_at",
        "revoked_at",
    ]  # fmt: skip
    list_filter = ["role"]
    search_fields = ["email", "dataset__name"]
    readonly_fields = [
        "dataset", "email", "role", "key_digest", "invited_by", "created_at", "expires_at",
        "accepted_at", "accepted_by",
    ]  # fmt: skip

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """To see and revoke (delete) anyone's tokens; they are made on the account page or by
    the API, which alone can show a key."""

    list_display = ["name", "user", "scope", "prefix", "created_at", "last_used_at"]
    list_filter = ["scope"]
    search_fields = ["name", "user__username", "prefix"]
    readonly_fields = [
        "user", "name", "scope", "prefix", "key_digest", "created_at", "last_used_at"
    ]  # fmt: skip

    def has_add_permission(self, request) -> bool:
        return False
