"""Extended resources backed by DRA: the special claim's requests and mappings, ported from upstream
``extendeddynamicresources_test.go`` (Test_createRequestsAndMappings_requests and _mappings), and the
DeviceClass resolver (upstream ``extendedresourcecache``)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.core import Pod
from ksched.api.kinds import convert
from ksched.api.resource import DeviceClass
from ksched.plugins.dynamicresources.extended import (
    DEVICE_CLASS_PREFIX,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    SPECIAL_CLAIM_NAME,
    DeviceClassResolver,
    find_extended_resource_claim,
    is_dra_extended_resource_name,
    mapped_extended_resources,
    new_special_claim,
    requests_and_mappings,
    resolver_for,
)
from ksched.plugins.dynamicresources.testing import claim

GPU = "example.com/gpu"
GPU1 = GPU + "1"
GPU_INIT = GPU + "init"
IMPLICIT_INIT = DEVICE_CLASS_PREFIX + "classInit"


class PodBuilder:
    """upstream ``st.MakePod()``'s Res/InitReq/SidecarReq: containers con<N>, init-con<N>, sidecar-con<N>."""

    def __init__(self) -> None:
        self.containers: list[dict[str, Any]] = []
        self.init: list[dict[str, Any]] = []

    def res(self, requests: dict[str, str]) -> PodBuilder:
        self.containers.append({"name": f"con{len(self.containers)}", "resources": {"requests": requests}})
        return self

    def init_req(self, requests: dict[str, str]) -> PodBuilder:
        self.init.append({"name": f"init-con{len(self.init)}", "resources": {"requests": requests}})
        return self

    def sidecar_req(self, requests: dict[str, str]) -> PodBuilder:
        self.init.append(
            {
                "name": f"sidecar-con{len(self.init)}",
                "resources": {"requests": requests},
                "restartPolicy": "Always",
            }
        )
        return self

    def obj(self) -> Pod:
        spec: dict[str, Any] = {"containers": self.containers}
        if self.init:
            spec["initContainers"] = self.init
        return convert(
            {"metadata": {"name": "my-pod", "namespace": "default", "uid": "1234"}, "spec": spec}, Pod
        )


def dclass(name: str, extended: str | None = None, created: str | None = None) -> DeviceClass:
    meta: dict[str, Any] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    spec = {"extendedResourceName": extended} if extended else {}
    return convert({"metadata": meta, "spec": spec}, DeviceClass)


POD1 = PodBuilder().res({GPU: "1", GPU1: "2"}).obj()
POD2 = PodBuilder().res({GPU: "1"}).res({GPU1: "2"}).obj()
POD_INIT = PodBuilder().res({GPU: "1"}).init_req({GPU_INIT: "2"}).obj()
POD_INIT2 = PodBuilder().res({GPU: "1"}).init_req({GPU_INIT: "1"}).init_req({GPU_INIT: "2"}).obj()
POD_INIT3 = (
    PodBuilder()
    .res({GPU: "1"})
    .init_req({GPU_INIT: "1"})
    .sidecar_req({GPU_INIT: "1"})
    .init_req({GPU_INIT: "2"})
    .obj()
)
POD1_INIT_IMPLICIT = PodBuilder().init_req({GPU_INIT: "1", IMPLICIT_INIT: "2"}).obj()
POD_INIT_IMPLICIT = (
    PodBuilder().res({GPU: "1"}).init_req({GPU_INIT: "1"}).init_req({IMPLICIT_INIT: "2"}).obj()
)

RES = {GPU: 1}
RES2 = {GPU: 1, GPU1: 2}
RES_INIT = {GPU: 1, GPU_INIT: 2}
RES_INIT_IMPLICIT = {GPU: 1, GPU_INIT: 2, IMPLICIT_INIT: 2}
DEV_MAP = DeviceClassResolver([dclass("class", GPU)])
DEV_MAP2 = DeviceClassResolver([dclass("class", GPU), dclass("class1", GPU1)])
DEV_MAP_INIT = DeviceClassResolver([dclass("class", GPU), dclass("classInit", GPU_INIT)])


