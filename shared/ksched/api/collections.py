"""The API collections the scheduler reads: which registered kinds (their path and Struct come from
:data:`ksched.api.kinds.KINDS`), and the selectors upstream's informers use.

One table for everything that lists the cluster: the informer's list-watch and ``ksched simulate
--from-cluster`` read the same kinds, so an offline run sees what the services see. Every required
collection is one kube-scheduler 1.36 reads and its bootstrap ClusterRoles (``system:kube-scheduler``,
``system:volume-scheduler``) grant, so ``ksched kube-scheduler`` runs with kubeadm's
``scheduler.conf`` alone; the optional ones (:attr:`Collection.optional`) may be refused or not
served and then count as empty.
"""

from __future__ import annotations

from dataclasses import dataclass

from ksched.api.base import K8s
from ksched.api.kinds import Kind, lookup


@dataclass(frozen=True)
class Collection:
    """What to list(-watch): a registered kind (its path and Struct), in one namespace or all, with
    selectors."""

    resource: Kind
    field_selector: str | None = None
    label_selector: str | None = None
    optional: bool = False
    """A resource the cluster may not serve (an alpha API, a CRD) or the caller may not read (one the
    bootstrap ClusterRoles lack): a 404 or 403 counts as an empty list, retried later."""
    namespace: str = ""
    """Only this namespace's objects (all namespaces when empty)."""
    name: str = ""
    """The collection's name in logs, metrics and the snapshot's tables when not its kind's (as
    ``CoschedulingPodGroup`` next to the native PodGroup)."""

    @property
    def kind(self) -> str:
        return self.name or self.resource.kind

    @property
    def path(self) -> str:
        """``/api/v1/pods``, ``/apis/apps/v1/namespaces/ns/replicasets``."""
        return self.resource.path(self.namespace)

    @property
    def struct(self) -> type[K8s]:
        """The Struct its objects decode into."""
        if self.resource.struct is None:
            raise TypeError(f"{self.kind}: ksched has no Struct for {self.resource.key}")
        return self.resource.struct

    @property
    def api_version(self) -> str:
        """The group/version it serves (list items carry no ``apiVersion``/``kind``; a cluster file
        needs them)."""
        return self.resource.api_version

    @property
    def object_kind(self) -> str:
        """The ``kind`` its objects carry."""
        return self.resource.kind


#: Pods that finished are invisible to the scheduler (upstream's informer field selector).
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"

NODES = Collection(lookup("", "Node"))
PODS = Collection(lookup("", "Pod"), field_selector=POD_FIELD_SELECTOR)

#: Every other kind a plugin reads (not PriorityClasses: a pod carries its priority; not
#: ResourceClaimTemplates: kube-controller-manager makes the claims, the scheduler reads those).
OBJECTS: tuple[Collection, ...] = tuple(
    Collection(lookup(group, kind))
    for group, kind in (
        ("", "Namespace"),
        ("", "Service"),
        ("", "ReplicationController"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
        ("policy", "PodDisruptionBudget"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSIStorageCapacity"),
        ("resource.k8s.io", "DeviceClass"),
        ("resource.k8s.io", "ResourceSlice"),
        ("resource.k8s.io", "ResourceClaim"),
    )
)

#: Everything the scheduler reads, nodes and pods first (pod groups: :func:`pod_group_collections`).
ALL: tuple[Collection, ...] = (NODES, PODS, *OBJECTS)

#: Workload-aware scheduling (alpha, behind the GenericWorkload gate): upstream's PodGroups (not
#: Workloads: kube-scheduler 1.36 reads only the groups, and its role grants only them). Optional: an
#: API server without the alpha API serves none.
POD_GROUPS = Collection(lookup("scheduling.k8s.io", "PodGroup"), optional=True)
#: scheduler-plugins' Coscheduling PodGroup, adapted (behind GangScheduling); a CRD the cluster may
#: lack, and kube-scheduler's role does not grant.
COSCHEDULING_POD_GROUPS = Collection(
    lookup("scheduling.x-k8s.io", "PodGroup"), optional=True, name="CoschedulingPodGroup"
)


def pod_group_collections(workloads: bool, coscheduling: bool) -> tuple[Collection, ...]:
    """The pod-group collections to read: upstream's with the GenericWorkload gate, plus
    Coscheduling's with GangScheduling (the gates are the caller's to read)."""
    if not workloads:
        return ()
    return (POD_GROUPS, *((COSCHEDULING_POD_GROUPS,) if coscheduling else ()))
