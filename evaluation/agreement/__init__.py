"""Agreement between judges and humans, and between humans, for one dataset.

`selectors.py` loads a dataset's labels, adjudications and one run's votes in a fixed number
of queries and computes every figure with `evaluation.metrics.agreement`; the page, the API
and the drill-down lists all read from it. See docs/metrics.md.
"""
