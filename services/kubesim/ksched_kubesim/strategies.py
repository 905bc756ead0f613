"""Per-kind create/update rules: defaulting, admission effects, validation and selectable fields."""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Protocol

from ksched.api.timestamps import rfc3339
from ksched.apimachinery.quantity import canonical_resource_list

from . import errors, events_api, pod_fields, pod_status, pods
from .errors import ApiError, FieldError, forbidden_field, invalid_value, not_supported, required
from .jsonio import JSON
from .pods import ordered
from .resources import ResourceType


class Lookup(Protocol):
    """Read access to the cluster for admission steps that consult other objects."""

    def get_obj(self, key: str, namespace: str, name: str) -> JSON | None: ...

    def list_objs(self, key: str) -> list[JSON]: ...

    def labels_of(self, key: str, namespace: str, name: str) -> dict[str, str] | None: ...


def _dotted(obj: JSON, path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, dict):
            return ""
        value = value.get(part)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _keep_all_but_status(new: JSON, old: JSON) -> None:
    """A /status write changes status (and metadata, per kind): every other field comes from ``old``."""
    for key in list(new):
        if key not in ("metadata", "status", "kind", "apiVersion"):
            del new[key]
    for key, value in old.items():
        if key not in ("metadata", "status"):
            new[key] = value


def _keep_meta(new: JSON, old: JSON, keys: tuple[str, ...]) -> None:
    new_meta, old_meta = new["metadata"], old["metadata"]
    for key in keys:
        if key in old_meta:
            new_meta[key] = old_meta[key]
        else:
            new_meta.pop(key, None)


def _reset_meta_for_status(new: JSON, old: JSON) -> None:
    """ResetObjectMetaForStatus: a /status write cannot change labels, annotations, finalizers, owners."""
    _keep_meta(
        new,
        old,
        ("labels", "annotations", "finalizers", "ownerReferences", "deletionTimestamp", "generation"),
    )


class Strategy:
    """Generic rules; subclasses add what their kind's strategy and admission plugins do."""

    def __init__(self, rt: ResourceType) -> None:
        self.rt = rt

    def fields(self, obj: JSON) -> dict[str, str]:
        meta = obj.get("metadata") or {}
        out = {"metadata.name": meta.get("name", "")}
        if self.rt.namespaced:
            out["metadata.namespace"] = meta.get("namespace", "")
        for path in self.rt.fields:
            out[path] = _dotted(obj, path)
        return out

    def decode_check(self, obj: JSON) -> str | None:
        """A decoding problem (bad quantity...) that the API server reports as 400, if any."""
        return None

    def default(self, obj: JSON) -> None:
        """Scheme defaulting of a created object (what its field manager entry then records)."""

    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        if self.rt.has_status:
            obj.pop("status", None)

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        return []

    def prepare_update(self, new: JSON, old: JSON) -> None:
        """Main-resource update: status is owned by the /status subresource."""
        if self.rt.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)

    def prepare_status_update(self, new: JSON, old: JSON) -> None:
        """/status update: everything but status (and some metadata) is kept from the old object."""
        _keep_all_but_status(new, old)
        _reset_meta_for_status(new, old)

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        return self.validate(new, lookup)

    def validate_status_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        """A /status write's own checks (conditions ...); none by default."""
        return []

    def spec_changed(self, new: JSON, old: JSON) -> bool:
        """Whether the write bumps ``metadata.generation`` (kinds that have one)."""
        return any(new.get(k) != old.get(k) for k in set(new) | set(old) if k not in ("metadata", "status"))

    def normalize(self, obj: JSON) -> None:
        """Shape fixes applied on every write (e.g. condition timestamps serialised as null)."""


# --- pods ------------------------------------------------------------------------------------

NO_PRIORITY_CLASS = "no PriorityClass with name {} was found"


