"""Signals the annotation app sends for other apps to act on, without annotation importing them.

`checklist_submitted` is sent once the transaction that submitted a checklist has committed
(never for a rolled-back submission), with `checklist` and `by` (the user who submitted).
Evaluation listens to schedule cross-evaluation (evaluation/cross_evaluation/receivers.py).
"""

from __future__ import annotations

from django.dispatch import Signal

checklist_submitted = Signal()
