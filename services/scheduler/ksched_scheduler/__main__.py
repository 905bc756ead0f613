"""`python -m ksched_scheduler` is `ksched scheduler`."""

import sys

from ksched.cli import main

sys.exit(main(["scheduler", *sys.argv[1:]]))
