"""Judge throughput: the app's engine (a real Celery worker, Redis, PostgreSQL) against the
loopback OpenAI server, and the same workload through Inspect AI. See bench/README.md."""
