"""Fixtures of the schedules tests: none shared yet (one module, test_pages.py)."""
