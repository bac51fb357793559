"""Fixtures of the judges and panels tests: none shared yet. Panels in tests are made by
PanelFactory (tests/factories.py); these tests also make them through the pages and API."""
