"""The material in ``../shared`` beside the checkout, for tests: where it is, and the recorded upstream
scenarios of ``fidelity-public`` loaded exactly as ``ksched simulate`` loads them (the scenario's own
``NNN.config.yaml`` or the folder's ``default-config.yaml``).

Tests never name an absolute path: the folder is ``<checkout>/../shared`` (``KSCHED_SHARED_DIR`` overrides
it). A test whose material is absent is skipped with a message naming the folder; with
``KSCHED_REQUIRE_SHARED=1`` (set by ``.ci/run``) it fails instead, so CI cannot pass on a missing folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, NoReturn

import pytest

from ksched.api.base import K8s
from ksched.api.core import Pod
from ksched.api.files import load_objects
from ksched.config import load_config
from ksched.config.profile import build_frameworks
from ksched.config.types import KubeSchedulerConfiguration
from ksched.framework.runtime import Framework
from ksched.simulate.cluster import Cluster, build_cluster

CHECKOUT = Path(__file__).resolve().parents[1]
SHARED_ENV = "KSCHED_SHARED_DIR"
REQUIRE_ENV = "KSCHED_REQUIRE_SHARED"
FIDELITY = "fidelity-public"
#: categories whose pending pods use what ksched does not implement yet, with the reason
UNSUPPORTED_CATEGORIES: dict[str, str] = {}


def shared_dir() -> Path:
    """``../shared`` beside the checkout, or ``$KSCHED_SHARED_DIR``."""
    return Path(os.environ.get(SHARED_ENV) or CHECKOUT.parent / "shared")


def missing(path: Path) -> NoReturn:
    """Skip (fail under ``KSCHED_REQUIRE_SHARED``) a test whose material at ``path`` is absent."""
    text = f"{path} is absent: the material is expected in ../shared beside the checkout (or ${SHARED_ENV})"
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(text)
    pytest.skip(text)


def material(*parts: str) -> Path:
    """The path of ``../shared/<parts>``; skips or fails the calling test when it is absent."""
    path = shared_dir().joinpath(*parts)
    if not path.exists():
        missing(path)
    return path


def scenario_ids(
    directory: Path | None = None, keep: Callable[[dict[str, Any]], bool] | None = None
) -> list[Any]:
    """Parameters for a test over the scenarios of ``directory`` whose golden ``keep`` accepts.

    When the folder is absent there is one parameter, which skips (or fails) naming the folder, so a
    missing folder is never a silently empty parametrization.
    """
    folder = directory or shared_dir() / FIDELITY
    if not folder.is_dir():
        return [pytest.param(None, id="absent")]  # load_scenario(None) skips or fails naming the folder
    out = []
    for path in sorted(folder.glob("*.expected.json")):
        if keep is None or keep(json.loads(path.read_text())):
            out.append(path.name.split(".")[0])
    return out


def in_categories(*categories: str) -> Callable[[dict[str, Any]], bool]:
    """A ``keep`` for :func:`scenario_ids`: goldens in any of ``categories``."""
    return lambda golden: bool(set(categories) & set(golden.get("categories", [])))


@dataclass
class Scenario:
    """One recorded scenario: its objects, golden, configuration and the frameworks built from them."""

    directory: Path
    sid: str

    @cached_property
    def golden(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.directory / f"{self.sid}.expected.json").read_text())
        return data

    @cached_property
    def objects(self) -> list[K8s]:
        return load_objects(self.directory / f"{self.sid}.yaml", skipped=[])

    @property
    def config_path(self) -> Path:
        own = self.directory / f"{self.sid}.config.yaml"
        return own if own.exists() else self.directory / "default-config.yaml"

    @cached_property
    def config(self) -> KubeSchedulerConfiguration:
        return load_config(self.config_path)

    @cached_property
    def cluster(self) -> Cluster:
        return build_cluster(self.objects, [p.scheduler_name or "" for p in self.config.profiles])

    @cached_property
    def frameworks(self) -> dict[str, Framework]:
        return build_frameworks(self.config, self.cluster.snapshot)

    @property
    def pod(self) -> Pod:
        """The pending pod the golden decides."""
        return next(
            p
            for p in self.cluster.pending
            if f"{p.metadata.namespace}/{p.metadata.name}" == self.golden["pod"]
        )

    @property
    def framework(self) -> Framework:
        return self.frameworks[self.pod.spec.scheduler_name or ""]

    def weight(self, plugin: str) -> int:
        """The plugin's score weight in the pod's profile (0: not a score plugin there)."""
        return self.framework.score_weights.get(plugin, 0)

    def skip_if_unsupported(self) -> None:
        for category in self.golden.get("categories", []):
            if category in UNSUPPORTED_CATEGORIES:
                pytest.skip(f"scenario {self.sid}: {UNSUPPORTED_CATEGORIES[category]}")


def load_scenario(sid: str | None, directory: Path | None = None) -> Scenario:
    """The scenario ``sid`` of ``directory`` (default ``../shared/fidelity-public``)."""
    folder = directory or shared_dir() / FIDELITY
    if sid is None or not folder.is_dir():
        missing(folder)
    return Scenario(folder, sid)
