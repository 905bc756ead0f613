"""Pod semantics of the API server: defaulting, admission effects, QoS, validation, conditions."""

from __future__ import annotations

from typing import Any

from ksched.api.timestamps import rfc3339
from ksched.apimachinery.quantity import Quantity, QuantityError, canonical_resource_list, parse_json_quantity

from . import pod_fields
from .errors import FieldError, duplicate, forbidden_field, invalid_value, not_supported, required
from .jsonio import JSON
from .validation import label_map_errors, name_errors

CONTAINER_ORDER = (
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "ports",
    "envFrom",
    "env",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
)
POD_SPEC_ORDER = (
    "volumes",
    "initContainers",
    "containers",
    "ephemeralContainers",
    "restartPolicy",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
    "nodeSelector",
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "shareProcessNamespace",
    "securityContext",
    "imagePullSecrets",
    "hostname",
    "subdomain",
    "affinity",
    "schedulerName",
    "tolerations",
    "hostAliases",
    "priorityClassName",
    "priority",
    "dnsConfig",
    "readinessGates",
    "runtimeClassName",
    "enableServiceLinks",
    "preemptionPolicy",
    "overhead",
    "topologySpreadConstraints",
    "setHostnameAsFQDN",
    "os",
    "hostUsers",
    "schedulingGates",
    "resourceClaims",
    "resources",
    "hostnameOverride",
    "schedulingGroup",
)
POD_STATUS_ORDER = (
    "observedGeneration",
    "phase",
    "conditions",
    "message",
    "reason",
    "nominatedNodeName",
    "hostIP",
    "hostIPs",
    "podIP",
    "podIPs",
    "startTime",
    "initContainerStatuses",
    "containerStatuses",
    "qosClass",
    "ephemeralContainerStatuses",
    "resize",
    "resourceClaimStatuses",
    "extendedResourceClaimStatus",
)
POD_CONDITION_ORDER = (
    "type",
    "observedGeneration",
    "status",
    "lastProbeTime",
    "lastTransitionTime",
    "reason",
    "message",
)
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (ZONE_LABEL, REGION_LABEL)
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def ordered(obj: JSON, order: tuple[str, ...]) -> JSON:
    """A copy of ``obj`` with keys in Go struct order (unknown keys keep their place at the end)."""
    out: JSON = {k: obj[k] for k in order if k in obj}
    if len(out) != len(obj):
        for k, v in obj.items():
            if k not in out:
                out[k] = v
    return out


# --- defaulting ------------------------------------------------------------------------------


def image_pull_policy(image: str) -> str:
    """``Always`` for ``:latest`` or untagged images, else ``IfNotPresent`` (as SetDefaults_Container)."""
    name = image.split("@", 1)[0]
    has_digest = "@" in image
    last = name.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ("" if has_digest else "latest")
    return "Always" if tag == "latest" else "IfNotPresent"


PROBE_ORDER = (
    "exec",
    "httpGet",
    "tcpSocket",
    "grpc",
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
    "terminationGracePeriodSeconds",
)


def _default_http_get(handler: JSON) -> None:
    """SetDefaults_HTTPGetAction: path ``/``, scheme ``HTTP``."""
    action = handler.get("httpGet")
    if isinstance(action, dict):
        action = dict(action)
        action["path"] = action.get("path") or "/"
        action["scheme"] = action.get("scheme") or "HTTP"
        handler["httpGet"] = ordered(action, ("path", "port", "host", "scheme", "httpHeaders"))


def _default_probe(probe: JSON) -> JSON:
    """SetDefaults_Probe (timeout 1 s, period 10 s, success 1, failure 3) and its HTTP action's."""
    for key, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        if not probe.get(key):
            probe[key] = value
    _default_http_get(probe)
    return ordered(probe, PROBE_ORDER)


