"""DefaultPreemption: preempt lower-priority pods for a pod no node fits (upstream 1.36.2)."""

from ksched.plugins.defaultpreemption.effects import PreemptionExecutor, PreemptionPlan, execute_preemption
from ksched.plugins.defaultpreemption.plugin import NAME, DefaultPreemption, new
from ksched.plugins.defaultpreemption.result import PreemptionResult

__all__ = [
    "NAME",
    "DefaultPreemption",
    "PreemptionExecutor",
    "PreemptionPlan",
    "PreemptionResult",
    "execute_preemption",
    "new",
]
