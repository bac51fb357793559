"""The reward endpoints, under /api/rewards/: the native shape and the shapes of OpenRLHF's
remote reward model and NeMo-Gym's /verify (docs/rewards.md). A dataset's admins call them:
a reward spends judge money as starting a run does.

Thin: each view reads its shape (evaluation.rewards.request_shapes) and checks access (`job`),
calls evaluation.rewards.services.reward_batch and writes the answer in its shape (`body`).
The rewards service (evaluation.rewards.served) runs the same `job` and `body` around a
shared wave instead. A refused input
is a 400 naming the item and field; a quota a 429 with Retry-After.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import ApiToken
from annotation import roles
from annotation.access import access_dataset
from annotation.models import Dataset
from config import shared_lookups
from config.ids import parse_id
from evaluation.judges.models import Panel
from evaluation.rewards import quota, request_shapes, services, waves
from evaluation.rewards.models import RewardBatch
from evaluation.rewards.request_shapes import Problem, RefusedInput


def _dataset(request: Request, raw: Any) -> Dataset:
    pk = parse_id(raw)
    if pk is None:
        raise RefusedInput([Problem(None, "dataset", "Give the dataset's id (a number).")])
    try:
        # Shared by the requests admitted together (config/shared_lookups.py): one caller,
        # one token's limit, one dataset.
        return shared_lookups.once(
            ("reward-dataset", request.user.pk, _token_id(request), pk),
            lambda: access_dataset(request.user, pk, roles.CHANGE),
        )
    except DjangoPermissionDenied as refused:  # DRF would answer it with a generic message
        raise PermissionDenied(
            "Rewards are for the dataset's admins: a reward call spends judge money as "
            f"starting a run does. {refused}"
        ) from None


def _panel(raw: Any) -> Panel:
    pk = parse_id(raw)
    panel = (
        shared_lookups.once(("reward-panel", pk), Panel.objects.filter(pk=pk).first)
        if pk is not None
        else None
    )
    if panel is None:
        raise RefusedInput([Problem(None, "panel", "Give the id of an existing panel.")])
    return panel


def _token_id(request: Request) -> int | None:
    return request.auth.pk if isinstance(request.auth, ApiToken) else None


def reward_job(
    request: Request,
    ids: Mapping[str, Any],
    read: Callable[[], list[request_shapes.Item]],
    shaping_source: Mapping[str, Any],
    shape: str,
    query_field: str,
) -> waves.Job:
    """Access and input, the same steps for every shape: the batch to grade. Raises
    RefusedInput (a 400 naming the item and field) or PermissionDenied."""
    dataset = _dataset(request, ids.get("dataset"))
    panel = _panel(ids.get("panel"))
    items = read()
    shaping = request_shapes.shaping_from(shaping_source, services.default_shaping())
    return waves.Job(
        dataset=dataset, panel=panel, items=items, by=request.user, token_id=_token_id(request),
        shape=shape, shaping=shaping, query_field=query_field,
    )  # fmt: skip


def refused_response(refused: Exception) -> Response | None:
    """The answer to a request its input or a limit refused (None: not such a refusal)."""
    if isinstance(refused, RefusedInput):
        return Response(refused.body(), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(refused, quota.QuotaExceeded):
        return Response(
            {"detail": str(refused), "retry_after": refused.retry_after},
            status=status.HTTP_429_TOO_MANY_REQUESTS,
            headers={"Retry-After": str(refused.retry_after)},
        )
    return None


class _RewardView(APIView):
    """A reward route: its shape's `job` (what to grade) and `body` (the answer). The web
    processes grade in the request's thread (`post`); the rewards service grades the same
    job in a shared wave (evaluation.rewards.served)."""

    def job(self, request: Request) -> waves.Job:
        raise NotImplementedError

    def body(self, request: Request, result: services.BatchResult) -> Any:
        raise NotImplementedError

    def graded(self, request: Request) -> Response:
        try:
            job = self.job(request)
            result = services.reward_batch(**waves.prepare_arguments(job))
        except (RefusedInput, quota.QuotaExceeded) as refused:
            return refused_response(refused)
        return Response(self.body(request, result))


def _criteria(item: services.ItemResult) -> list[dict[str, Any]]:
    return [
        {
            "criterion": c.criterion_id,
            "text": c.text,
            "outcome": c.outcome,
            "rationale": c.rationale,
        }
        for c in item.criteria
    ]


# --- Schemas (for the OpenAPI document; request_shapes does the checking) --------------

_SHAPING = {
    "length_reference": serializers.IntegerField(
        required=False, help_text="R, words: longer completions are scaled by (R/w)^a."
    ),
    "length_exponent": serializers.FloatField(required=False, help_text="a, 0 to 4."),
    "max_words": serializers.IntegerField(
        required=False, help_text="M, words: each M words past M cost over_length_penalty."
    ),
    "over_length_penalty": serializers.FloatField(required=False, help_text="P, 0 to 1."),
}
_CRITERIA = inline_serializer(
    "RewardCriterion",
    many=True,
    fields={
        "criterion": serializers.IntegerField(),
        "text": serializers.CharField(),
        "outcome": serializers.ChoiceField(["pass", "fail", "undecided"]),
        "rationale": serializers.CharField(),
    },
)
_REFUSED = inline_serializer(
    "RewardRefused",
    {
        "detail": serializers.CharField(),
        "errors": inline_serializer(
            "RewardProblem",
            {
                "item": serializers.IntegerField(allow_null=True),
                "field": serializers.CharField(),
                "message": serializers.CharField(),
            },
            many=True,
        ),
    },
)
_QUOTA = inline_serializer(
    "RewardQuota", {"detail": serializers.CharField(), "retry_after": serializers.IntegerField()}
)
_IDS = [
    OpenApiParameter("dataset", OpenApiTypes.INT, required=True, description="The dataset."),
    OpenApiParameter("panel", OpenApiTypes.INT, required=True, description="The judge panel."),
    *(
        OpenApiParameter(name, OpenApiTypes.NUMBER, description=field.help_text)
        for name, field in _SHAPING.items()
    ),
]


class RewardsView(_RewardView):
    @extend_schema(
        request=inline_serializer(
            "RewardRequest",
            {
                "dataset": serializers.IntegerField(),
                "panel": serializers.IntegerField(),
                "items": inline_serializer(
                    "RewardItem",
                    {
                        "query": serializers.CharField(help_text="The query's external id."),
                        "completion": serializers.JSONField(
                            help_text="The completion's text, or its turns (the last "
                            "assistant turn is graded, with the turns before it)."
                        ),
                        "context": serializers.JSONField(
                            required=False,
                            help_text="Optional: the passages retrieved for it "
                            "([{id, title, source, text}]), for criteria judged against "
                            "the retrieved context.",
                        ),
                    },
                    many=True,
                ),
                **_SHAPING,
            },
        ),
        responses={
            200: inline_serializer(
                "RewardResponse",
                {
                    "batch": serializers.IntegerField(),
                    "items": inline_serializer(
                        "RewardResult",
                        {
                            "reward": serializers.FloatField(allow_null=True),
                            "score": serializers.FloatField(allow_null=True),
                            "failed": serializers.BooleanField(),
                            "undecided": serializers.IntegerField(),
                            "words": serializers.IntegerField(),
                            "criteria": _CRITERIA,
                        },
                        many=True,
                    ),
                },
            ),
            400: _REFUSED,
            429: _QUOTA,
        },
    )
    def post(self, request: Request) -> Response:
        """Rewards for a batch of completions, in the items' order: each scored against its
        query's submitted checklists by the panel. A failed item has `failed: true` and a
        null reward, never a made-up number."""
        return self.graded(request)

    def job(self, request: Request) -> waves.Job:
        data = request.data if isinstance(request.data, Mapping) else {}
        return reward_job(
            request, data, lambda: request_shapes.native_items(data, _max_batch()), data,
            RewardBatch.Shape.NATIVE, "query",
        )  # fmt: skip

    def body(self, request: Request, result: services.BatchResult) -> Any:
        return {
            "batch": result.batch.pk,
            "items": [
                {
                    "reward": item.reward,
                    "score": item.score,
                    "failed": item.failed,
                    "undecided": item.undecided,
                    "words": item.words,
                    "criteria": _criteria(item),
                }
                for item in result.items
            ],
        }


class OpenRlhfRewardsView(_RewardView):
    @extend_schema(
        parameters=[
            *_IDS,
            OpenApiParameter(
                "strip",
                OpenApiTypes.STR,
                many=True,
                description="Trailing tokens to cut off each completion (e.g. <|im_end|>).",
            ),
        ],
        request=inline_serializer(
            "OpenRlhfRewardRequest",
            {
                "query": serializers.ListField(
                    child=serializers.CharField(), help_text="Prompt and completion, decoded."
                ),
                "prompts": serializers.ListField(child=serializers.CharField()),
                "labels": serializers.ListField(
                    child=serializers.CharField(), help_text="The queries' external ids."
                ),
            },
        ),
        responses={
            200: inline_serializer(
                "OpenRlhfRewardResponse",
                {
                    "rewards": serializers.ListField(child=serializers.FloatField()),
                    "scores": serializers.ListField(child=serializers.FloatField()),
                    "extra_logs": serializers.DictField(
                        child=serializers.ListField(child=serializers.FloatField())
                    ),
                },
            ),
            400: _REFUSED,
            429: _QUOTA,
        },
    )
    def post(self, request: Request) -> Response:
        """OpenRLHF's remote reward model (`--remote_rm_url`). A completion without a reward
        (a failed call, or nothing decided) gets 0.0 and is flagged in
        extra_logs.no_reward (and extra_logs.failed for a failed call)."""
        return self.graded(request)

    def job(self, request: Request) -> waves.Job:
        strip = request.query_params.getlist("strip")
        return reward_job(
            request, request.query_params,
            lambda: request_shapes.openrlhf_items(request.data, _max_batch(), strip),
            request.query_params, RewardBatch.Shape.OPENRLHF, "labels",
        )  # fmt: skip

    def body(self, request: Request, result: services.BatchResult) -> Any:
        items = result.items
        return {
            "rewards": [item.reward or 0.0 for item in items],
            "scores": [item.score or 0.0 for item in items],
            "extra_logs": {
                "failed": [float(item.failed) for item in items],
                "no_reward": [float(item.reward is None) for item in items],
                "undecided": [float(item.undecided) for item in items],
            },
        }


class VerifyRewardView(_RewardView):
    @extend_schema(
        parameters=_IDS,
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 400: _REFUSED, 429: _QUOTA},
    )
    def post(self, request: Request) -> Response:
        """NeMo-Gym's /verify: the request, with the query's external id in `query`, echoed
        with `reward` beside it. A completion without a reward (a failed call, or nothing
        decided) gets 0.0 with `mask_sample: true`, and `failed: true` for a failed call."""
        return self.graded(request)

    def job(self, request: Request) -> waves.Job:
        return reward_job(
            request, request.query_params, lambda: [request_shapes.verify_item(request.data)],
            request.query_params, RewardBatch.Shape.VERIFY, "query",
        )  # fmt: skip

    def body(self, request: Request, result: services.BatchResult) -> Any:
        item = result.items[0]
        return {
            **request.data,
            "reward": item.reward or 0.0,
            "mask_sample": item.reward is None,
            "failed": item.failed,
            "undecided": item.undecided,
            "checklist_score": item.score,
            "criteria": _criteria(item),
        }


def _max_batch() -> int:
    return settings.REWARDS_MAX_BATCH