def default_container(container: JSON, host_network: bool, pod: bool = True) -> JSON:
    """SetDefaults_Container; for a pod (``pod``, not a template) also SetDefaults_Pod's part: requests
    copied from limits, host ports for host-network pods."""
    resources = container.get("resources")
    if not isinstance(resources, dict):
        resources = {}
    limits = resources.get("limits")
    if pod and isinstance(limits, dict) and limits:
        requests = resources.get("requests")
        requests = dict(requests) if isinstance(requests, dict) else {}
        for name, value in limits.items():
            requests.setdefault(name, value)
        resources = {**resources, "requests": requests}
    container["resources"] = ordered(resources, ("limits", "requests", "claims"))
    env = container.get("env")
    if isinstance(env, list):
        for var in env:
            source = var.get("valueFrom") if isinstance(var, dict) else None
            field_ref = source.get("fieldRef") if isinstance(source, dict) else None
            if isinstance(source, dict) and isinstance(field_ref, dict) and not field_ref.get("apiVersion"):
                source["fieldRef"] = {"apiVersion": "v1", **field_ref}  # SetDefaults_ObjectFieldSelector
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(container.get(probe), dict):
            container[probe] = _default_probe(dict(container[probe]))
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                _default_http_get(lifecycle[hook])
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    if "imagePullPolicy" not in container:
        container["imagePullPolicy"] = image_pull_policy(str(container.get("image", "")))
    ports = container.get("ports")
    if isinstance(ports, list):
        new_ports = []
        for port in ports:
            if isinstance(port, dict):
                port = dict(port)
                port.setdefault("protocol", "TCP")
                if pod and host_network and "hostPort" not in port and "containerPort" in port:
                    port["hostPort"] = port["containerPort"]
                port = ordered(port, ("name", "hostPort", "containerPort", "protocol", "hostIP"))
            new_ports.append(port)
        container["ports"] = new_ports
    return ordered(container, CONTAINER_ORDER)


_MODE_VOLUMES = ("secret", "configMap", "downwardAPI", "projected")


def default_pod_spec(spec: JSON, pod: bool = True) -> JSON:
    """SetDefaults for a PodSpec; returns the spec in Go field order. ``pod=False`` for a pod template,
    which SetDefaults_Pod's part (enableServiceLinks, requests from limits, host ports) leaves alone."""
    host_network = bool(spec.get("hostNetwork"))
    for field in ("initContainers", "containers", "ephemeralContainers"):
        items = spec.get(field)
        if isinstance(items, list):
            spec[field] = [
                default_container(dict(c), host_network, pod) if isinstance(c, dict) else c for c in items
            ]
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    if pod:
        spec.setdefault("enableServiceLinks", True)
    canonicalize_quantities(spec)
    volumes = spec.get("volumes")
    if isinstance(volumes, list):
        for volume in volumes:
            if isinstance(volume, dict):
                for source in _MODE_VOLUMES:
                    inner = volume.get(source)
                    if isinstance(inner, dict):
                        inner.setdefault("defaultMode", 420)
                empty_dir = volume.get("emptyDir")
                if empty_dir is None and len(volume) == 1:
                    volume["emptyDir"] = {}
    return ordered(spec, POD_SPEC_ORDER)


