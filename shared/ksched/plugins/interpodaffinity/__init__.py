"""InterPodAffinity: pod affinity and anti-affinity, required and preferred, with upstream semantics."""

from ksched.plugins.interpodaffinity.plugin import NAME, InterPodAffinity, new

__all__ = ["NAME", "InterPodAffinity", "new"]
