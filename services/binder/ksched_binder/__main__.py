"""`python -m ksched_binder` is `ksched binder`."""

import sys

from ksched.cli import main

sys.exit(main(["binder", *sys.argv[1:]]))
