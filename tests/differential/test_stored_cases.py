"""Every regression case of ``tests/differential/cases`` (written by ``ksched differential`` when ksched
disagreed with the real kube-scheduler) replayed through ``ksched simulate``: a ``fixed`` case must
agree; an ``open`` one is an expected failure until it agrees, and then must be marked ``fixed``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ksched.differential.compare import agrees, as_scheduled, compare
from ksched.differential.replay import replay, replay_groups, replay_steps
from ksched.differential.run import compare_members, tried_alone
from ksched.differential.store import FIXED, OPEN, Stored, read_cases

CASES = Path(__file__).parent / "cases"
STORED = read_cases(CASES)


def differences(case: Stored) -> list[str]:
    objects = yaml.safe_load(case.cluster.read_text())["items"]
    answers = case.expected["pods"]
    if any("podGroup" in a for a in answers):  # a gang: its members by position, with the gates on
        members = compare_members(answers, replay_groups(objects, case.profile(), answers))
        return [f"{m.golden['pod']}: {d}" for m in members if not m.agrees for d in m.diffs]
    if case.steps is not None:  # a sequence: each pod on the cluster of the step that tried it
        steps = yaml.safe_load(case.steps.read_text())
        ours = replay_steps(objects, steps, case.profile())
        alone = tried_alone(steps)
        answers = [a for a in answers if a["pod"] in alone]
    else:
        ours = replay(objects, case.profile(), answers)
    out = []
    for golden in answers:
        checks, diffs = compare(as_scheduled(golden), ours.get(golden["pod"]))
        if not agrees(checks):
            out += [f"{golden['pod']}: {d}" for d in diffs]
    return out


@pytest.mark.parametrize("case", STORED, ids=[c.name for c in STORED])
def test_stored_case(case: Stored) -> None:
    assert case.status in (OPEN, FIXED), f"{case.name}: status must be {OPEN!r} or {FIXED!r}"
    found = differences(case)
    if case.status == FIXED:
        assert not found, f"{case.name} disagrees with the real kube-scheduler again:\n" + "\n".join(found)
    elif found:
        pytest.xfail(f"{case.name}: open disagreement: {found[0]}")
    else:
        pytest.fail(f"{case.name} agrees now: set its status to {FIXED!r} in {case.name}.expected.json")


def test_the_folder_has_cases() -> None:
    assert STORED, f"{CASES}: no regression cases"
