"""Review: human labels beside judge verdicts, labelling and disagreement queues,
adjudication and assignment. Queue ordering is plain Python (queues.py); reads are in
selectors.py, writes in services.py, access checks in permissions.py."""
