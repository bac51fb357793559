"""Retention: an ended run's verdicts moved out of the verdict table into a Parquet file
and back (issue 44). `services` archives and restores; `parquet` is the file's format.

Its figures stay: the run's scores are frozen in its RunArchive row (runs.scores serves
them), and its analytics figures kept when it was archived are served as current, never
refreshed (analytics.figures). docs/operations.md, "Archiving old runs".
"""
