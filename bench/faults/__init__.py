"""Runs under infrastructure faults (issue 27): a database restart, a judge outage and a
broker restart in the middle of a real run, measured (`python -m bench.faults`)."""
