"""kubesim: a Kubernetes API emulator (the subset ksched uses), faithful to kube-apiserver 1.36.

``KubeSim`` runs it in-process; ``ksched kubesim`` runs it as a command.
"""

from .lifecycle import LifecycleSettings
from .sim import KubeSim, KubeSimConfig, ScenarioError

__all__ = ["KubeSim", "KubeSimConfig", "LifecycleSettings", "ScenarioError"]
