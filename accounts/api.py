"""Personal API tokens in the API: `GET /api/tokens/`, `POST /api/tokens/` (the key is in
that answer alone), `DELETE /api/tokens/{id}/`. Each person sees and revokes their own."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from accounts import access, selectors, services
from accounts.models import ApiToken
from annotation.models import Dataset
from annotation.selectors import datasets_for_user
from config.ids import MAX_ID


class ApiTokenSerializer(serializers.ModelSerializer):
    datasets = serializers.PrimaryKeyRelatedField(
        many=True, read_only=True, help_text="The datasets it is limited to; empty: no limit."
    )

    class Meta:
        model = ApiToken
        fields = [
            "id", "name", "scope", "datasets", "expires_at", "prefix", "created_at",
            "last_used_at",
        ]  # fmt: skip
        read_only_fields = fields


class ApiTokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    scope = serializers.ChoiceField(choices=ApiToken.Scope.choices, default=ApiToken.Scope.READ)
    datasets = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        default=list,
        max_length=1000,
        help_text="Ids of the datasets it is limited to (required for a rewards token).",
    )
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text="When it stops working."
    )

    def validate_datasets(self, ids: list[int]) -> list[Dataset]:
        """Every id must name a dataset the user can see; which role is needed is the
        service's rule."""
        found = {
            d.pk: d for d in datasets_for_user(self.context["request"].user).filter(pk__in=ids)
        }
        unknown = [i for i in ids if i not in found]
        if unknown:
            raise serializers.ValidationError(f"No such dataset: {unknown[0]}.")
        return list(dict.fromkeys(found[i] for i in ids))


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    key = serializers.CharField(
        read_only=True, help_text="The key, shown in this answer only: it is never stored."
    )

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "key"]
        read_only_fields = fields


class ApiTokenViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Your API tokens. A token cannot be read back or changed: make a new one and revoke
    the old."""

    serializer_class = ApiTokenSerializer
    ordering_fields = ["id", "created_at", "last_used_at", "name"]
    search_fields = ["name"]

    def get_queryset(self):
        return selectors.tokens_for_user(self.request.user)

    def get_object(self) -> ApiToken:
        return access.access_token(self.request.user, self.kwargs["pk"])

    @extend_schema(request=ApiTokenCreateSerializer, responses={201: ApiTokenCreatedSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        given = ApiTokenCreateSerializer(data=request.data, context={"request": request})
        given.is_valid(raise_exception=True)
        made_with = request.auth if isinstance(request.auth, ApiToken) else None
        try:
            token, key = services.api_token_create(
                user=request.user, made_with=made_with, **given.validated_data
            )
        except services.Refused as refused:
            field = refused.field or "non_field_errors"
            raise ValidationError({field: [refused.message]}) from None
        token.key = key
        return Response(ApiTokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: ApiToken) -> None:
        services.api_token_revoke(token=instance)
