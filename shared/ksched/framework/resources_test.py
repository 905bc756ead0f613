"""non_zero_requests: skipping the recomputation when every container requests cpu and memory gives
the same numbers as applying the defaults (property test over container shapes)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.framework.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    MEMORY,
    non_zero_requests,
    pod_requests,
)
from ksched.framework.testing import make_pod

_requests = st.dictionaries(
    st.sampled_from([CPU, MEMORY, "ephemeral-storage"]),
    st.sampled_from(["0", "1", "100m", "250m", "64Mi", "1Gi"]),
    max_size=3,
)


def _container(name: str, requests: dict[str, str], restart_always: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "x", "resources": {"requests": requests}}
    if restart_always:
        c["restartPolicy"] = "Always"
    return c


def _reference(pod: Any) -> tuple[int, int]:
    """The definition: defaults for what a container leaves out, unless pod-level requests set it."""
    requests = pod_requests(pod)
    level = pod.spec.resources.requests if pod.spec.resources is not None else {}
    if not any(n in level for n in (CPU, MEMORY)):
        defaults = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}
    else:
        defaults = {
            n: d
            for n, d in ((CPU, DEFAULT_MILLI_CPU_REQUEST), (MEMORY, DEFAULT_MEMORY_REQUEST))
            if n not in requests
        }
    non0 = pod_requests(pod, defaults) if defaults else requests
    return non0.get(CPU, 0), non0.get(MEMORY, 0)


@settings(max_examples=300, deadline=None)
@given(
    apps=st.lists(_requests, min_size=1, max_size=3),
    inits=st.lists(st.tuples(_requests, st.booleans()), max_size=2),
    pod_level=st.one_of(st.none(), _requests),
)
def test_non_zero_requests_match_the_defaulted_computation(
    apps: list[dict[str, str]], inits: list[tuple[dict[str, str], bool]], pod_level: dict[str, str] | None
) -> None:
    spec = {"resources": {"requests": pod_level}} if pod_level is not None else None
    pod = make_pod(
        containers=[_container(f"c{i}", r) for i, r in enumerate(apps)],
        init_containers=[_container(f"i{i}", r, always) for i, (r, always) in enumerate(inits)],
        spec=spec,
    )
    assert non_zero_requests(pod, pod_requests(pod)) == _reference(pod)


def test_containers_with_both_requests_keep_them() -> None:
    pod = make_pod(requests={CPU: "250m", MEMORY: "64Mi"})
    assert non_zero_requests(pod, pod_requests(pod)) == (250, 64 * 1024 * 1024)


def test_a_container_without_memory_gets_the_default_for_it() -> None:
    pod = make_pod(containers=[_container("a", {CPU: "250m", MEMORY: "64Mi"}), _container("b", {CPU: "1"})])
    assert non_zero_requests(pod, pod_requests(pod)) == (1250, 64 * 1024 * 1024 + DEFAULT_MEMORY_REQUEST)
