"""The answers pages: a dataset's Answers page (every answer, searched, filtered, sorted and
paged, with its latest score and label status; the upload for admins) and one answer's
page (its text and trajectory, and every run's scores of it).

A package of its own above runs and review, not inside evaluation.answers: the answers'
models sit at the bottom of the layers (runs, labels and review all point at an answer),
while these pages read runs' kept scores, labels and verdicts (pyproject's import
contracts)."""
