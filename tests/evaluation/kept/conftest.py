"""Tests of evaluation/kept/: events, counters, readers and kept rows."""
