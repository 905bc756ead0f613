"""``ksched simulate --compare-config OLD NEW``: the pods two configurations decide differently."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
from rich.text import Text

from ksched.simulate.output import decision, exported, text_console, titled_table
from ksched.simulate.runner import PodOutcome


@dataclass(frozen=True)
class Difference:
    """One pod's outcome under the old and the new configuration (None: not pending under it)."""

    pod: str
    old: PodOutcome | None
    new: PodOutcome | None


def _verdict(o: PodOutcome | None) -> tuple[object, ...] | None:
    """What counts as the decision: the node, or the gate, or the nomination and its victims."""
    if o is None:
        return None
    return (o.node, o.gated_by, o.nominated, tuple(o.victims or ()), o.error is not None)


def differences(old: Sequence[PodOutcome], new: Sequence[PodOutcome]) -> list[Difference]:
    """The pods decided differently, in the old run's order, then pods only the new run had."""
    old_by_pod = {o.pod: o for o in old}
    new_by_pod = {o.pod: o for o in new}
    pods = [o.pod for o in old] + [o.pod for o in new if o.pod not in old_by_pod]
    return [
        Difference(pod, old_by_pod.get(pod), new_by_pod.get(pod))
        for pod in pods
        if _verdict(old_by_pod.get(pod)) != _verdict(new_by_pod.get(pod))
    ]


def to_json(diffs: Sequence[Difference], old_name: str, new_name: str, pods: int) -> bytes:
    doc = {
        "old": old_name,
        "new": new_name,
        "pods": pods,
        "differences": [
            {
                "pod": d.pod,
                "old": d.old.to_json() if d.old else None,
                "new": d.new.to_json() if d.new else None,
            }
            for d in diffs
        ],
    }
    return msgspec.json.format(msgspec.json.encode(doc), indent=2)


def _cell(o: PodOutcome | None) -> str:
    if o is None:
        return "(not pending)"
    said = decision(o)
    return f"{said}: {o.message}" if o.message and not o.node else said


def to_table(
    diffs: Sequence[Difference], old_name: str, new_name: str, pods: int, width: int | None = None
) -> str:
    """One row per pod decided differently, then how many of ``pods`` that is."""
    console = text_console(width)
    if diffs:
        table = titled_table(f"pods decided differently by {old_name} and {new_name}")
        table.add_column("pod")
        table.add_column(f"old: {old_name}", overflow="fold")
        table.add_column(f"new: {new_name}", overflow="fold")
        for d in diffs:
            table.add_row(d.pod, _cell(d.old), _cell(d.new))
        console.print(table)
    console.print(Text(f"{len(diffs)} of {pods} pending pod(s) decided differently"))
    return exported(console)
