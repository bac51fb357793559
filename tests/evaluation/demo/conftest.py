"""Fixtures of the demo tests: none shared; the demo command builds their data."""
