"""A pod's ResourceClaims (upstream ``resourceclaim`` helpers and the plugin's ``claimStore``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from ksched.api.core import Pod, PodResourceClaim
from ksched.api.resource import ResourceClaim, ResourceClaimConsumerReference


class ClaimError(Exception):
    """A claim the pod needs is missing, being deleted, or not the pod's: it cannot be scheduled now."""


def claim_name(pod: Pod, pod_claim: PodResourceClaim) -> tuple[str | None, bool]:
    """Upstream ``resourceclaim.Name``: (the claim's name, whether the pod must own it). The name is
    None for a template whose claim the controller decided not to create."""
    if pod_claim.resource_claim_name is not None:
        return pod_claim.resource_claim_name, False
    if pod_claim.resource_claim_template_name is not None:
        for status in pod.status.resource_claim_statuses:
            if status.name == pod_claim.name:
                return status.resource_claim_name, True
        raise ClaimError(f'pod "{pod.metadata.namespace}/{pod.metadata.name}": ResourceClaim not created yet')
    raise ClaimError(
        f'pod "{pod.metadata.namespace}/{pod.metadata.name}", spec.resourceClaim "{pod_claim.name}": '
        "none of the supported fields are set"
    )


def check_owner(pod: Pod, claim: ResourceClaim) -> None:
    """Upstream ``resourceclaim.IsForPod`` (without PodGroups): the pod must be the claim's controller."""
    meta, pod_meta = claim.metadata, pod.metadata
    if meta.namespace != pod_meta.namespace:
        raise ClaimError(
            f"ResourceClaim {meta.namespace}/{meta.name} is not in the same namespace as Pod "
            f"{pod_meta.namespace}/{pod_meta.name}"
        )
    if not any(ref.controller and ref.uid == pod_meta.uid for ref in meta.owner_references):
        raise ClaimError(
            f"ResourceClaim {meta.namespace}/{meta.name} was not created for Pod "
            f"{pod_meta.namespace}/{pod_meta.name} (Pod is not owner)"
        )


def pod_claim_names(pod: Pod) -> list[tuple[str, str, bool]]:
    """(pod claim name, ResourceClaim name, whether the pod must own it) for each claim the pod uses;
    ClaimError when a template's claim was not generated yet."""
    out = []
    for pod_claim in pod.spec.resource_claims:
        name, must_own = claim_name(pod, pod_claim)
        if name is not None:
            out.append((pod_claim.name, name, must_own))
    return out


def pod_claims(pod: Pod, claims: Mapping[str, ResourceClaim]) -> list[tuple[str, ResourceClaim]]:
    """Upstream ``foreachPodResourceClaim``: (pod claim name, claim) for each claim that exists;
    ClaimError for a missing claim, one being deleted, or one another pod owns."""
    found = []
    namespace = pod.metadata.namespace
    for pod_claim_name, name, must_own in pod_claim_names(pod):
        claim = claims.get(f"{namespace}/{name}")
        if claim is None:
            raise ClaimError(f'could not find ResourceClaim "{namespace}/{name}"')
        if claim.metadata.deletion_timestamp is not None:
            raise ClaimError(f'resourceclaim "{claim.metadata.name}" is being deleted')
        if must_own:
            check_owner(pod, claim)
        found.append((pod_claim_name, claim))
    return found


def is_reserved_for(pod: Pod, claim: ResourceClaim) -> bool:
    return any(ref.uid == pod.metadata.uid for ref in claim.status.reserved_for)


def pod_reference(pod: Pod) -> ResourceClaimConsumerReference:
    """The ``reservedFor`` entry of a pod."""
    return ResourceClaimConsumerReference(resource="pods", name=pod.metadata.name, uid=pod.metadata.uid)


def is_sub_request_ref(request: str) -> bool:
    return request.count("/") == 1


@dataclass
class ClaimStore:
    """The pod's claims in ``spec.resourceClaims`` order, as read in PreFilter (and replaced by
    PreBind's updates), then the pod's extended-resource claim if it has one (upstream
    ``claimStore``): ``num_user_owned`` counts the others."""

    claims: list[ResourceClaim] = field(default_factory=list)
    num_user_owned: int = -1
    #: the extended-resource claim's uid as PreFilter saw it (its in-flight key; PreBind's creation
    #: gives the claim another)
    initial_extended_uid: str = ""

    def __post_init__(self) -> None:
        if self.num_user_owned < 0:
            self.num_user_owned = len(self.claims)

    @classmethod
    def of(cls, user_claims: list[ResourceClaim], extended: ResourceClaim | None) -> ClaimStore:
        if extended is None:
            return cls(list(user_claims))
        return cls([*user_claims, extended], len(user_claims), extended.metadata.uid)

    def __len__(self) -> int:
        return len(self.claims)

    def empty(self) -> bool:
        return not self.claims

    def all(self) -> Iterator[tuple[int, ResourceClaim]]:
        return enumerate(self.claims)

    def all_user_claims(self) -> Iterator[tuple[int, ResourceClaim]]:
        return enumerate(self.claims[: self.num_user_owned])

    def to_allocate(self) -> Iterator[tuple[int, ResourceClaim]]:
        """Claims without an allocation, with their index among all claims."""
        return ((i, c) for i, c in enumerate(self.claims) if c.status.allocation is None)

    @property
    def extended_index(self) -> int | None:
        """The extended-resource claim's index, None when the pod has none."""
        return self.num_user_owned if self.num_user_owned < len(self.claims) else None

    def extended(self) -> ResourceClaim | None:
        """The pod's extended-resource claim, if any."""
        index = self.extended_index
        return None if index is None else self.claims[index]

    def no_user_claim(self) -> bool:
        return self.num_user_owned == 0


def claim_summary(claim: ResourceClaim) -> dict[str, object]:
    """``{"node", "devices"}`` of an allocated claim: the node its allocation is restricted to (by a
    ``metadata.name`` field selector) and its devices as ``driver/pool/device``, sorted."""
    allocation = claim.status.allocation
    if allocation is None:
        return {"node": None, "devices": []}
    node = None
    selector = allocation.node_selector
    if selector is not None:
        for term in selector.node_selector_terms:
            for req in term.match_fields:
                if req.key == "metadata.name" and req.operator == "In" and len(req.values) == 1:
                    node = req.values[0]
    devices = sorted(f"{r.driver}/{r.pool}/{r.device}" for r in allocation.devices.results)
    return {"node": node, "devices": devices}