def canonicalize_quantities(spec: JSON) -> None:
    """Quantities in a PodSpec as the API server serialises them (``0.5`` → ``500m``)."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(field) or []:
            res = c.get("resources") if isinstance(c, dict) else None
            if isinstance(res, dict):
                for part in ("limits", "requests"):
                    if part in res:
                        res[part] = canonical_resource_list(res[part])
    if isinstance(spec.get("overhead"), dict):
        spec["overhead"] = canonical_resource_list(spec["overhead"])
    pod_resources = spec.get("resources")
    if isinstance(pod_resources, dict):
        for part in ("limits", "requests"):
            if part in pod_resources:
                pod_resources[part] = canonical_resource_list(pod_resources[part])


def _tolerates(tolerations: list[Any], key: str) -> bool:
    for t in tolerations:
        if not isinstance(t, dict):
            continue
        same_key = t.get("key", "") == key or (t.get("key", "") == "" and t.get("operator") == "Exists")
        if same_key and t.get("effect", "") in ("", "NoExecute"):
            return True
    return False


def add_default_toleration_seconds(spec: JSON) -> None:
    """DefaultTolerationSeconds admission: tolerate not-ready/unreachable NoExecute for 300 s."""
    tolerations = spec.get("tolerations")
    tolerations = list(tolerations) if isinstance(tolerations, list) else []
    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        if not _tolerates(tolerations, key):
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    spec["tolerations"] = tolerations


def _apply_label_keys(selector: Any, keys: Any, operator: str, labels: dict[str, str]) -> None:
    if not isinstance(selector, dict) or not isinstance(keys, list):
        return
    expressions = selector.get("matchExpressions")
    expressions = list(expressions) if isinstance(expressions, list) else []
    added = False
    for key in keys:
        if key in labels:
            expressions.append({"key": key, "operator": operator, "values": [labels[key]]})
            added = True
    if added:
        selector["matchExpressions"] = expressions


def merge_match_label_keys(spec: JSON, labels: dict[str, str]) -> None:
    """matchLabelKeys/mismatchLabelKeys are merged into the term's labelSelector at creation."""
    for constraint in spec.get("topologySpreadConstraints") or []:
        if (
            isinstance(constraint, dict)
            and constraint.get("matchLabelKeys")
            and constraint.get("labelSelector")
        ):
            _apply_label_keys(constraint["labelSelector"], constraint["matchLabelKeys"], "In", labels)
    affinity = spec.get("affinity")
    if not isinstance(affinity, dict):
        return
    for kind in ("podAffinity", "podAntiAffinity"):
        block = affinity.get(kind)
        if not isinstance(block, dict):
            continue
        terms = list(block.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [
            w.get("podAffinityTerm")
            for w in block.get("preferredDuringSchedulingIgnoredDuringExecution") or []
            if isinstance(w, dict)
        ]
        for term in terms:
            if not isinstance(term, dict) or not term.get("labelSelector"):
                continue
            _apply_label_keys(term["labelSelector"], term.get("matchLabelKeys"), "In", labels)
            _apply_label_keys(term["labelSelector"], term.get("mismatchLabelKeys"), "NotIn", labels)


# --- QoS -----------------------------------------------------------------------------------------

_QOS_RESOURCES = ("cpu", "memory")


def _positive(values: Any) -> dict[str, Quantity]:
    out: dict[str, Quantity] = {}
    if isinstance(values, dict):
        for name, raw in values.items():
            if name in _QOS_RESOURCES:
                try:
                    q = parse_json_quantity(raw)
                except QuantityError:
                    continue
                if q.sign() > 0:
                    out[name] = q
    return out


def qos_class(spec: JSON) -> str:
    """Guaranteed, Burstable or BestEffort, computed as the API server does at creation."""
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    pod_resources = spec.get("resources")
    if isinstance(pod_resources, dict) and pod_resources:
        requests = _positive(pod_resources.get("requests"))
        limits = _positive(pod_resources.get("limits"))
        guaranteed = set(_QOS_RESOURCES) <= set(limits)
    else:
        for field in ("containers", "initContainers"):
            for c in spec.get(field) or []:
                if not isinstance(c, dict):
                    continue
                res = c.get("resources") or {}
                for name, q in _positive(res.get("requests")).items():
                    requests[name] = requests[name] + q if name in requests else q
                found = _positive(res.get("limits"))
                for name, q in found.items():
                    limits[name] = limits[name] + q if name in limits else q
                if not set(_QOS_RESOURCES) <= set(found):
                    guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, q in requests.items():
            if limits.get(name) != q:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


# --- conditions and status -------------------------------------------------------------------


def normalize_condition(cond: JSON) -> JSON:
    cond.setdefault("lastProbeTime", None)
    cond.setdefault("lastTransitionTime", None)
    return ordered(cond, POD_CONDITION_ORDER)


def normalize_status(obj: JSON) -> None:
    """Pod conditions always carry both timestamps (null when unset); status in Go field order."""
    status = obj.get("status")
    if not isinstance(status, dict):
        return
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        status["conditions"] = [
            normalize_condition(dict(c)) if isinstance(c, dict) else c for c in conditions
        ]
    obj["status"] = ordered(status, POD_STATUS_ORDER)


def set_condition(status: JSON, condition: JSON) -> None:
    """UpdatePodCondition: replace the condition of the same type in place, or append it.

    ``lastTransitionTime`` is kept when the status did not change and set to now when it did.
    """
    conditions = status.get("conditions")
    conditions = list(conditions) if isinstance(conditions, list) else []
    condition = normalize_condition(dict(condition))
    for i, old in enumerate(conditions):
        if isinstance(old, dict) and old.get("type") == condition["type"]:
            if old.get("status") == condition.get("status") and condition["lastTransitionTime"] is None:
                condition["lastTransitionTime"] = old.get("lastTransitionTime")
            elif condition["lastTransitionTime"] is None:
                condition["lastTransitionTime"] = rfc3339()
            conditions[i] = condition
            status["conditions"] = conditions
            return
    if condition["lastTransitionTime"] is None:
        condition["lastTransitionTime"] = rfc3339()
    conditions.append(condition)
    status["conditions"] = conditions


def initial_status(spec: JSON) -> JSON:
    """The status a new pod gets: Pending, its QoS class, and SchedulingGated when gated."""
    status: JSON = {"phase": "Pending"}
    if spec.get("schedulingGates"):
        set_condition(
            status,
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "SchedulingGated",
                "message": GATED_MESSAGE,
            },
        )
    status["qosClass"] = qos_class(spec)
    return status


