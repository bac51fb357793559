"""Trial runs (issue 25): a candidate judge or panel run on the labelled items only, compared
side by side with the current judge's run, and "Use this judge". The trial itself is a run
(evaluation.runs, scope "labelled"); this package owns its comparison and its adoption."""
