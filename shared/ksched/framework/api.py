"""What a plugin author imports: the one module docs/plugins.md names (``from ksched.framework.api
import ...``). Everything here is defined elsewhere in :mod:`ksched.framework` or :mod:`ksched.api`;
``__all__`` is the supported surface for out-of-tree plugins, and tests/test_plugin_api.py keeps it
equal to the imports docs/plugins.md shows.
"""

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState, StateData
from ksched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from ksched.framework.handle import Handle
from ksched.framework.interfaces import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BatchFilterPlugin,
    BatchScorePlugin,
    BindPlugin,
    BoolArray,
    EnqueueExtensions,
    FilterPlugin,
    Int64Array,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    Rows,
    ScoreExtensions,
    ScorePlugin,
)
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.registration import Args, PluginFactory, Registration
from ksched.framework.results import NodeToStatus, PostFilterResult, PreFilterResult, QueuedPodInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status

__all__ = [
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "ActionType",
    "Args",
    "BatchFilterPlugin",
    "BatchScorePlugin",
    "BindPlugin",
    "BoolArray",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EnqueueExtensions",
    "EventResource",
    "FilterPlugin",
    "Handle",
    "Int64Array",
    "Node",
    "NodeInfo",
    "NodeToStatus",
    "PermitPlugin",
    "Plugin",
    "PluginFactory",
    "Pod",
    "PodInfo",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "QueueingHint",
    "Registration",
    "ReservePlugin",
    "Rows",
    "ScoreExtensions",
    "ScorePlugin",
    "Snapshot",
    "StateData",
    "Status",
]
