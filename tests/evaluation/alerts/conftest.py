"""Fixtures of the alerts tests: none shared yet. Each module sets the webhook hosts it
allows (ALERT_WEBHOOK_ALLOWED_HOSTS) for what it tests; the runs compared come from
analytics/known.py and the worker from tests/conftest.py."""