@pytest.mark.parametrize(
    ("pod", "extended", "resolver", "want"),
    [
        pytest.param(POD1, {}, DeviceClassResolver(), [], id="nil"),
        pytest.param(POD1, RES, DEV_MAP, [("container-0-request-0", "class", 1)], id="one resource match"),
        pytest.param(
            POD1,
            RES2,
            DEV_MAP,
            [("container-0-request-0", "class", 1)],
            id="one resource match, one resource not match",
        ),
        pytest.param(
            POD1,
            RES2,
            DEV_MAP2,
            [("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)],
            id="two resources match",
        ),
        pytest.param(
            POD2,
            RES2,
            DEV_MAP2,
            [("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)],
            id="two containers match",
        ),
        pytest.param(
            POD_INIT,
            RES_INIT,
            DEV_MAP_INIT,
            [("container-0-request-0", "classInit", 2), ("container-1-request-0", "class", 1)],
            id="one init container, one regular container",
        ),
        pytest.param(
            POD_INIT2,
            RES_INIT,
            DEV_MAP_INIT,
            [("container-1-request-0", "classInit", 2), ("container-2-request-0", "class", 1)],
            id="two init containers, one regular container",
        ),
        pytest.param(
            POD_INIT3,
            RES_INIT,
            DEV_MAP_INIT,
            [
                ("container-1-request-0", "classInit", 1),
                ("container-2-request-0", "classInit", 2),
                ("container-3-request-0", "class", 1),
            ],
            id="three init containers, one sidecar, one regular container",
        ),
    ],
)
def test_requests(pod: Pod, extended: dict[str, int], resolver: DeviceClassResolver, want: list[Any]) -> None:
    requests, _ = requests_and_mappings(pod, extended, resolver)
    got = []
    for r in requests:
        assert r.exactly is not None and r.exactly.allocation_mode == "ExactCount"
        got.append((r.name, r.exactly.device_class_name, r.exactly.count))
    assert got == want


@pytest.mark.parametrize(
    ("pod", "extended", "resolver", "want"),
    [
        pytest.param(
            POD1,
            RES2,
            DEV_MAP2,
            [("container-0-request-0", "con0", GPU), ("container-0-request-1", "con0", GPU1)],
            id="one container, two requests",
        ),
        pytest.param(
            POD1_INIT_IMPLICIT,
            RES_INIT_IMPLICIT,
            DEV_MAP_INIT,
            [
                ("container-0-request-0", "init-con0", IMPLICIT_INIT),
                ("container-0-request-1", "init-con0", GPU_INIT),
            ],
            id="one container, one explicit and one implicit request",
        ),
        pytest.param(
            POD2,
            RES2,
            DEV_MAP2,
            [("container-0-request-0", "con0", GPU), ("container-1-request-0", "con1", GPU1)],
            id="two containers, two requests",
        ),
        pytest.param(
            POD_INIT,
            RES_INIT,
            DEV_MAP_INIT,
            [("container-0-request-0", "init-con0", GPU_INIT), ("container-1-request-0", "con0", GPU)],
            id="one init container, one regular container, one request",
        ),
        pytest.param(
            POD_INIT2,
            RES_INIT,
            DEV_MAP_INIT,
            [
                ("container-1-request-0", "init-con0", GPU_INIT),
                ("container-1-request-0", "init-con1", GPU_INIT),
                ("container-2-request-0", "con0", GPU),
            ],
            id="three containers (two are init container), two requests",
        ),
        pytest.param(
            POD_INIT_IMPLICIT,
            RES_INIT_IMPLICIT,
            DEV_MAP_INIT,
            [
                ("container-0-request-0", "init-con0", GPU_INIT),
                ("container-1-request-0", "init-con1", IMPLICIT_INIT),
                ("container-2-request-0", "con0", GPU),
            ],
            id="three containers (two are init container), both explicit and implicit resources",
        ),
        pytest.param(
            POD_INIT3,
            RES_INIT,
            DEV_MAP_INIT,
            [
                ("container-1-request-0", "init-con0", GPU_INIT),
                ("container-1-request-0", "sidecar-con1", GPU_INIT),
                ("container-2-request-0", "init-con2", GPU_INIT),
                ("container-3-request-0", "con0", GPU),
            ],
            id="four containers (two are init container, one sidecar), three requests",
        ),
    ],
)
def test_mappings(pod: Pod, extended: dict[str, int], resolver: DeviceClassResolver, want: list[Any]) -> None:
    _, mappings = requests_and_mappings(pod, extended, resolver)
    got = sorted((m.request_name, m.container_name, m.resource_name) for m in mappings)
    assert got == want


# --- the resolver (upstream extendedresourcecache) ------------------------------------------------


def test_every_class_backs_its_implicit_name_and_its_explicit_one() -> None:
    resolver = DeviceClassResolver([dclass("gpu", "example.com/gpu"), dclass("nic")])
    assert resolver.get("example.com/gpu") is resolver.get(DEVICE_CLASS_PREFIX + "gpu") is not None
    assert resolver.get(DEVICE_CLASS_PREFIX + "nic") is not None
    assert resolver.get("example.com/nic") is None


def test_the_newest_class_wins_a_shared_name_and_a_loser_maps_nothing() -> None:
    older = dclass("a-old", GPU, "2025-01-01T00:00:00Z")
    newer = dclass("b-new", GPU, "2025-06-01T00:00:00Z")
    resolver = DeviceClassResolver([newer, older])
    assert resolver.get(GPU) is newer
    # "a-old" comes first in name order and is displaced; "b-new" first would leave "a-old" unmapped
    assert resolver.get(DEVICE_CLASS_PREFIX + "a-old") is older
    first_newer = DeviceClassResolver(
        [dclass("a-new", GPU, "2025-06-01T00:00:00Z"), dclass("b-old", GPU, "2025-01-01T00:00:00Z")]
    )
    assert first_newer.get(GPU) is not None and first_newer.get(GPU).metadata.name == "a-new"  # type: ignore[union-attr]
    assert first_newer.get(DEVICE_CLASS_PREFIX + "b-old") is None


def test_equal_creation_times_prefer_the_lower_name() -> None:
    same = "2025-01-01T00:00:00Z"
    winner = DeviceClassResolver([dclass("b", GPU, same), dclass("a", GPU, same)]).get(GPU)
    assert winner is not None and winner.metadata.name == "a"


def test_resolver_for_is_rebuilt_when_a_class_changes() -> None:
    classes = {"c": dclass("c")}
    first = resolver_for(classes)
    assert resolver_for(classes) is first
    classes["c"] = dclass("c", GPU)
    assert resolver_for(classes).get(GPU) is not None
    assert resolver_for({}).get(GPU) is None


def test_names_and_mapped_requests() -> None:
    assert is_dra_extended_resource_name("example.com/gpu")
    assert is_dra_extended_resource_name(DEVICE_CLASS_PREFIX + "x")
    assert not is_dra_extended_resource_name("cpu")
    assert not is_dra_extended_resource_name("hugepages-2Mi")
    requests = {"cpu": 100, GPU: 1, GPU1: 0, "example.com/other": 2}
    assert mapped_extended_resources(requests, DEV_MAP2) == {GPU: 1}


def test_the_special_claim_and_finding_a_left_over_one() -> None:
    pod = POD1
    special = new_special_claim(pod)
    meta = special.metadata
    assert meta.name == SPECIAL_CLAIM_NAME and meta.namespace == "default"
    assert meta.generate_name == "my-pod-extended-resources-"
    assert meta.annotations == {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}
    assert [(r.kind, r.name, r.uid, r.controller) for r in meta.owner_references] == [
        ("Pod", "my-pod", "1234", True)
    ]
    assert meta.uid and meta.uid != new_special_claim(pod).metadata.uid
    assert not special.spec.devices.requests
    owned = claim("my-pod-extended-resources-x", namespace="default", owner_uid="1234")
    left = convert(
        {
            "metadata": {
                "name": "my-pod-extended-resources-x",
                "namespace": "default",
                "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": "my-pod", "uid": "1234", "controller": True}
                ],
            }
        },
        type(owned),
    )
    assert find_extended_resource_claim(pod, [owned]) is None  # not annotated (and owner name differs)
    assert find_extended_resource_claim(pod, [owned, left]) is left
