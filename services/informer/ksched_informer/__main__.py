"""`python -m ksched_informer` is `ksched informer`."""

import sys

from ksched.cli import main

sys.exit(main(["informer", *sys.argv[1:]]))
