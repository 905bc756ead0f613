"""The timestamp fields kubesim decodes (``time_fields``): which, in what order, and what is stored."""

from __future__ import annotations

import copy
from typing import Any

from ksched_kubesim import time_fields
from ksched_kubesim.resources import RESOURCES
from ksched_kubesim.time_fields import DecodeFailure, decode_times, schema_for


def test_every_table_names_a_served_resource() -> None:
    assert set(time_fields._SCHEMAS) <= {rt.key for rt in RESOURCES}


def test_accepted_times_are_stored_in_utc_everywhere_in_a_pod() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "p", "creationTimestamp": None},
        "status": {
            "startTime": "2026-01-01T02:00:00+02:00",
            "conditions": [
                {"type": "Ready", "lastTransitionTime": "2026-01-01T00:00:00.5Z", "lastProbeTime": None}
            ],
            "containerStatuses": [
                {
                    "state": {
                        "terminated": {
                            "startedAt": "2026-01-01T1:00:00Z",
                            "finishedAt": "2026-01-01T00:00:01-00:00",
                        }
                    }
                }
            ],
        },
    }
    assert decode_times("pods", pod) is None
    assert pod["status"]["startTime"] == "2026-01-01T00:00:00Z"
    assert pod["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert pod["status"]["conditions"][0]["lastProbeTime"] is None
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated == {"startedAt": "2026-01-01T01:00:00Z", "finishedAt": "2026-01-01T00:00:01Z"}


def test_zero_time_is_stored_as_null() -> None:
    lease = {
        "spec": {"acquireTime": "0001-01-01T00:00:00.000000Z", "renewTime": "0001-01-01T00:00:00.000001Z"}
    }
    assert decode_times("leases.coordination.k8s.io", lease) is None
    assert lease["spec"] == {"acquireTime": None, "renewTime": "0001-01-01T00:00:00.000001Z"}


def test_the_first_failure_in_document_order_wins_and_nothing_is_changed() -> None:
    event = {
        "lastTimestamp": "2026-01-01T01:00:00+01:00",
        "eventTime": "2026-01-01T00:00:00Z",
        "firstTimestamp": "x",
    }
    before = copy.deepcopy(event)
    failure = decode_times("events", event)
    assert failure is not None and 'cannot parse "Z" as ".000000"' in failure.typed
    assert event == before


def test_a_value_that_is_not_a_string_names_the_go_struct_and_field() -> None:
    pod = {"status": {"conditions": [{"type": "Ready", "lastTransitionTime": 5}]}}
    assert decode_times("pods", pod) == DecodeFailure(
        "json: cannot unmarshal number into Go struct field PodCondition.status.conditions.lastTransitionTime"
        " of type string",
        "json: cannot unmarshal number into Go value of type string",
    )
    pdb = {"status": {"disruptedPods": {"p": True}}}
    failure = decode_times("poddisruptionbudgets.policy", pdb)
    assert failure is not None
    assert failure.typed == (
        "json: cannot unmarshal bool into Go struct field PodDisruptionBudgetStatus.status.disruptedPods"
        " of type string"
    )


def test_maps_of_times_and_nested_templates() -> None:
    pdb = {"status": {"disruptedPods": {"p": "2026-01-01T01:00:00+01:00"}}}
    assert decode_times("poddisruptionbudgets.policy", pdb) is None
    assert pdb["status"]["disruptedPods"] == {"p": "2026-01-01T00:00:00Z"}
    template = {"spec": {"template": {"metadata": {"creationTimestamp": "bad"}}}}
    failure = decode_times("replicasets.apps", template)
    assert failure is not None and failure.typed.startswith('parsing time "bad"')


def test_unknown_shapes_are_left_to_other_checks() -> None:
    """A status that is not an object, a list of non-objects: not this module's business."""
    assert decode_times("pods", {"status": "x", "metadata": {"managedFields": ["x"]}}) is None
    assert "creationTimestamp" in schema_for("csidrivers.storage.k8s.io")["metadata"]  # type: ignore[operator]
