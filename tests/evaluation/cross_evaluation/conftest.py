"""Fixtures of the cross-evaluation tests: none shared yet. Their checklists name codes that
the loopback judge looks for in the answers (two_queries.py), built with checklisted_query
(tests/support/builders.py)."""
