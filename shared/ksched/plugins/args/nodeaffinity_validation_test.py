"""NodeAffinityArgs validation, ported from upstream ``TestValidateNodeAffinityArgs`` with the full
messages (upstream compares type and field only). A ``[]string`` bad value prints as JSON (``["v"]``,
``null`` for an omitted list): 1.36.2's ``field.Error.ErrorBody`` marshals non-scalar values."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ksched.api.core import NodeAffinity
from ksched.plugins.args.nodeaffinity_validation import validate_node_affinity_args
from ksched.plugins.args.types import NodeAffinityArgs

REQ = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
KEY_REGEX_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def args(raw: dict[str, Any] | None) -> NodeAffinityArgs:
    if raw is None:
        return NodeAffinityArgs()
    return NodeAffinityArgs(added_affinity=msgspec.convert(raw, NodeAffinity))


def required(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": list(exprs)}]
        }
    }


CASES: list[tuple[str, dict[str, Any] | None, list[str]]] = [
    ("empty", None, []),
    (
        "valid added affinity",
        {
            **required({"key": "label-1", "operator": "In", "values": ["label-1-val"]}),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {
                        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]
                    },
                }
            ],
        },
        [],
    ),
    (
        "invalid added affinity",
        {
            **required({"key": "invalid/label/key", "operator": "In", "values": ["label-1-val"]}),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node-1", "node-2"]}
                        ]
                    },
                }
            ],
        },
        [
            REQ + ".nodeSelectorTerms[0].matchExpressions[0].key: "
            'Invalid value: "invalid/label/key": a valid label key must consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
            "'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')",
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values: "
            'Invalid value: ["node-1","node-2"]: must have one element',
        ],
    ),
    (
        "unsupported operator and empty In values",
        required({"key": "a", "operator": "Bogus"}, {"key": "b", "operator": "In"}),
        [
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]."
            'operator: Unsupported value: "Bogus": supported values: "In", "NotIn", "Exists", '
            '"DoesNotExist", "Gt", "Lt"',
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1]."
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ],
    ),
    (
        "Gt needs one integer value that is also a label value",
        required(
            {"key": "n", "operator": "Gt", "values": ["x"]}, {"key": "n", "operator": "Lt", "values": ["-1"]}
        ),
        [
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]."
            "values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer",
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1]."
            'values[0][n]: Invalid value: "-1": a valid label must be an empty string or consist of '
            "alphanumeric "
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyValue',  or "
            "'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ],
    ),
    (
        "Exists with values and a key with an empty name part",
        required({"key": "example.com/", "operator": "Exists", "values": ["v"]}),
        [
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]."
            'key: Invalid value: "example.com/": name part must be non-empty; ' + KEY_REGEX_MSG,
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]."
            'values: Invalid value: ["v"]: values set must be empty for exists and does not exist',
        ],
    ),
    (
        "matchFields operators are In and NotIn only",
        {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {},
                    {"matchFields": [{"key": "metadata.name", "operator": "Exists", "values": ["x"]}]},
                ]
            }
        },
        [
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1].matchFields[0]."
            'operator: Unsupported value: "Exists": supported values: "In", "NotIn"',
        ],
    ),
    (
        "preferred terms with weight 0 are not parsed",
        {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 0,
                    "preference": {
                        "matchExpressions": [{"key": "bad key", "operator": "In", "values": ["a"]}]
                    },
                }
            ]
        },
        [],
    ),
]


@pytest.mark.parametrize(("raw", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate_node_affinity_args(raw: dict[str, Any] | None, want: list[str]) -> None:
    assert validate_node_affinity_args(args(raw), "") == want


def test_path_prefixes_every_message() -> None:
    raw = required({"key": "bad key", "operator": "In", "values": ["a"]})
    (msg,) = validate_node_affinity_args(args(raw), "profiles[0].pluginConfig[1].args")
    assert msg.startswith(
        "profiles[0].pluginConfig[1].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution."
        'nodeSelectorTerms[0].matchExpressions[0].key: Invalid value: "bad key": ' + KEY_REGEX_MSG
    )


def test_none_args_are_valid() -> None:
    assert validate_node_affinity_args(None) == []
