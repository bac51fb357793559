"""Fixtures of the judging tests (client, engine, rate limits): none shared yet. Most need no
database: the loopback server (`loopback_openai`, tests/conftest.py) plays the judges."""
