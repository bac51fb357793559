import sys

from bench.rewards.cli import main

sys.exit(main())
