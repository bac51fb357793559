"""Cross-evaluation: perfect answers for checklists, and how much one expert's perfect answer
covers another expert's checklist (the overlap matrix). See docs/cross-evaluation.md.

services.py writes (perfect answers, drafts, starting runs, settings), selectors.py reads
(matrices, dataset mean), access.py checks who may read or write a perfect answer,
receivers.py schedules automatic cross-evaluation. The arithmetic is in
evaluation/metrics/overlap.py.
"""
