"""``KubeSim``: the emulator as a Python object (used by the CLI, test fixtures, benchmarks, the demo)."""

from __future__ import annotations

import asyncio
import base64
import copy
import secrets
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from aiohttp import web

from ksched.api.timestamps import rfc3339
from ksched.features import DEFAULT as DEFAULT_GATES
from ksched.features import FeatureGates
from ksched.secureport.selfsigned import SelfSigned, self_signed, serving_context

from . import errors, pod_actions
from .access import Access
from .jsonio import JSON, decode, new_uid
from .kubeconfig import write_kubeconfig
from .lifecycle import Lifecycle, LifecycleSettings
from .registry import NAMESPACES, PODS, DeleteOptions, Registry
from .resources import RESOURCES, ResourceType, by_kind
from .scenario import ScenarioError, load_file, parse_objects
from .server import ApiServer, ServerSettings
from .store import Entry, Store, with_kind
from .strategies import SYSTEM_CLASSES
from .synthetic import synthetic_node

BOOTSTRAP_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_SYSTEM_CLASS_TEXT = {
    "system-node-critical": "Used for system critical pods that must not be moved from their current node.",
    "system-cluster-critical": "Used for system critical pods that must run in the cluster, but "
    "can be moved to "
    "another node if necessary.",
}


@dataclass(slots=True)
class KubeSimConfig:
    """Everything configurable about one emulated cluster."""

    host: str = "127.0.0.1"
    port: int = 0
    #: bearer token clients must present; None disables authentication entirely
    token: str | None = field(default_factory=lambda: secrets.token_urlsafe(24))
    nodes: int = 0
    scenarios: list[str | Path] = field(default_factory=list)
    #: changes kept per resource for watch replay and lists at older resourceVersions
    history_size: int = 10_000
    bookmark_interval: float = 60.0
    too_large_wait: float = 3.0
    lifecycle: LifecycleSettings = field(default_factory=LifecycleSettings)
    #: serve HTTPS with a self-signed certificate (kubectl sends bearer tokens only over TLS)
    tls: bool = False
    #: alpha APIs (scheduling.k8s.io/v1alpha2 ...) are served with their gate on
    feature_gates: FeatureGates = DEFAULT_GATES


