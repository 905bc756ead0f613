"""Feature gates as kube-scheduler 1.36 reads them (component-base ``featuregate``): the gates ksched
honours, their 1.36 defaults and dependencies, and upstream's ``--feature-gates`` syntax.

    gates = FeatureGates.parse("GenericWorkload=true,GangScheduling=true")
    gates.enabled(GANG_SCHEDULING)

Every service and ``ksched simulate`` take ``--feature-gates`` (and ``KSCHED_FEATURE_GATES``);
docs/gang.md lists what each gate turns on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

GENERIC_WORKLOAD = "GenericWorkload"
GANG_SCHEDULING = "GangScheduling"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
WORKLOAD_AWARE_PREEMPTION = "WorkloadAwarePreemption"

ENVIRONMENT = "KSCHED_FEATURE_GATES"
"""The environment variable holding the gates when ``--feature-gates`` is not given."""


@dataclass(frozen=True, slots=True)
class GateSpec:
    default: bool
    depends_on: tuple[str, ...] = ()


#: the gates ksched reads, with upstream's 1.36 defaults and dependencies (all alpha;
#: pkg/features/kube_features.go)
KNOWN: dict[str, GateSpec] = {
    GENERIC_WORKLOAD: GateSpec(False),
    GANG_SCHEDULING: GateSpec(False, (GENERIC_WORKLOAD,)),
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: GateSpec(False, (GENERIC_WORKLOAD,)),
    WORKLOAD_AWARE_PREEMPTION: GateSpec(False, (GANG_SCHEDULING,)),
}


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value upstream rejects; the message is upstream's."""


def parse_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool``."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


class FeatureGates:
    """Gate values: upstream's defaults unless overridden. Immutable once built."""

    __slots__ = ("_enabled",)

    def __init__(self, overrides: Mapping[str, bool] | None = None) -> None:
        enabled = {name: spec.default for name, spec in KNOWN.items()}
        for name, value in (overrides or {}).items():
            if name not in KNOWN:
                log.warning("unrecognized feature gate: %s", name)
                continue
            enabled[name] = value
        errors = [
            f"{name} is enabled, but depends on features that are disabled: [{' '.join(missing)}]"
            for name, spec in KNOWN.items()
            if enabled[name] and (missing := [dep for dep in spec.depends_on if not enabled[dep]])
        ]
        if errors:
            raise FeatureGateError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        self._enabled = enabled

    @classmethod
    def parse(cls, text: str) -> FeatureGates:
        """Upstream's flag syntax: ``Name=bool,Name=bool`` (empty items ignored, spaces trimmed)."""
        overrides: dict[str, bool] = {}
        for item in text.split(","):
            if not item:
                continue
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep:
                raise FeatureGateError(f"missing bool value for {key}")
            value = value.strip()
            try:
                overrides[key] = parse_bool(value)
            except ValueError as exc:
                raise FeatureGateError(f"invalid value of {key}={value}, err: {exc}") from None
        return cls(overrides)

    def enabled(self, name: str) -> bool:
        """Whether gate ``name`` is on (KeyError for a gate ksched does not know)."""
        return self._enabled[name]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FeatureGates) and self._enabled == other._enabled

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._enabled.items())))

    def __str__(self) -> str:
        """``Name=true,...`` sorted, the gates that differ from their default only (flag syntax)."""
        changed = sorted((n, v) for n, v in self._enabled.items() if v != KNOWN[n].default)
        return ",".join(f"{n}={str(v).lower()}" for n, v in changed)

    def __repr__(self) -> str:
        return f"FeatureGates({str(self)!r})"


DEFAULT = FeatureGates()
"""Every gate at its 1.36 default."""
