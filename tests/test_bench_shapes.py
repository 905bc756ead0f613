"""The bench shapes (scheduler_perf pod templates) are valid pods for the API server (kubesim), with
the templates' resources and constraints."""

from __future__ import annotations

import pytest
from ksched_kubesim import KubeSim, KubeSimConfig

from ksched.bench import shapes


@pytest.mark.parametrize("shape", shapes.SHAPES)
async def test_every_shape_is_a_valid_pod_with_the_template_resources(shape: str) -> None:
    async with KubeSim(KubeSimConfig(nodes=1)) as sim:
        sim.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}})
        pod = sim.create(shapes.pod(shape, "p", "b"))
    [container] = pod["spec"]["containers"]
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "500Mi"}
    assert pod["status"]["qosClass"] == "Guaranteed"


def test_spread_and_antiaffinity_carry_their_templates_constraint() -> None:
    [spread] = shapes.pod("spread", "p", "b")["spec"]["topologySpreadConstraints"]
    assert (spread["topologyKey"], spread["whenUnsatisfiable"], spread["maxSkew"]) == (
        "topology.kubernetes.io/zone",
        "DoNotSchedule",
        5,
    )
    anti = shapes.pod("antiaffinity", "p", "b")["spec"]["affinity"]["podAntiAffinity"]
    [term] = anti["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["namespaces"] == ["b"]
    assert "affinity" not in shapes.pod("plain", "p", "b")["spec"]
    with pytest.raises(ValueError, match="unknown shape"):
        shapes.pod("square", "p", "b")


def test_the_dra_bench_places_every_pod_on_its_own_device() -> None:
    from ksched.bench import dra

    result = dra.run(nodes=6, devices=3, init=6, measure=12)
    assert (result.scheduled, result.measured_pods) == (12, 12)  # all 18 devices, none twice
    prefilled = dra.run(nodes=6, devices=3, init=9, measure=9, prefill=True)
    assert prefilled.scheduled == 9  # the prefilled devices are taken: the 9 others, none twice
    with pytest.raises(ValueError, match="more than the 18 devices"):
        dra.run(nodes=6, devices=3, init=10, measure=9)
