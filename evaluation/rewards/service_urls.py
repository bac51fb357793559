"""The rewards service's routes (config.settings_rewards: ROOT_URLCONF): the reward routes
at the web application's paths, served by async views (evaluation.rewards.served), and the
health checks. A proxy sends /api/rewards/ here and the rest to the web processes
(docs/operations.md#the-rewards-service)."""

from __future__ import annotations

from django.urls import path

from config.health import healthz, livez
from evaluation.rewards import api, served

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("livez", livez, name="livez"),
    # The same route strings as evaluation/urls.py: a rewards-scope token is recognised by
    # its route (accounts.authentication.REWARDS_ROUTE_PREFIX).
    path("api/rewards/", served.served(api.RewardsView), name="rewards"),
    path("api/rewards/openrlhf/", served.served(api.OpenRlhfRewardsView), name="rewards-openrlhf"),
    path("api/rewards/verify/", served.served(api.VerifyRewardView), name="rewards-verify"),
]
