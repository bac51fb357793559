"""The rewards service's ASGI application (config.settings_rewards; docs/operations.md)."""

from __future__ import annotations

import os

import django
from django.core.handlers.asgi import ASGIHandler


class RewardsHandler(ASGIHandler):
    """Django's ASGI handler, without a thread started for every request.

    Django runs each request in a context of its own for its sync steps
    (asgiref's ThreadSensitiveContext), and so on a thread of its own: it starts one per
    request just to send the request signals and close the response. The rewards service's
    views run no sync code on the event loop (their database work is on the edge pool:
    evaluation/rewards/served.py), so those few steps share Django's one thread for sync
    code instead. Starting a thread per request cost about an eighth of the service's CPU
    at a trainer's burst of one-sample requests (docs/benchmarks.md)."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        await self.handle(scope, receive, send)


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_rewards")
django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application does
application = RewardsHandler()
