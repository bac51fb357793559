"""A dataset's Rewards page, for its admins: a reward request ready to copy (curl and
Python), recent reward traffic (items per minute, latency percentiles, cost, failures) and
the rewards tokens limited to the dataset."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from accounts.models import ApiToken
from annotation import roles
from annotation.access import access_dataset
from evaluation.charts.columns import column_chart
from evaluation.rewards import traffic
from evaluation.rewards.example import TOKEN_VARIABLE, reward_example


@require_GET
@login_required
def dataset_rewards(request: HttpRequest, pk: int) -> HttpResponse:
    dataset = access_dataset(request.user, pk, roles.CHANGE)
    figures = traffic.overview(dataset.pk)
    chart = column_chart(
        [(timezone.localtime(minute).strftime("%H:%M"), n) for minute, n in figures["per_minute"]],
        title="Reward items per minute, last hour",
        unit="items",
    )
    tokens = (
        ApiToken.objects.filter(scope=ApiToken.Scope.REWARDS, datasets=dataset)
        .select_related("user")
        .order_by("-created_at", "-pk")
    )
    example = reward_example(dataset, request.build_absolute_uri("/api/rewards/"))
    context = {
        "dataset": dataset, "chart": chart, "tokens": tokens, **figures,
        "example": example if not isinstance(example, str) else None,
        "no_example": example if isinstance(example, str) else "",
        "token_variable": TOKEN_VARIABLE,
    }  # fmt: skip
    return render(request, "evaluation/rewards/dataset_rewards.html", context)
