"""``ksched informer``'s options: the common ones (embedded), leader election, and the cache's
timings; made from the command line by :func:`from_args`."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ksched.client.leader import ElectionConfig
from ksched.config.types import KubeSchedulerConfiguration
from ksched.service.election import election_config
from ksched.service.options import CommonOptions

DEFAULT_HTTP_PORT = 10260


@dataclass(frozen=True)
class InformerOptions:
    common: CommonOptions
    flush_interval: float = 0.002
    """The least time in seconds from the end of one flush to the start of the next, and how long a
    change no scheduler waits for (a pod placed or gone, a node) waits for the ones that follow it:
    a pod that becomes pending after a quiet spell is published at once, changes that keep coming
    at most every ``flush_interval`` s (plus the flush's own time), each flush taking all of them as
    one delta and one feed batch."""
    max_assumed_age: float = 900.0
    """Seconds an assumption lives at most without the watch showing its pod bound."""
    election: ElectionConfig | None = None
    """Leader election over a Lease; None: this instance is the only one and acts at once."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The informer has no flags of its own besides the common and leader-election ones."""


def from_args(
    ns: argparse.Namespace, common: CommonOptions, config: KubeSchedulerConfiguration
) -> InformerOptions:
    """Raises ValueError naming a bad leader-election flag."""
    election = election_config(
        ns, service="informer", identity=common.identity, kubeconfig=common.kubeconfig, config=config
    )
    return InformerOptions(common=common, election=election)
