"""API permissions shared by every app's viewsets."""

from __future__ import annotations

from rest_framework import permissions


class ModelPermsOrReadOnly(permissions.DjangoModelPermissions):
    """Any signed-in user reads; writing needs the model permission (the Admin group)."""

    def has_permission(self, request, view) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return bool(request.user and request.user.is_authenticated)
        return super().has_permission(request, view)
