"""PodTopologySpread: spread pods evenly over topology domains (upstream ``podtopologyspread``)."""

from ksched.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from ksched.plugins.podtopologyspread.plugin import NAME, PodTopologySpread, new

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "NAME",
    "PodTopologySpread",
    "new",
]
