"""Export rows for datasets, runs and overlaps (one module per kind)."""