class PodStrategy(Strategy):
    def fields(self, obj: JSON) -> dict[str, str]:
        return pods.selectable_fields(obj)

    def decode_check(self, obj: JSON) -> str | None:
        spec = obj.get("spec")
        return pods.malformed_quantity(spec) if isinstance(spec, dict) else None

    def default(self, obj: JSON) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            obj["spec"] = pods.default_pod_spec(spec)

    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        meta = obj["metadata"]
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
            return
        self._admit_priority(spec, meta, lookup)
        pods.add_default_toleration_seconds(spec)
        node_name = spec.get("nodeName")
        if node_name:
            copy_topology_labels(meta, lookup.labels_of("nodes", "", node_name))
        pods.merge_match_label_keys(spec, meta.get("labels") or {})
        obj["spec"] = pods.ordered(spec, pods.POD_SPEC_ORDER)
        obj["status"] = pods.initial_status(obj["spec"])

    def _admit_priority(self, spec: JSON, meta: JSON, lookup: Lookup) -> None:
        """Priority admission: resolve priorityClassName (or the global default) to spec.priority."""
        name = spec.get("priorityClassName") or ""
        policy: str | None = "PreemptLowerPriority"
        if name:
            pc = lookup.get_obj("priorityclasses.scheduling.k8s.io", "", name)
            if pc is None:
                raise errors.forbidden("pods", "", meta.get("name"), NO_PRIORITY_CLASS.format(name))
            value = int(pc.get("value", 0))
            policy = pc.get("preemptionPolicy") or "PreemptLowerPriority"
        else:
            value = 0
            defaults = [
                pc for pc in lookup.list_objs("priorityclasses.scheduling.k8s.io") if pc.get("globalDefault")
            ]
            if defaults:
                chosen = min(defaults, key=lambda pc: int(pc.get("value", 0)))
                spec["priorityClassName"] = chosen["metadata"]["name"]
                value = int(chosen.get("value", 0))
                policy = chosen.get("preemptionPolicy") or "PreemptLowerPriority"
        given = spec.get("priority")
        if given is not None and given != value:
            raise errors.forbidden(
                "pods",
                "",
                meta.get("name"),
                f"the integer value of priority ({given}) must not be provided in pod spec; "
                "priority admission "
                f"controller computed {value} from the given PriorityClass name",
            )
        spec["priority"] = value
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise errors.forbidden(
                "pods",
                "",
                meta.get("name"),
                f"the string value of PreemptionPolicy ({given_policy}) must not be provided in "
                "pod spec; priority "
                f"admission controller computed {policy} from the given PriorityClass name",
            )
        spec["preemptionPolicy"] = policy

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        return pods.validate_pod_spec(obj.get("spec"))

    def prepare_update(self, new: JSON, old: JSON) -> None:
        super().prepare_update(new, old)
        spec = new.get("spec")
        if isinstance(spec, dict):
            new["spec"] = pods.default_pod_spec(spec)

    def prepare_status_update(self, new: JSON, old: JSON) -> None:
        """pods/status keeps spec, deletionTimestamp and ownerReferences but applies labels/annotations."""
        _keep_all_but_status(new, old)
        _keep_meta(new, old, ("deletionTimestamp", "ownerReferences", "generation"))
        status = new.get("status")
        if isinstance(status, dict) and not status.get("qosClass"):
            status["qosClass"] = (old.get("status") or {}).get("qosClass")

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        return pods.validate_pod_update(new, old)

    def validate_status_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        return pod_status.extended_resource_claim_status_errors(new)

    def spec_changed(self, new: JSON, old: JSON) -> bool:
        return new.get("spec") != old.get("spec")

    def normalize(self, obj: JSON) -> None:
        pods.normalize_status(obj)


def copy_topology_labels(meta: JSON, node_labels: dict[str, str] | None) -> None:
    """PodTopologyLabels admission: a pod placed on a node gets the node's zone and region labels."""
    if not node_labels:
        return
    wanted = {k: node_labels[k] for k in pods.TOPOLOGY_LABELS if k in node_labels}
    if wanted:
        meta["labels"] = {**(meta.get("labels") or {}), **wanted}


# --- nodes -----------------------------------------------------------------------------------

