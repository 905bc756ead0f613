"""Command lines as kube-scheduler reads them: Go's flag syntax on argparse
(:mod:`~ksched.flags.goflags`) and kube-scheduler's own flags on every ksched command
(:mod:`~ksched.flags.upstream_flags`)."""