class KubeSim:
    """An emulated Kubernetes API server on a loopback port.

    ``async with KubeSim(KubeSimConfig(nodes=3)) as sim: ...`` starts it; ``sim.url`` and ``sim.token``
    (or ``sim.write_kubeconfig(path)``) give clients access. In-process helpers (``create``,
    ``load``, ``get``, ``bind``, ``delete``) act on the same state without HTTP, for fast setup.
    """

    def __init__(self, config: KubeSimConfig | None = None) -> None:
        self.config = config or KubeSimConfig()
        self.store = Store(RESOURCES, self.config.history_size)
        self.registry = Registry(self.store)
        self.lifecycle = Lifecycle(self.registry, self.config.lifecycle)
        self.server = ApiServer(
            self.registry,
            ServerSettings(
                token=self.config.token,
                bookmark_interval=self.config.bookmark_interval,
                too_large_wait=self.config.too_large_wait,
                gates=self.config.feature_gates,
            ),
        )
        self._runner: web.ServerRunner | None = None
        self._port = 0
        self._cert: SelfSigned | None = None
        self._bootstrap()

    # --- lifecycle ----------------------------------------------------------------------------

    def _bootstrap(self) -> None:
        """The objects a fresh API server creates for itself, then synthetic nodes and scenarios."""
        for name in BOOTSTRAP_NAMESPACES:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        for name, value in SYSTEM_CLASSES.items():
            self.create(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                    "description": _SYSTEM_CLASS_TEXT[name],
                }
            )
        self.create(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": "kubernetes",
                    "namespace": "default",
                    "labels": {"component": "apiserver", "provider": "kubernetes"},
                },
                "spec": {
                    "clusterIP": "10.96.0.1",
                    "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
                },
            }
        )
        for i in range(self.config.nodes):
            self.load(synthetic_node(i))
        for path in self.config.scenarios:
            self.load_objects(load_file(path))

    async def start(self) -> None:
        if self._runner is not None:
            return
        if self.config.tls and self._cert is None:
            self._cert = self_signed(self.config.host)
        await self._listen(self.config.port)
        self.server.start()
        self.lifecycle.start()

    async def _listen(self, port: int) -> None:
        low_level = web.Server(self.server.handle, handler_cancellation=True, access_log=None)
        runner = web.ServerRunner(low_level, shutdown_timeout=5.0)
        await runner.setup()
        sock = socket.socket(
            socket.AF_INET6 if ":" in self.config.host else socket.AF_INET, socket.SOCK_STREAM
        )
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.config.host, port))
        self._port = sock.getsockname()[1]
        self.server.server_address = f"{self.config.host}:{self._port}"
        ssl_context = serving_context(self._cert) if self._cert is not None else None
        site = web.SockSite(runner, sock, backlog=1024, ssl_context=ssl_context)
        await site.start()
        self._runner = runner

    async def restart(self, downtime: float = 1.0) -> None:
        """What clients see of an API server restarting with its storage kept: every connection and
        watch ends, the port refuses connections for ``downtime`` seconds, and the new server's watch
        cache starts at the current resourceVersion, so a watch resumed from an older one gets 410
        Gone and its client relists. Objects, the certificate and the controllers stay."""
        if self._runner is None:
            raise RuntimeError("kubesim is not running")
        await self.server.shutdown()
        await self._runner.cleanup()
        self._runner = None
        self.store.forget_history()
        await asyncio.sleep(downtime)
        await self._listen(self._port)
        self.server.start()

    async def stop(self) -> None:
        self.lifecycle.stop()
        if self._runner is not None:
            await self.server.shutdown()
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> KubeSim:
        await self.start()
        return self

    async def __aexit__(
        self, _exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        host = f"[{self.config.host}]" if ":" in self.config.host else self.config.host
        scheme = "https" if self.config.tls else "http"
        return f"{scheme}://{host}:{self._port}"

    @property
    def token(self) -> str | None:
        return self.config.token

    @property
    def access(self) -> Access:
        """Tokens, non-resource grants and review counts (TokenReview, SubjectAccessReview)."""
        return self.server.access

    def write_kubeconfig(self, path: str | Path) -> Path:
        if self._runner is None:
            raise RuntimeError("kubesim is not started: call start() before write_kubeconfig()")
        ca_data = base64.b64encode(self._cert.ca).decode() if self._cert is not None else None
        return write_kubeconfig(path, self.url, self.token, ca_data)

    # --- in-process access --------------------------------------------------------------------

    @staticmethod
    def resource(obj: JSON) -> ResourceType:
        rt = by_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if rt is None:
            raise ValueError(f"kubesim does not serve {obj.get('kind')!r} in {obj.get('apiVersion')!r}")
        return rt

    def render(self, rt: ResourceType, entry: Entry) -> JSON:
        result: JSON = decode(self.registry.render(rt, entry))
        return result

    def create(self, obj: JSON) -> JSON:
        """Create through the full API path (defaults, admission, validation); returns the stored object."""
        rt = self.resource(obj)
        namespace = (obj.get("metadata") or {}).get("namespace") or ("default" if rt.namespaced else "")
        entry = self.registry.create(rt, namespace, copy.deepcopy(obj))
        return self.render(rt, entry)

    def update(self, obj: JSON, subresource: str | None = None) -> JSON:
        """Update (PUT) through the full API path, ``subresource="status"`` for the status; returns the
        stored object. A ``metadata.resourceVersion`` in ``obj`` is a precondition, as over HTTP."""
        rt = self.resource(obj)
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or ("default" if rt.namespaced else "")
        entry = self.registry.update(rt, namespace, meta.get("name") or "", copy.deepcopy(obj), subresource)
        return self.render(rt, entry)

    def load(self, obj: JSON) -> JSON:
        """Store an object as given (status and defaults untouched); uid/creationTimestamp kept if set.

        Only the resourceVersion is reassigned. Missing namespaces are created.
        """
        rt = self.resource(obj)
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            raise ValueError(f"{obj.get('kind')} without metadata.name cannot be loaded")
        if rt.namespaced:
            meta.setdefault("namespace", "default")
            self._ensure_namespace(meta["namespace"])
        else:
            meta.pop("namespace", None)
        meta.setdefault("uid", new_uid())
        meta.setdefault("creationTimestamp", rfc3339())
        if rt.has_generation:
            meta.setdefault("generation", 1)
        view = self.registry.view(rt)
        if view is not None:
            obj = view.from_view(obj)
        strategy = self.registry.strategy(rt)
        strategy.normalize(obj)
        table = self.registry.table(rt)
        old = table.get(meta.get("namespace", "") if rt.namespaced else "", meta["name"])
        entry = self.store.put(table, obj, old, strategy.fields(obj))
        return self.render(rt, entry)

    def create_all(self, objects: Iterable[JSON]) -> int:
        """``create`` each object (fast in-process setup with the API server's defaults and admission)."""
        count = 0
        for obj in objects:
            self.create(obj)
            count += 1
        return count

    def load_all(self, objects: Iterable[JSON]) -> int:
        """``load`` each object as given (fastest setup: no defaults, no admission)."""
        count = 0
        for obj in objects:
            self.load(obj)
            count += 1
        return count

    def load_objects(self, objects: Iterable[tuple[ResourceType, JSON]]) -> int:
        count = 0
        for _rt, obj in objects:
            self.load(obj)
            count += 1
        return count

    def load_yaml(self, text: str, source: str = "<scenario>") -> int:
        """Load a scenario given as YAML text (stream or ``kind: List``)."""
        return self.load_objects(parse_objects(text, source))

    def _ensure_namespace(self, name: str) -> None:
        if self.registry.table(NAMESPACES).get("", name) is None:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def get(self, kind: str, name: str, namespace: str = "", api_version: str = "v1") -> JSON | None:
        rt = by_kind(api_version, kind)
        if rt is None:
            raise ValueError(f"kubesim does not serve {kind!r} in {api_version!r}")
        try:
            entry = self.registry.get(rt, namespace if rt.namespaced else "", name)
        except errors.ApiError:
            return None
        return self.render(rt, entry)

    def list_objects(self, kind: str, api_version: str = "v1", namespace: str | None = None) -> list[JSON]:
        rt = by_kind(api_version, kind)
        if rt is None:
            raise ValueError(f"kubesim does not serve {kind!r} in {api_version!r}")
        entries = self.registry.table(rt).sorted_entries()
        return [self.render(rt, e) for e in entries if namespace is None or e.namespace == namespace]

    def bind(self, namespace: str, name: str, node: str) -> JSON:
        binding = {"metadata": {"name": name}, "target": {"kind": "Node", "name": node}}
        entry = pod_actions.bind(self.registry, namespace, name, binding)
        return self.render(PODS, entry)

    def delete(
        self,
        kind: str,
        name: str,
        namespace: str = "",
        api_version: str = "v1",
        grace_period: int | None = None,
    ) -> bool:
        rt = by_kind(api_version, kind)
        if rt is None:
            raise ValueError(f"kubesim does not serve {kind!r} in {api_version!r}")
        _, gone = self.registry.delete(rt, namespace, name, DeleteOptions(grace_period=grace_period))
        return gone

    def raw(self, kind: str, name: str, namespace: str = "", api_version: str = "v1") -> bytes:
        """The exact bytes a GET would answer (for fixture comparisons and benchmarks)."""
        rt = by_kind(api_version, kind)
        assert rt is not None
        entry = self.registry.get(rt, namespace, name)
        return with_kind(rt.prefix, entry.body)

    @property
    def resource_version(self) -> int:
        return self.store.rv


__all__ = ["KubeSim", "KubeSimConfig", "ScenarioError"]
