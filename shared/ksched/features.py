"""Feature gates as kube-scheduler 1.36 reads them (component-base ``featuregate``): the gates ksched
honours, their 1.36 defaults and dependencies, and upstream's ``--feature-gates`` syntax.

    gates = FeatureGates.parse("GenericWorkload=true,GangScheduling=true")
    gates.enabled(GANG_SCHEDULING)

Every service and ``ksched simulate`` take ``--feature-gates`` (and ``KSCHED_FEATURE_GATES``);
docs/gang.md and docs/dra.md list what each gate turns on; locked gates (GA) refuse any other
value, as upstream.
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
DYNAMIC_RESOURCE_ALLOCATION = "DynamicResourceAllocation"
DRA_ADMIN_ACCESS = "DRAAdminAccess"
DRA_CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
DRA_DEVICE_BINDING_CONDITIONS = "DRADeviceBindingConditions"
DRA_DEVICE_TAINTS = "DRADeviceTaints"
DRA_EXTENDED_RESOURCE = "DRAExtendedResource"
DRA_PARTITIONABLE_DEVICES = "DRAPartitionableDevices"
DRA_PRIORITIZED_LIST = "DRAPrioritizedList"
DRA_RESOURCE_CLAIM_DEVICE_STATUS = "DRAResourceClaimDeviceStatus"
DRA_SCHEDULER_FILTER_TIMEOUT = "DRASchedulerFilterTimeout"

ENVIRONMENT = "KSCHED_FEATURE_GATES"
"""The environment variable holding the gates when ``--feature-gates`` is not given."""


ALPHA = "Alpha"
BETA = "Beta"
GA = "GA"


@dataclass(frozen=True, slots=True)
class GateSpec:
    """A gate's 1.36 spec: default, dependencies, stage, and whether it is locked to its default."""

    default: bool
    depends_on: tuple[str, ...] = ()
    stage: str = ALPHA
    locked: bool = False


_DRA = (DYNAMIC_RESOURCE_ALLOCATION,)

#: the gates ksched reads, with upstream's 1.36 specs and dependencies
#: (pkg/features/kube_features.go: defaultVersionedKubernetesFeatureGates, featureDependencies)
KNOWN: dict[str, GateSpec] = {
    GENERIC_WORKLOAD: GateSpec(False),
    GANG_SCHEDULING: GateSpec(False, (GENERIC_WORKLOAD,)),
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: GateSpec(False, (GENERIC_WORKLOAD,)),
    WORKLOAD_AWARE_PREEMPTION: GateSpec(False, (GANG_SCHEDULING,)),
    DYNAMIC_RESOURCE_ALLOCATION: GateSpec(True, stage=GA, locked=True),
    DRA_ADMIN_ACCESS: GateSpec(True, _DRA, GA, locked=True),
    DRA_CONSUMABLE_CAPACITY: GateSpec(True, _DRA, BETA),
    DRA_DEVICE_BINDING_CONDITIONS: GateSpec(True, (*_DRA, DRA_RESOURCE_CLAIM_DEVICE_STATUS), BETA),
    DRA_DEVICE_TAINTS: GateSpec(True, _DRA, BETA),
    DRA_EXTENDED_RESOURCE: GateSpec(True, _DRA, BETA),
    DRA_PARTITIONABLE_DEVICES: GateSpec(True, _DRA, BETA),
    DRA_PRIORITIZED_LIST: GateSpec(True, _DRA, GA),
    # no dependency: upstream's "soft dependency" on DynamicResourceAllocation
    DRA_RESOURCE_CLAIM_DEVICE_STATUS: GateSpec(True, stage=BETA),
    DRA_SCHEDULER_FILTER_TIMEOUT: GateSpec(True, _DRA, BETA),
}


def _go_bool(value: bool) -> str:
    return "true" if value else "false"


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
        errors: list[str] = []
        for name, value in (overrides or {}).items():
            spec = KNOWN.get(name)
            if spec is None:
                log.warning("unrecognized feature gate: %s", name)
                continue
            if spec.locked and value != spec.default:
                errors.append(
                    f"cannot set feature gate {name} to {_go_bool(value)}, "
                    f"feature is locked to {_go_bool(spec.default)}"
                )
                continue
            if spec.stage == GA:
                log.warning(
                    "setting GA feature gate %s=%s. It will be removed in a future release.",
                    name,
                    _go_bool(value),
                )
            enabled[name] = value
        if not errors:
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
