from __future__ import annotations

import prometheus_client
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from ksched.metrics.histogram import Histogram, exponential_buckets

BOUNDS = (0.001, 0.01, 0.1, 1.0)


def _without_created(text: str) -> list[str]:
    return [line for line in text.splitlines() if "_created" not in line]


def test_exponential_buckets_are_upstreams() -> None:
    assert exponential_buckets(0.0001, 2, 12)[-1] == pytest.approx(0.2048)
    assert exponential_buckets(1, 2, 5) == (1, 2, 4, 8, 16)
    with pytest.raises(ValueError, match="factor > 1"):
        exponential_buckets(1, 1, 3)


def test_observations_with_a_multiplicity() -> None:
    registry = CollectorRegistry()
    h = Histogram("x_seconds", "test", ["plugin"], [0.001, 0.01], registry=registry)
    h.labels("a").observe(0.001, 5)  # on a bound: counted in that bucket (le)
    h.labels("a").observe(0.005, 2)
    h.labels("a").observe(1.0)
    h.labels("b").observe(0.5, 0)  # nothing
    text = generate_latest(registry).decode()
    assert 'x_seconds_bucket{le="0.001",plugin="a"} 5.0' in text
    assert 'x_seconds_bucket{le="0.01",plugin="a"} 7.0' in text
    assert 'x_seconds_bucket{le="+Inf",plugin="a"} 8.0' in text
    assert 'x_seconds_count{plugin="a"} 8.0' in text
    assert 'x_seconds_sum{plugin="a"} 1.015' in text
    assert 'x_seconds_count{plugin="b"} 0.0' in text
    assert h.count(("a",)) == 8
    assert h.labels("a") is h.labels("a")


def test_labels_must_match() -> None:
    h = Histogram("y_seconds", "test", ["a"], registry=CollectorRegistry())
    with pytest.raises(ValueError, match="do not match"):
        h.labels("x", "y")
    with pytest.raises(ValueError, match="needs its labels"):
        h.observe(1.0)
    plain = Histogram("z_seconds", "test", registry=CollectorRegistry())
    with pytest.raises(ValueError, match="do not match"):
        plain.labels("x")


def test_a_histogram_without_labels_is_exposed_at_zero() -> None:
    registry = CollectorRegistry()
    Histogram("idle_seconds", "test", buckets=BOUNDS, registry=registry)
    theirs = CollectorRegistry()
    prometheus_client.Histogram("idle_seconds", "test", buckets=BOUNDS, registry=theirs)
    assert _without_created(generate_latest(registry).decode()) == _without_created(
        generate_latest(theirs).decode()
    )


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),
            st.one_of(st.sampled_from(BOUNDS), st.floats(min_value=0, max_value=5, allow_nan=False)),
        ),
        max_size=40,
    )
)
def test_exposed_as_prometheus_clients_histogram(observations: list[tuple[str, float]]) -> None:
    """The same text as prometheus_client's histogram for the same observations (but ``_created``)."""
    ours_registry, theirs_registry = CollectorRegistry(), CollectorRegistry()
    ours = Histogram("t_seconds", "help text", ["k"], BOUNDS, registry=ours_registry)
    theirs = prometheus_client.Histogram(
        "t_seconds", "help text", ["k"], buckets=BOUNDS, registry=theirs_registry
    )
    for label, value in observations:
        ours.labels(label).observe(value)
        theirs.labels(label).observe(value)
    assert _without_created(generate_latest(ours_registry).decode()) == _without_created(
        generate_latest(theirs_registry).decode()
    )
