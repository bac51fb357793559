"""Reproducible benchmarks (see bench/README.md). Not part of the installed package."""
