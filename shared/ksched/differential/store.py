"""Regression cases: a disagreement written down so that ``make test`` replays it without a cluster.

A case ``NAME`` is two or three files in one folder (``tests/differential/cases/``):

* ``NAME.yaml``: a ``kind: List`` of the objects as the API server returned them (the batch's
  namespaces and priority classes, nodes, bound pods, what plugins read, then the pending pods in the
  order they were created): ``ksched simulate --cluster NAME.yaml`` reads it as it is;
* ``NAME.config.yaml`` (only for a non-default profile): the configuration to give ``--config``;
* ``NAME.steps.yaml`` (only for a ``sequences`` case): its timed events as played (``Case.steps``,
  with the objects the API server returned and each tried pod's ``before`` state); ``NAME.yaml`` then
  holds the cluster at the start, and each pod's answer its ``final`` state;
* ``NAME.expected.json``: the real scheduler's answer for each pending pod (``pods``, in the shape of
  the fidelity goldens), ``status`` (``open`` while ksched disagrees, ``fixed`` once it agrees), what
  differed when it was found (``found``, and the failed checks in ``checks``), and where it came from
  (``category``, ``seed``, ``index``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ksched.differential.model import Obj, config_document

OPEN, FIXED = "open", "fixed"


@dataclass
class Stored:
    """One regression case as read from its folder."""

    name: str
    cluster: Path
    config: Path | None
    expected: dict[str, Any]
    steps: Path | None = None

    @property
    def status(self) -> str:
        return str(self.expected.get("status", OPEN))

    @property
    def is_open(self) -> bool:
        return self.status != FIXED

    @property
    def signature(self) -> tuple[str, frozenset[str]]:
        """The category and the checks that failed when it was found (see ``run.signature``)."""
        return str(self.expected.get("category")), frozenset(self.expected.get("checks") or ())

    def profile(self) -> Obj | None:
        if self.config is None:
            return None
        doc = yaml.safe_load(self.config.read_text())
        profiles: list[Obj] = doc.get("profiles") or []
        return profiles[0] if profiles else None


def write_case(
    folder: Path,
    name: str,
    objects: list[Obj],
    profile: Obj | None,
    answers: list[dict[str, Any]],
    found: list[str],
    checks: list[str],
    origin: dict[str, Any],
    steps: list[Obj] | None = None,
) -> Path:
    """Write case ``name`` into ``folder``; returns the path of its ``.expected.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}, sort_keys=False)
    )
    if profile is not None:
        (folder / f"{name}.config.yaml").write_text(
            yaml.safe_dump(config_document([profile], extenders=False), sort_keys=False)
        )
    if steps:
        (folder / f"{name}.steps.yaml").write_text(yaml.safe_dump(steps, sort_keys=False))
    expected = {**origin, "status": OPEN, "checks": checks, "found": found, "pods": answers}
    path = folder / f"{name}.expected.json"
    path.write_text(json.dumps(expected, indent=1, sort_keys=False) + "\n")
    return path


def read_cases(folder: Path) -> list[Stored]:
    """Every case of ``folder``, by name."""
    out = []
    for path in sorted(folder.glob("*.expected.json")):
        name = path.name.removesuffix(".expected.json")
        config = folder / f"{name}.config.yaml"
        steps = folder / f"{name}.steps.yaml"
        out.append(
            Stored(
                name=name,
                cluster=folder / f"{name}.yaml",
                config=config if config.exists() else None,
                expected=json.loads(path.read_text()),
                steps=steps if steps.exists() else None,
            )
        )
    return out
