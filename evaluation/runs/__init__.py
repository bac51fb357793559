"""Runs: grading a dataset's answers with a panel of judges.

Layers, from the bottom up (docs/architecture.md draws them):

- `evaluation.judging` (below this package): the only code that talks to an LLM.
- `scope`, `snapshot`, `calls`: what a run covers, the panel as it was at start, and how
  one judge call is set up and recorded.
- `work` (the task body: one answer × one judge) and `grading` (the graded 1–5 view).
- `services` (create, start, cancel, resume, retry failed) and `lifecycle` (claiming and
  finishing tasks, ending the run); `healing` requeues the work of lost workers.
- `selectors`, `scores`, `costs`, `overview`: reads for pages, API and commands.
- `tasks`: thin Celery tasks that call `work` and `healing`. Services queue tasks by name,
  so nothing here imports `tasks`.

Views and the API (`views`, `api`, `scores_api`) sit on top.
"""
