"""PreferLabeledNodes: an out-of-tree ksched Score plugin (the example of docs/plugins.md).

Nodes whose label ``labelKey`` has one of ``values`` (any value when ``values`` is empty) get
``score``; every other node gets 0. Configure it in a KubeSchedulerConfiguration profile::

    plugins:
      score:
        enabled:
          - name: PreferLabeledNodes
            weight: 5
    pluginConfig:
      - name: PreferLabeledNodes
        args:
          labelKey: example.com/pool
          values: [fast]
"""

from __future__ import annotations

from ksched.framework.api import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Args,
    CycleState,
    Handle,
    NodeInfo,
    PodInfo,
    Registration,
    ScorePlugin,
)

NAME = "PreferLabeledNodes"


class PreferLabeledNodesArgs(Args):
    """The plugin's args (camelCase in YAML; unknown fields are errors, like in-tree args)."""

    label_key: str = ""
    values: list[str] = []
    score: int = MAX_NODE_SCORE


class PreferLabeledNodes:
    """Score plugin: a fixed score for nodes carrying the label (with an accepted value)."""

    name = NAME

    def __init__(self, args: PreferLabeledNodesArgs) -> None:
        self.label_key = args.label_key
        self.values = frozenset(args.values)
        self.bonus = args.score

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        labels = node.node.metadata.labels if node.node is not None else {}
        value = labels.get(self.label_key)
        if value is None or (self.values and value not in self.values):
            return MIN_NODE_SCORE
        return self.bonus


def new(args: object, handle: Handle) -> PreferLabeledNodes:
    """The factory ksched calls once per profile: ``(typed args, framework handle) -> plugin``."""
    if not isinstance(args, PreferLabeledNodesArgs):
        raise TypeError(f"args are not of type PreferLabeledNodesArgs, got {type(args).__name__}")
    problems = []
    if not args.label_key:
        problems.append("labelKey: Required value")
    if not MIN_NODE_SCORE <= args.score <= MAX_NODE_SCORE:
        problems.append(f"score: Invalid value: {args.score}: must be in {MIN_NODE_SCORE}..{MAX_NODE_SCORE}")
    if problems:
        raise ValueError("; ".join(problems))
    return PreferLabeledNodes(args)


registration = Registration(factory=new, args_type=PreferLabeledNodesArgs)
"""What the ``ksched.plugins`` entry point names."""

_SCORE: type[ScorePlugin] = PreferLabeledNodes
"""The extension points it claims, checked by mypy (a drifting ``score`` signature is an error)."""