NODE_SPEC_ORDER = (
    "podCIDR",
    "podCIDRs",
    "providerID",
    "unschedulable",
    "taints",
    "configSource",
    "externalID",
)
NODE_STATUS_ORDER = (
    "capacity",
    "allocatable",
    "phase",
    "conditions",
    "addresses",
    "daemonEndpoints",
    "nodeInfo",
    "images",
    "volumesInUse",
    "volumesAttached",
    "config",
    "runtimeHandlers",
    "features",
    "declaredFeatures",
)
NODE_INFO_ORDER = (
    "machineID",
    "systemUUID",
    "bootID",
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "kubeProxyVersion",
    "operatingSystem",
    "architecture",
    "swap",
)
NODE_CONDITION_ORDER = ("type", "status", "lastHeartbeatTime", "lastTransitionTime", "reason", "message")


def normalize_node_status(status: JSON) -> JSON:
    if status.get("capacity") and "allocatable" not in status:
        status["allocatable"] = dict(status["capacity"])
    for part in ("capacity", "allocatable"):
        if part in status:
            status[part] = canonical_resource_list(status[part])
    endpoints = status.get("daemonEndpoints")
    if not isinstance(endpoints, dict):
        endpoints = {}
    kubelet = endpoints.get("kubeletEndpoint") or {}
    endpoints["kubeletEndpoint"] = {"Port": kubelet.get("Port", 0)}
    status["daemonEndpoints"] = endpoints
    info = status.get("nodeInfo")
    info = dict(info) if isinstance(info, dict) else {}
    for key in NODE_INFO_ORDER[:10]:
        info.setdefault(key, "")
    status["nodeInfo"] = ordered(info, NODE_INFO_ORDER)
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        fixed = []
        for c in conditions:
            if isinstance(c, dict):
                c = dict(c)
                c.setdefault("lastHeartbeatTime", None)
                c.setdefault("lastTransitionTime", None)
                c = ordered(c, NODE_CONDITION_ORDER)
            fixed.append(c)
        status["conditions"] = fixed
    return ordered(status, NODE_STATUS_ORDER)


class NodeStrategy(Strategy):
    def default(self, obj: JSON) -> None:
        spec = obj.get("spec")
        spec = dict(spec) if isinstance(spec, dict) else {}
        if spec.get("podCIDR") and not spec.get("podCIDRs"):
            spec["podCIDRs"] = [spec["podCIDR"]]
        obj["spec"] = ordered(spec, NODE_SPEC_ORDER)

    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        # a node registers with its status (kubelet-style), so status is kept on create
        status = obj.get("status")
        obj["status"] = dict(status) if isinstance(status, dict) else {}

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        errs: list[FieldError] = []
        spec = obj.get("spec") or {}
        for i, taint in enumerate(spec.get("taints") or []):
            if not isinstance(taint, dict):
                continue
            if not taint.get("key"):
                errs.append(required(f"spec.taints[{i}].key"))
            effect = taint.get("effect", "")
            if effect not in pod_fields.TAINT_EFFECTS:
                errs.append(not_supported(f"spec.taints[{i}].effect", effect, pod_fields.TAINT_EFFECTS))
        return errs

    def prepare_status_update(self, new: JSON, old: JSON) -> None:
        """nodes/status keeps spec; metadata (labels, annotations) is applied, as for pods."""
        _keep_all_but_status(new, old)

    def normalize(self, obj: JSON) -> None:
        status = obj.get("status")
        if isinstance(status, dict):
            obj["status"] = normalize_node_status(status)


# --- namespaces ------------------------------------------------------------------------------

NAME_LABEL = "kubernetes.io/metadata.name"


