"""Signals evaluation sends for other packages to act on.

`run_ended` is sent once a run has ended (done or done with errors) and that write has
committed, with `run_id`. Analytics listens to check the run for regressions
(evaluation/analytics/receivers.py), so the runs package never imports analytics.
"""

from __future__ import annotations

from django.dispatch import Signal

run_ended = Signal()
