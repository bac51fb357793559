import sys

from bench.faults.cli import main

sys.exit(main())