class NamespaceStrategy(Strategy):
    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        meta = obj["metadata"]
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
        self.normalize(obj)
        meta.setdefault("labels", {})

    def normalize(self, obj: JSON) -> None:
        meta = obj["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}), NAME_LABEL: meta.get("name", "")}

    def prepare_update(self, new: JSON, old: JSON) -> None:
        super().prepare_update(new, old)
        new["spec"] = old.get("spec", {})


# --- services --------------------------------------------------------------------------------


class ServiceStrategy(Strategy):
    def __init__(self, rt: ResourceType) -> None:
        super().__init__(rt)
        self._next_ip = 10
        self._next_port = 30000

    def _allocate_ip(self, lookup: Lookup) -> str:
        used = {(s.get("spec") or {}).get("clusterIP") for s in lookup.list_objs("services")}
        network = ipaddress.ip_network("10.96.0.0/12")
        while True:
            candidate = str(network[self._next_ip])
            self._next_ip += 1
            if candidate not in used:
                return candidate

    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        spec = obj.get("spec")
        spec = dict(spec) if isinstance(spec, dict) else {}
        svc_type = spec.setdefault("type", "ClusterIP")
        ports = []
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port = dict(port)
                port.setdefault("protocol", "TCP")
                port.setdefault("targetPort", port.get("port"))
                if svc_type in ("NodePort", "LoadBalancer") and "nodePort" not in port:
                    port["nodePort"] = self._next_port
                    self._next_port += 1
                port = ordered(port, ("name", "protocol", "appProtocol", "port", "targetPort", "nodePort"))
            ports.append(port)
        if ports:
            spec["ports"] = ports
        if svc_type != "ExternalName":
            if not spec.get("clusterIP"):
                spec["clusterIP"] = self._allocate_ip(lookup)
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("internalTrafficPolicy", "Cluster")
        spec.setdefault("sessionAffinity", "None")
        if svc_type in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
        if svc_type == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
        obj["spec"] = ordered(
            spec,
            (
                "ports",
                "selector",
                "clusterIP",
                "clusterIPs",
                "type",
                "externalIPs",
                "sessionAffinity",
                "loadBalancerIP",
                "loadBalancerSourceRanges",
                "externalName",
                "externalTrafficPolicy",
                "healthCheckNodePort",
                "publishNotReadyAddresses",
                "sessionAffinityConfig",
                "ipFamilies",
                "ipFamilyPolicy",
                "allocateLoadBalancerNodePorts",
                "loadBalancerClass",
                "internalTrafficPolicy",
                "trafficDistribution",
            ),
        )
        obj["status"] = {"loadBalancer": {}}

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        errs: list[FieldError] = []
        for i, port in enumerate((obj.get("spec") or {}).get("ports") or []):
            if isinstance(port, dict) and not port.get("port"):
                errs.append(required(f"spec.ports[{i}].port"))
        return errs


# --- workloads -------------------------------------------------------------------------------


class TemplateStrategy(Strategy):
    """ReplicationControllers: replicas, the selector from the template's labels, template defaults
    (apps/v1 and batch/v1 kinds: ``apps_strategies``)."""

    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        super().prepare_create(obj, lookup)
        spec = obj.get("spec")
        spec = dict(spec) if isinstance(spec, dict) else {}
        spec.setdefault("replicas", 1)
        template = spec.get("template")
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            template = dict(template)
            template["spec"] = pods.default_pod_spec(dict(template["spec"]), pod=False)
            template.setdefault("metadata", {})
            spec["template"] = template
        if not spec.get("selector") and isinstance(template, dict):
            spec["selector"] = dict((template.get("metadata") or {}).get("labels") or {})
        obj["spec"] = spec
        obj["status"] = {"replicas": 0}

    def prepare_update(self, new: JSON, old: JSON) -> None:
        super().prepare_update(new, old)
        template = (new.get("spec") or {}).get("template")
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            template["spec"] = pods.default_pod_spec(dict(template["spec"]), pod=False)

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errs: list[FieldError] = []
        replicas = spec.get("replicas")
        if isinstance(replicas, int) and replicas < 0:
            errs.append(invalid_value("spec.replicas", replicas, "must be greater than or equal to 0"))
        template = spec.get("template")
        if isinstance(template, dict):
            errs.extend(pods.validate_pod_spec(template.get("spec"), "spec.template.spec"))
        return errs


# --- policy ----------------------------------------------------------------------------------


_PERCENT = re.compile(r"^[0-9]+%$")
PERCENT_MSG = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
    "regex used for validation is '[0-9]+%')"
)


def _int_or_percent_errors(path: str, value: Any) -> list[FieldError]:
    """Upstream ``ValidatePositiveIntOrPercent`` and ``IsNotMoreThan100Percent`` (None: unset)."""
    if value is None:
        return []
    if isinstance(value, str):
        if not _PERCENT.match(value):
            return [invalid_value(path, value, PERCENT_MSG)]
        if int(value[:-1]) > 100:
            return [invalid_value(path, value, "must not be greater than 100%")]
        return []
    if value < 0:
        return [invalid_value(path, value, "must be greater than or equal to 0")]
    return []


