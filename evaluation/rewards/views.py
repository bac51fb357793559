"""A dataset's Rewards page, for its admins: recent reward traffic (items per minute,
latency percentiles, cost, failures) and the rewards tokens limited to the dataset."""

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
    context = {"dataset": dataset, "chart": chart, "tokens": tokens, **figures}
    return render(request, "evaluation/rewards/dataset_rewards.html", context)