def selectable_fields(obj: JSON) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    pod_ips = status.get("podIPs") or []
    pod_ip = pod_ips[0].get("ip", "") if pod_ips and isinstance(pod_ips[0], dict) else status.get("podIP", "")
    return {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "spec.nodeName": spec.get("nodeName", "") or "",
        "spec.restartPolicy": spec.get("restartPolicy", "") or "",
        "spec.schedulerName": spec.get("schedulerName", "") or "",
        "spec.serviceAccountName": spec.get("serviceAccountName", "") or "",
        "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
        "status.phase": status.get("phase", "") or "",
        "status.podIP": pod_ip or "",
        "status.nominatedNodeName": status.get("nominatedNodeName", "") or "",
    }


# --- validation ------------------------------------------------------------------------------

RESTART_POLICIES = ["Always", "OnFailure", "Never"]
DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]


def malformed_quantity(spec: JSON) -> str | None:
    """The decoding error for a malformed resource quantity anywhere in the containers, if any."""
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    blocks = [c.get("resources") for c in containers if isinstance(c, dict)]
    blocks.append(spec.get("resources"))
    blocks.append({"limits": spec.get("overhead")})
    for block in blocks:
        if not isinstance(block, dict):
            continue
        for part in ("requests", "limits"):
            values = block.get(part)
            if isinstance(values, dict):
                for value in values.values():
                    try:
                        parse_json_quantity(value)
                    except QuantityError as exc:
                        return exc.reason
    return None


