"""Fixtures of the runs tests: none shared yet beyond tests/conftest.py (`offline_panel`,
`celery_worker`, `start_worker`, `loopback_openai`). Workloads and the verdicts the loopback
judge gives them are in workload.py; the scores' oracle in scores_oracle.py."""