def _internal_pdb_spec(spec: JSON) -> JSON:
    """The spec as the error shows it: the internal Go type, which has no json tags (Go's field
    names, every field, null for an unset pointer)."""
    selector = spec.get("selector")
    if isinstance(selector, dict):
        selector = {
            **(
                {"matchLabels": dict(sorted(selector["matchLabels"].items()))}
                if selector.get("matchLabels")
                else {}
            ),
            **(
                {"matchExpressions": selector["matchExpressions"]} if selector.get("matchExpressions") else {}
            ),
        }
    return {
        "MinAvailable": spec.get("minAvailable"),
        "Selector": selector,
        "MaxUnavailable": spec.get("maxUnavailable"),
        "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy"),
    }


class PodDisruptionBudgetStrategy(Strategy):
    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errs: list[FieldError] = []
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            errs.append(
                invalid_value(
                    "spec", _internal_pdb_spec(spec), "minAvailable and maxUnavailable cannot be both set"
                )
            )
        for name in ("minAvailable", "maxUnavailable"):
            errs.extend(_int_or_percent_errors(f"spec.{name}", spec.get(name)))
        return errs

    def normalize(self, obj: JSON) -> None:
        status = obj.get("status")
        if isinstance(status, dict):
            conditions = status.get("conditions")
            if isinstance(conditions, list):
                status["conditions"] = [
                    ordered(
                        c, ("type", "status", "observedGeneration", "lastTransitionTime", "reason", "message")
                    )
                    if isinstance(c, dict)
                    else c
                    for c in conditions
                ]
            obj["status"] = ordered(
                status,
                (
                    "observedGeneration",
                    "disruptedPods",
                    "disruptionsAllowed",
                    "currentHealthy",
                    "desiredHealthy",
                    "expectedPods",
                    "conditions",
                ),
            )


# --- scheduling ------------------------------------------------------------------------------

HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}


class PriorityClassStrategy(Strategy):
    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
        if obj.get("globalDefault"):
            name = obj["metadata"].get("name")
            for pc in lookup.list_objs("priorityclasses.scheduling.k8s.io"):
                if pc.get("globalDefault") and pc["metadata"]["name"] != name:
                    raise errors.forbidden(
                        "priorityclasses",
                        "scheduling.k8s.io",
                        name,
                        f"PriorityClass {pc['metadata']['name']} is already marked as default. "
                        "Only one default "
                        "can exist",
                    )

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        errs: list[FieldError] = []
        name = obj["metadata"].get("name", "")
        value = obj.get("value")
        if not isinstance(value, int):
            errs.append(required("value"))
        elif name in SYSTEM_CLASSES:
            pass
        elif name.startswith("system-"):
            errs.append(
                forbidden_field(
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use only",
                )
            )
        elif value > HIGHEST_USER_PRIORITY:
            errs.append(
                forbidden_field(
                    "value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"
                )
            )
        policy = obj.get("preemptionPolicy")
        if policy not in ("PreemptLowerPriority", "Never"):
            errs.append(not_supported("preemptionPolicy", policy, ["Never", "PreemptLowerPriority"]))
        return errs

    def validate_update(self, new: JSON, old: JSON, lookup: Lookup) -> list[FieldError]:
        errs = self.validate(new, lookup)
        if new.get("value") != old.get("value"):
            errs.append(forbidden_field("value", "may not be changed in an update."))
        if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
            errs.append(forbidden_field("preemptionPolicy", "may not be changed in an update."))
        return errs

    def spec_changed(self, new: JSON, old: JSON) -> bool:
        keys = ("value", "globalDefault", "description", "preemptionPolicy")
        return any(new.get(k) != old.get(k) for k in keys)


# --- coordination and events -----------------------------------------------------------------


class LeaseStrategy(Strategy):
    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        spec = obj.get("spec") or {}
        duration = spec.get("leaseDurationSeconds")
        if duration is not None and (not isinstance(duration, int) or duration <= 0):
            return [invalid_value("spec.leaseDurationSeconds", duration, "must be greater than 0")]
        return []


