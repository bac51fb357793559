"""Review: human labels beside judge verdicts, labelling and disagreement queues,
adjudication and assignment. The label policy's draw is plain Python (queues.py,
sampling.py) and the queues are ordered in the database (order.py); reads are in
selectors.py, writes in services.py, access checks in permissions.py."""
