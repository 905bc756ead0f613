"""``ksched informer``'s options: the common ones (embedded), leader election, and the cache's
timings; made from the command line by :func:`from_args`."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from ksched.client.leader import ElectionConfig
from ksched.config.types import KubeSchedulerConfiguration
from ksched.service.election import election_config
from ksched.service.options import CommonOptions
from ksched_informer.publisher import HOLD_FOR_BINDING

DEFAULT_HTTP_PORT = 10260
BINDING_HOLD_ENV = "KSCHED_INFORMER_BINDING_HOLD"


@dataclass(frozen=True)
class InformerOptions:
    common: CommonOptions
    flush_interval: float = 0.002
    """The least time in seconds from the end of one flush to the start of the next, and how long a
    change no scheduler waits for (a pod placed or gone, a node) waits for the ones that follow it:
    a pod that becomes pending after a quiet spell is published at once, changes that keep coming
    at most every ``flush_interval`` s (plus the flush's own time), each flush taking all of them as
    one delta and one feed batch."""
    binding_hold: float = HOLD_FOR_BINDING
    """How long a flush holding a pod's assumption waits at most for the watch to show the pod bound
    (``Publisher.hold``); ``KSCHED_INFORMER_BINDING_HOLD`` (seconds) sets it."""
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
    hold = os.environ.get(BINDING_HOLD_ENV, "")
    try:
        binding_hold = float(hold) if hold else HOLD_FOR_BINDING
    except ValueError:
        raise ValueError(f"{BINDING_HOLD_ENV}={hold!r}: expected seconds") from None
    return InformerOptions(common=common, election=election, binding_hold=binding_hold)