class EventStrategy(Strategy):
    def fields(self, obj: JSON) -> dict[str, str]:
        out = super().fields(obj)
        out["source"] = (obj.get("source") or {}).get("component", "") or ""
        return out

    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        normalized = events_api.normalize_core(obj)
        obj.clear()
        obj.update(normalized)

    def prepare_update(self, new: JSON, old: JSON) -> None:
        normalized = events_api.normalize_core(new)
        new.clear()
        new.update(normalized)

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        return events_api.validate(obj, via_events_api=False)


# --- storage ---------------------------------------------------------------------------------


class PersistentVolumeStrategy(Strategy):
    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        spec = obj.get("spec")
        spec = dict(spec) if isinstance(spec, dict) else {}
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        if "capacity" in spec:
            spec["capacity"] = canonical_resource_list(spec["capacity"])
        spec.setdefault("volumeMode", "Filesystem")
        obj["spec"] = spec
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if "kubernetes.io/pv-protection" not in finalizers:
            finalizers.append("kubernetes.io/pv-protection")
        meta["finalizers"] = finalizers
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": rfc3339()}

    def prepare_status_update(self, new: JSON, old: JSON) -> None:
        """A phase change stamps ``lastPhaseTransitionTime`` unless the writer set a new one."""
        super().prepare_status_update(new, old)
        new_status, old_status = new.get("status") or {}, old.get("status") or {}
        if new_status.get("phase") != old_status.get("phase") and new_status.get(
            "lastPhaseTransitionTime"
        ) in (None, old_status.get("lastPhaseTransitionTime")):
            new["status"] = {**new_status, "lastPhaseTransitionTime": rfc3339()}


class PersistentVolumeClaimStrategy(Strategy):
    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        spec = obj.get("spec")
        spec = dict(spec) if isinstance(spec, dict) else {}
        spec.setdefault("volumeMode", "Filesystem")
        resources = spec.get("resources")
        if isinstance(resources, dict):
            spec["resources"] = {
                k: canonical_resource_list(v) if k in ("requests", "limits") else v
                for k, v in resources.items()
            }
        obj["spec"] = spec
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if "kubernetes.io/pvc-protection" not in finalizers:
            finalizers.append("kubernetes.io/pvc-protection")
        meta["finalizers"] = finalizers
        obj["status"] = {"phase": "Pending"}


class StorageClassStrategy(Strategy):
    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")

    def validate(self, obj: JSON, lookup: Lookup) -> list[FieldError]:
        return [] if obj.get("provisioner") else [required("provisioner")]


class CSIDriverStrategy(Strategy):
    def prepare_create(self, obj: JSON, lookup: Lookup) -> None:
        spec = obj.get("spec")
        spec = dict(spec) if isinstance(spec, dict) else {}
        spec.setdefault("attachRequired", True)
        spec.setdefault("podInfoOnMount", False)
        spec.setdefault("volumeLifecycleModes", ["Persistent"])
        spec.setdefault("storageCapacity", False)
        spec.setdefault("fsGroupPolicy", "ReadWriteOnceWithFSType")
        spec.setdefault("requiresRepublish", False)
        spec.setdefault("seLinuxMount", False)
        obj["spec"] = spec


_STRATEGIES: dict[str, type[Strategy]] = {
    "pods": PodStrategy,
    "nodes": NodeStrategy,
    "namespaces": NamespaceStrategy,
    "services": ServiceStrategy,
    "replicationcontrollers": TemplateStrategy,
    "poddisruptionbudgets.policy": PodDisruptionBudgetStrategy,
    "priorityclasses.scheduling.k8s.io": PriorityClassStrategy,
    "leases.coordination.k8s.io": LeaseStrategy,
    "events": EventStrategy,
    "persistentvolumes": PersistentVolumeStrategy,
    "persistentvolumeclaims": PersistentVolumeClaimStrategy,
    "storageclasses.storage.k8s.io": StorageClassStrategy,
    "csidrivers.storage.k8s.io": CSIDriverStrategy,
}


def strategy_for(rt: ResourceType) -> Strategy:
    return _STRATEGIES.get(rt.storage_key, Strategy)(rt)


__all__ = ["ApiError", "Lookup", "Strategy", "copy_topology_labels", "strategy_for"]