def _validate_resources(path: str, resources: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(resources, dict):
        return errs
    parsed: dict[str, dict[str, Quantity]] = {"requests": {}, "limits": {}}
    for part in ("limits", "requests"):
        values = resources.get(part)
        if not isinstance(values, dict):
            continue
        for name, raw in values.items():
            q = parse_json_quantity(raw)
            parsed[part][name] = q
            if q.sign() < 0:
                errs.append(
                    invalid_value(f"{path}.{part}[{name}]", str(q), "must be greater than or equal to 0")
                )
    for name, q in parsed["requests"].items():
        limit = parsed["limits"].get(name)
        if limit is not None and q > limit:
            detail = f"must be less than or equal to {name} limit of {limit}"
            errs.append(invalid_value(f"{path}.requests", str(q), detail))
    return errs


def _validate_containers(path: str, containers: Any, seen: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(containers, list):
        return errs
    for i, c in enumerate(containers):
        cpath = f"{path}[{i}]"
        if not isinstance(c, dict):
            errs.append(invalid_value(cpath, c, "must be an object"))
            continue
        name = c.get("name") or ""
        if not name:
            errs.append(required(f"{cpath}.name"))
        else:
            for msg in name_errors(name, "label"):
                errs.append(invalid_value(f"{cpath}.name", name, msg))
            if name in seen:
                errs.append(duplicate(f"{cpath}.name", name))
            seen.add(name)
        if not c.get("image"):
            errs.append(required(f"{cpath}.image"))
        errs.extend(pod_fields.termination_message_policy_errors(cpath, c.get("terminationMessagePolicy")))
        errs.extend(pod_fields.container_port_errors(f"{cpath}.ports", c.get("ports")))
        policy = c.get("imagePullPolicy")
        if policy not in (None, "Always", "Never", "IfNotPresent"):
            errs.append(
                not_supported(f"{cpath}.imagePullPolicy", policy, ["Always", "IfNotPresent", "Never"])
            )
        errs.extend(_validate_resources(f"{cpath}.resources", c.get("resources")))
    return errs


def validate_pod_spec(spec: Any, path: str = "spec") -> list[FieldError]:
    if not isinstance(spec, dict):  # absent: Go's zero PodSpec (another type was refused by decoding)
        spec = {}
    errs: list[FieldError] = []
    containers = spec.get("containers")
    if not containers:
        errs.append(required(f"{path}.containers"))
    seen: set[str] = set()
    errs.extend(_validate_containers(f"{path}.initContainers", spec.get("initContainers"), seen))
    errs.extend(_validate_containers(f"{path}.containers", containers, seen))
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in RESTART_POLICIES:
        errs.append(not_supported(f"{path}.restartPolicy", policy, RESTART_POLICIES))
    dns = spec.get("dnsPolicy")
    if dns is not None and dns not in DNS_POLICIES:
        errs.append(not_supported(f"{path}.dnsPolicy", dns, DNS_POLICIES))
    errs.extend(label_map_errors(f"{path}.nodeSelector", spec.get("nodeSelector")))
    errs.extend(pod_fields.node_affinity_errors(f"{path}.affinity", spec.get("affinity")))
    errs.extend(pod_fields.toleration_errors(f"{path}.tolerations", spec.get("tolerations")))
    spread = spec.get("topologySpreadConstraints")
    errs.extend(pod_fields.topology_spread_errors(f"{path}.topologySpreadConstraints", spread))
    errs.extend(pod_fields.scheduling_group_errors(spec))
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and not isinstance(grace, int):
        errs.append(invalid_value(f"{path}.terminationGracePeriodSeconds", grace, "must be an integer"))
    return errs


UPDATABLE_SPEC_TEXT = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _without_mutable(spec: JSON, gated: bool) -> JSON:
    munged = dict(spec)
    for field in ("activeDeadlineSeconds", "terminationGracePeriodSeconds", "tolerations", "schedulingGates"):
        munged.pop(field, None)
    if gated:
        munged.pop("nodeSelector", None)
        munged.pop("affinity", None)
    for field in ("containers", "initContainers"):
        items = munged.get(field)
        if isinstance(items, list):
            munged[field] = [
                {k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c for c in items
            ]
    return munged


def validate_pod_update(new: JSON, old: JSON) -> list[FieldError]:
    """Pod spec immutability (only image, deadline, tolerations additions, grace period, gates removal)."""
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    errs = validate_pod_spec(new_spec)
    gated = bool(old_spec.get("schedulingGates"))
    if _without_mutable(new_spec, gated) != _without_mutable(old_spec, gated):
        errs.append(forbidden_field("spec", UPDATABLE_SPEC_TEXT))
    old_tol = old_spec.get("tolerations") or []
    new_tol = new_spec.get("tolerations") or []
    if any(t not in new_tol for t in old_tol):
        errs.append(
            forbidden_field(
                "spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"
            )
        )
    old_gates = [g.get("name") for g in old_spec.get("schedulingGates") or [] if isinstance(g, dict)]
    for i, gate in enumerate(new_spec.get("schedulingGates") or []):
        name = gate.get("name") if isinstance(gate, dict) else None
        if name not in old_gates:
            errs.append(
                forbidden_field(
                    f"spec.schedulingGates[{i}]",
                    f"only deletion is allowed, but found new scheduling gate '{name}'",
                )
            )
    return errs
