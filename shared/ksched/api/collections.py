"""The API collections the scheduler reads: each kind's list path, the Struct it decodes into, and
the selectors upstream's informers use.

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
from ksched.api.core import (
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    ReplicationController,
    Service,
)
from ksched.api.coscheduling import CoschedulingPodGroup
from ksched.api.kinds import GROUP_KINDS, KINDS
from ksched.api.policy import PodDisruptionBudget
from ksched.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from ksched.api.scheduling import PodGroup
from ksched.api.storage import CSIDriver, CSINode, CSIStorageCapacity, StorageClass
from ksched.api.workloads import ReplicaSet, StatefulSet


@dataclass(frozen=True)
class Collection:
    """What to list(-watch): the collection path (``/api/v1/pods``), its Struct, and selectors."""

    kind: str
    path: str
    struct: type[K8s]
    field_selector: str | None = None
    label_selector: str | None = None
    optional: bool = False
    """A resource the cluster may not serve (an alpha API, a CRD) or the caller may not read (one the
    bootstrap ClusterRoles lack): a 404 or 403 counts as an empty list, retried later."""

    @property
    def api_version(self) -> str:
        """The group/version its path serves: ``v1`` for ``/api/v1/…``, ``apps/v1`` for
        ``/apis/apps/v1/…`` (list items carry no ``apiVersion``/``kind``; a cluster file needs them)."""
        parts = self.path.strip("/").split("/")
        return parts[1] if parts[0] == "api" else f"{parts[1]}/{parts[2]}"

    @property
    def object_kind(self) -> str:
        """The ``kind`` its objects carry (``kind`` may be a name of ours, as for Coscheduling's
        PodGroup next to the native one)."""
        named = [(kind, entry[1]) for kind, entry in KINDS.items()]
        named += [(kind, entry[1]) for (_, kind), entry in GROUP_KINDS.items()]
        for kind, struct in named:
            if struct is self.struct:
                return kind
        raise KeyError(f"{self.kind}: no kind decodes into {self.struct.__name__}")


#: Pods that finished are invisible to the scheduler (upstream's informer field selector).
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"

NODES = Collection("Node", "/api/v1/nodes", Node)
PODS = Collection("Pod", "/api/v1/pods", Pod, field_selector=POD_FIELD_SELECTOR)

#: Every other kind a plugin reads (not PriorityClasses: a pod carries its priority; not
#: ResourceClaimTemplates: kube-controller-manager makes the claims, the scheduler reads those).
OBJECTS: tuple[Collection, ...] = (
    Collection("Namespace", "/api/v1/namespaces", Namespace),
    Collection("Service", "/api/v1/services", Service),
    Collection("ReplicationController", "/api/v1/replicationcontrollers", ReplicationController),
    Collection("PersistentVolume", "/api/v1/persistentvolumes", PersistentVolume),
    Collection("PersistentVolumeClaim", "/api/v1/persistentvolumeclaims", PersistentVolumeClaim),
    Collection("ReplicaSet", "/apis/apps/v1/replicasets", ReplicaSet),
    Collection("StatefulSet", "/apis/apps/v1/statefulsets", StatefulSet),
    Collection("PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets", PodDisruptionBudget),
    Collection("StorageClass", "/apis/storage.k8s.io/v1/storageclasses", StorageClass),
    Collection("CSINode", "/apis/storage.k8s.io/v1/csinodes", CSINode),
    Collection("CSIDriver", "/apis/storage.k8s.io/v1/csidrivers", CSIDriver),
    Collection("CSIStorageCapacity", "/apis/storage.k8s.io/v1/csistoragecapacities", CSIStorageCapacity),
    Collection("DeviceClass", "/apis/resource.k8s.io/v1/deviceclasses", DeviceClass),
    Collection("ResourceSlice", "/apis/resource.k8s.io/v1/resourceslices", ResourceSlice),
    Collection("ResourceClaim", "/apis/resource.k8s.io/v1/resourceclaims", ResourceClaim),
)

#: Everything the scheduler reads, nodes and pods first (pod groups: :func:`pod_group_collections`).
ALL: tuple[Collection, ...] = (NODES, PODS, *OBJECTS)

#: Workload-aware scheduling (alpha, behind the GenericWorkload gate): upstream's PodGroups (not
#: Workloads: kube-scheduler 1.36 reads only the groups, and its role grants only them). Optional: an
#: API server without the alpha API serves none.
POD_GROUPS = Collection("PodGroup", "/apis/scheduling.k8s.io/v1alpha2/podgroups", PodGroup, optional=True)
#: scheduler-plugins' Coscheduling PodGroup, adapted (behind GangScheduling); a CRD the cluster may
#: lack, and kube-scheduler's role does not grant.
COSCHEDULING_POD_GROUPS = Collection(
    "CoschedulingPodGroup",
    "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
    CoschedulingPodGroup,
    optional=True,
)


def pod_group_collections(workloads: bool, coscheduling: bool) -> tuple[Collection, ...]:
    """The pod-group collections to read: upstream's with the GenericWorkload gate, plus
    Coscheduling's with GangScheduling (the gates are the caller's to read)."""
    if not workloads:
        return ()
    return (POD_GROUPS, *((COSCHEDULING_POD_GROUPS,) if coscheduling else ()))
