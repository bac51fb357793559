"""Fixtures of the formality tests: none shared yet (test_check.py has its loopback judge)."""
