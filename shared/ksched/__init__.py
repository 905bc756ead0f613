"""ksched: the Kubernetes scheduling framework as asyncio services over NATS."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ksched")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

#: The upstream kube-scheduler release whose behaviour ksched reproduces.
UPSTREAM_VERSION = "1.36.2"
