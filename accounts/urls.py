from __future__ import annotations

from django.urls import path

from accounts.views import invitations, members, profile

urlpatterns = [
    path("account/", profile.profile, name="account"),
    path("account/tokens/", profile.token_create, name="token-create"),
    path("account/tokens/<int:pk>/revoke/", profile.token_revoke, name="token-revoke"),
    path(
        "account/tokens/older/revoke/",
        profile.legacy_token_revoke,
        name="legacy-token-revoke",
    ),
    path("invitations/<str:key>/", invitations.invitation_accept, name="invitation-accept"),
    path("datasets/<int:pk>/members/", members.dataset_members, name="dataset-members"),
    path("datasets/<int:pk>/members/invite/", members.dataset_invite, name="dataset-invite"),
    path(
        "datasets/<int:pk>/members/new-account/",
        members.dataset_account_create,
        name="dataset-account-create",
    ),
    path(
        "datasets/<int:pk>/members/<int:user_id>/remove/",
        members.dataset_member_remove,
        name="dataset-member-remove",
    ),
    path(
        "datasets/<int:pk>/invitations/<int:invitation_id>/revoke/",
        members.invitation_revoke,
        name="invitation-revoke",
    ),
]
