"""`python -m ksched_queue` is `ksched queue`."""

import sys

from ksched.cli import main

sys.exit(main(["queue", *sys.argv[1:]]))
