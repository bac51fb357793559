"""Fixtures of the data tests (export, import, deletion): none shared yet. What they build on
is in plain modules: imports.py (files to import, an empty database), zips.py (reading an
export), every_table.py (a dataset with rows in every table) and bench.data_io.generate."""
