"""Reproducible benchmarks (see bench/README.md). Not part of the installed package."""

import os

# The benchmarks' judges are loopback servers on this machine, which judges may call only
# when the operator allows private networks (docs/operations.md#which-hosts-judges-may-call):
# every `python -m bench.…` allows them, for itself and the workers it starts.
os.environ.setdefault("JUDGE_ALLOW_PRIVATE_NETWORK", "1")
