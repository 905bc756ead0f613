"""PodDisruptionBudgets as preemption reads them (upstream ``filterPodsWithPDBViolation``).

A victim "violates" a PDB when evicting it would take the budget's ``disruptionsAllowed`` below
zero, counting the victims considered before it (in the given order) against the same budget.
A PDB matches a pod in its namespace whose labels its selector selects; a nil, empty or invalid
selector matches nothing, a pod without labels matches nothing, and a pod already listed in
``status.disruptedPods`` (the API server has processed its eviction) does not count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ksched.api.policy import PodDisruptionBudget
from ksched.apimachinery.labels import Selector, SelectorError, label_selector_as_selector
from ksched.framework.podinfo import PodInfo


@dataclass(frozen=True, slots=True)
class CompiledPDB:
    """One PDB with its selector compiled; ``selector`` is None when it can match no pod."""

    namespace: str
    selector: Selector | None
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    def matches(self, pod: PodInfo) -> bool:
        if self.selector is None or pod.namespace != self.namespace:
            return False
        return self.selector.matches(pod.labels)


def compile_pdb(pdb: PodDisruptionBudget) -> CompiledPDB:
    selector: Selector | None
    try:
        selector = label_selector_as_selector(pdb.spec.selector)
    except SelectorError:
        selector = None  # an invalid selector matches nothing
    if selector is not None and (selector.never or selector.empty):
        selector = None  # nil and empty selectors match nothing here
    return CompiledPDB(
        namespace=pdb.metadata.namespace,
        selector=selector,
        disruptions_allowed=pdb.status.disruptions_allowed,
        disrupted_pods=frozenset(pdb.status.disrupted_pods),
    )


class PDBCache:
    """Compiled PDBs, recompiled only for objects that changed (by identity)."""

    def __init__(self) -> None:
        self._compiled: dict[int, tuple[PodDisruptionBudget, CompiledPDB]] = {}

    def compile(self, pdbs: Iterable[PodDisruptionBudget]) -> list[CompiledPDB]:
        out: list[CompiledPDB] = []
        fresh: dict[int, tuple[PodDisruptionBudget, CompiledPDB]] = {}
        for pdb in pdbs:
            entry = self._compiled.get(id(pdb))
            if entry is None or entry[0] is not pdb:
                entry = (pdb, compile_pdb(pdb))
            fresh[id(pdb)] = entry
            out.append(entry[1])
        self._compiled = fresh
        return out


def split_by_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[CompiledPDB]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """(violating, non-violating) victims, each in the order given (the split is stable)."""
    if not pdbs:
        return [], list(pods)
    allowed = [p.disruptions_allowed for p in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        violated = False
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                if not pdb.matches(pod) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating
