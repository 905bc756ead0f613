"""`python -m ksched_kubesim` is `ksched kubesim`."""

import sys

from ksched.cli import main

sys.exit(main(["kubesim", *sys.argv[1:]]))
