from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from ksched.metrics.metric_children import Children


def test_children_are_the_labelled_children_looked_up_once() -> None:
    counter = Counter("c_total", "test", ["a", "b"], registry=CollectorRegistry())
    children = Children(counter)
    children("x", "y").inc()
    children("x", "y").inc(2)
    assert children("x", "y") is counter.labels("x", "y")
    assert counter.labels(a="x", b="y")._value.get() == 3
    assert children("x", "z") is not children("x", "y")
