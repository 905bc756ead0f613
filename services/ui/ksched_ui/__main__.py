"""`python -m ksched_ui` is `ksched ui`."""

import sys

from ksched.cli import main

sys.exit(main(["ui", *sys.argv[1:]]))
