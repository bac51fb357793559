import sys

from bench.judge_throughput.cli import main

sys.exit(main())
