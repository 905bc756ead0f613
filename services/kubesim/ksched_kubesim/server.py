"""The HTTP front end: authentication, routing to the registry, response encoding, watch streaming."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import random
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ksched.aio import cancel_and_wait
from ksched.features import DEFAULT as DEFAULT_GATES
from ksched.features import FeatureGates

from . import access, bodies, discovery, errors, managed_fields, openapi, pod_actions, scale, tables
from .errors import ApiError
from .jsonio import JSON, decode, encode, pretty
from .metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from .metrics import ApiMetrics
from .params import query_bool, query_int64
from .registry import DeleteOptions, ListQuery, Registry, WatchQuery
from .resources import BINDINGS, EVICTIONS, SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS, ResourceType
from .routing import ResourceRequest, parse_resource_path
from .selectors import parse_field_selector, parse_label_selector

log = logging.getLogger("ksched_kubesim")

#: request key under which the verb and resource of a resource request are kept for /metrics
_COUNTED: web.RequestKey[tuple[str, ResourceRequest]] = web.RequestKey("kubesim.counted")
#: the review endpoints kubesim answers (ksched_kubesim.access)
#: seconds before its timeout a watch gets a bookmark (the watch cache's; none for a shorter watch)
PRE_TIMEOUT_BOOKMARK = 2.0
ACCEPTED_BODIES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
"""The media types the real server names when it refuses a create's or an update's body (415)."""

_REVIEWS = (
    "/apis/authentication.k8s.io/v1/tokenreviews",
    "/apis/authorization.k8s.io/v1/subjectaccessreviews",
)


@dataclass(slots=True)
class ServerSettings:
    token: str | None = None
    #: seconds between periodic bookmarks to watchers that allow them
    bookmark_interval: float = 60.0
    #: how long a list at a future resourceVersion waits before answering 504
    too_large_wait: float = 3.0
    #: watch timeout when the client gives none (the real server picks 30-60 min at random)
    default_watch_timeout: float = 1800.0
    #: alpha APIs are served only with their gate on (``--feature-gates``)
    gates: FeatureGates = DEFAULT_GATES


def _audit_id() -> str:
    """A random UUID-shaped request id (cheaper than uuid.uuid4())."""
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{h[16:20]}-{h[20:]}"


class _Response:
    """Encoding helpers shared by every handler."""

    @staticmethod
    def headers(extra: dict[str, str] | None = None) -> dict[str, str]:
        base = {
            "Cache-Control": "no-cache, private",
            "Content-Type": "application/json",
            "Audit-Id": _audit_id(),
        }
        if extra:
            base.update(extra)
        return base

    @staticmethod
    def raw(
        request: web.BaseRequest, status: int, data: bytes, extra: dict[str, str] | None = None
    ) -> web.Response:
        if request.headers.get("User-Agent", "").lower().startswith(("curl", "wget")):
            data = pretty(data)
        return web.Response(status=status, body=data + b"\n", headers=_Response.headers(extra))


def _manager(request: web.BaseRequest) -> str:
    """Who a write is recorded for in managedFields: ``fieldManager``, else the User-Agent's prefix."""
    return managed_fields.manager_name(
        request.query.get("fieldManager"), request.headers.get("User-Agent", "")
    )


class ApiServer:
    """An aiohttp application serving the registry."""

    def __init__(self, registry: Registry, settings: ServerSettings) -> None:
        self.registry = registry
        self.settings = settings
        self.server_address = "127.0.0.1:0"
        self._bookmark_task: asyncio.Task[None] | None = None
        self._watchers: set[Any] = set()
        self.metrics = ApiMetrics(registry.store)
        self.access = access.Access(settings.token)
        """Tokens, non-resource grants, TokenReview and SubjectAccessReview (ksched_kubesim.access)."""

    def start(self) -> None:
        """Begin periodic bookmarks (call from the running loop before serving)."""
        if self._bookmark_task is None:
            self._bookmark_task = asyncio.get_running_loop().create_task(self._bookmark_loop())

    async def shutdown(self) -> None:
        """Stop bookmarks and end every open watch so that their handlers return."""
        if self._bookmark_task is not None:
            await cancel_and_wait(self._bookmark_task)
            self._bookmark_task = None
        for watcher in list(self._watchers):
            watcher.close()

    async def _bookmark_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.bookmark_interval)
            for table in self.registry.store.tables.values():
                for watcher in tuple(table.watchers):
                    watcher.bookmark()

    # --- entry point --------------------------------------------------------------------------

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        try:
            authenticated, user = self._authenticate(request)
            response = await self._route(request, authenticated, user)
        except ApiError as exc:
            response = _Response.raw(request, exc.code, exc.to_bytes(), exc.headers)
        except web.HTTPRequestEntityTooLarge as exc:  # a body over the server's limit, as the API server's
            err = ApiError(
                errors.failure(413, "RequestEntityTooLarge", f"Request entity too large: {exc.text}")
            )
            response = _Response.raw(request, err.code, err.to_bytes())
        except Exception as exc:  # a kubesim bug: answer like the API server's internal errors
            log.exception("%s %s failed", request.method, request.path)
            err = errors.internal(f"{type(exc).__name__}: {exc}")
            response = _Response.raw(request, err.code, err.to_bytes())
        counted = request.get(_COUNTED)
        if counted is not None:
            verb, req = counted
            self.metrics.observe(verb, req.rt, req.subresource, req.namespace is not None, response.status)
        return response

    def _authenticate(self, request: web.BaseRequest) -> tuple[bool, str]:
        """(True, admin) for the configured bearer token; (False, user) for anonymous and for a token
        of :attr:`access` without the admin's rights; 401 for a credential kubesim does not know."""
        token = self.settings.token
        header = request.headers.get("Authorization")
        if token is None:
            return True, access.ADMIN
        if header is None:
            return False, "system:anonymous"
        scheme, _, value = header.partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer" and hmac.compare_digest(value.encode(), token.encode()):
            return True, access.ADMIN
        who = self.access.identity(value) if scheme.lower() == "bearer" else None
        if who is not None:
            return False, who.username
        raise errors.unauthorized()

    async def _route(self, request: web.BaseRequest, authenticated: bool, user: str) -> web.StreamResponse:
        path = request.path
        if path in ("/version", "/version/"):
            return self._json(request, 200, discovery.VERSION)
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok", content_type="text/plain")
        if path == "/metrics":
            if not authenticated:
                raise errors.forbidden_path(path, "get", user)
            return web.Response(body=self.metrics.render(), headers={"Content-Type": METRICS_CONTENT_TYPE})
        if request.method == "POST" and path in _REVIEWS:
            if not authenticated:
                kind = path.rsplit("/", 1)[1]
                text = f'User "{user}" cannot create resource "{kind}" in API group "{path.split("/")[2]}" '
                raise errors.forbidden(kind, path.split("/")[2], None, text + "at the cluster scope")
            rt = TOKEN_REVIEWS if path == _REVIEWS[0] else SUBJECT_ACCESS_REVIEWS
            asked = self.registry.decode_request(rt, await self._body(request, rt.kind))
            return self._json(request, 201, self.access.review(rt, asked, _manager(request)))
        parsed = parse_resource_path(path)
        if not authenticated:
            raise self._anonymous_forbidden(request, parsed, user)
        if parsed is None:
            return self._non_resource(request, path)
        if isinstance(parsed, tuple):
            group, version = parsed
            body = discovery.resource_list(f"{group}/{version}" if group else version, self.settings.gates)
            if body is None:
                raise errors.resource_not_found()
            return self._json(request, 200, body)
        if not parsed.rt.served(self.settings.gates):
            raise errors.resource_not_found()
        return await self._resource(request, parsed)

    def _anonymous_forbidden(
        self, request: web.BaseRequest, parsed: ResourceRequest | tuple[str, str] | None, user: str
    ) -> ApiError:
        if not isinstance(parsed, ResourceRequest):
            return errors.forbidden_path(
                request.path, "get" if request.method == "GET" else request.method.lower(), user
            )
        rt = parsed.rt
        resource = f"{rt.plural}/{parsed.subresource}" if parsed.subresource else rt.plural
        verb = self._verb(request, parsed)
        where = f'in the namespace "{parsed.namespace}"' if parsed.namespace else "at the cluster scope"
        text = f'User "{user}" cannot {verb} resource "{resource}" in API group "{rt.group}" {where}'
        return errors.forbidden(rt.plural, rt.group, parsed.name, text)

    @staticmethod
    def _verb(request: web.BaseRequest, parsed: ResourceRequest) -> str:
        method = request.method
        if method == "GET":
            watching = parsed.watch_path or query_bool(request.query.get("watch"))
            if parsed.name is None or parsed.subresource is None:
                return "watch" if watching else ("list" if parsed.name is None else "get")
            return "get"
        if method == "DELETE":
            return "delete" if parsed.name else "deletecollection"
        return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())

    def _non_resource(self, request: web.BaseRequest, path: str) -> web.StreamResponse:
        accept = request.headers.get("Accept", "")
        if path in ("/api", "/api/"):
            if discovery.wants_aggregated(accept):
                return self._json(
                    request,
                    200,
                    discovery.aggregated_core(self.settings.gates),
                    discovery.AGGREGATED_CONTENT_TYPE,
                )
            return self._json(request, 200, discovery.api_versions(self.server_address))
        if path in ("/apis", "/apis/"):
            if discovery.wants_aggregated(accept):
                return self._json(
                    request,
                    200,
                    discovery.aggregated_groups(self.settings.gates),
                    discovery.AGGREGATED_CONTENT_TYPE,
                )
            return self._json(request, 200, discovery.group_list(self.settings.gates))
        if path == "/openapi/v3":
            return self._json(request, 200, openapi.index(self.settings.gates))
        if path.startswith("/openapi/v3/"):
            doc = openapi.group_version(path, self.settings.gates)
            if doc is not None:
                return self._json(request, 200, doc)
        parts = [p for p in path.split("/") if p]
        if len(parts) == 2 and parts[0] == "apis":
            group = discovery.group(parts[1], self.settings.gates)
            if group is not None:
                return self._json(request, 200, group)
        return web.Response(status=404, text="404 page not found\n", content_type="text/plain")

    def _json(
        self, request: web.BaseRequest, status: int, body: JSON, content_type: str | None = None
    ) -> web.Response:
        extra = {"Content-Type": content_type} if content_type else None
        return _Response.raw(request, status, encode(body), extra)

    # --- resources ----------------------------------------------------------------------------

    async def _resource(self, request: web.BaseRequest, req: ResourceRequest) -> web.StreamResponse:
        method = request.method
        rt = req.rt
        verb = self._verb(request, req)
        request[_COUNTED] = (verb, req)
        self.metrics.observe_client(request.headers.get("User-Agent", ""), verb, rt, req.subresource)
        if req.subresource is None and verb not in rt.verbs:
            raise errors.method_not_allowed()
        if req.subresource == "scale" and req.name is not None:
            return await self._scale(request, req)
        if method == "GET":
            if verb == "watch":
                return await self._watch(request, req)
            if req.name is None:
                return await self._list(request, req)
            entry = self.registry.get(rt, req.namespace or "", req.name)
            if tables.wants_table(request.headers.get("Accept", "")):
                return self._table(request, rt, [entry], str(entry.rv))
            return _Response.raw(request, 200, self.registry.render(rt, entry))
        if method == "POST":
            return await self._post(request, req)
        if method == "PUT":
            if req.name is None:
                raise errors.method_not_allowed()
            body = await self._body(request, rt.kind)
            entry = self.registry.update(
                rt,
                req.namespace or "",
                req.name,
                body,
                req.subresource,
                request.query.get("dryRun") == "All",
                _manager(request),
            )
            return _Response.raw(request, 200, self.registry.render(rt, entry))
        if method == "PATCH":
            if req.name is None or req.subresource not in (None, "status"):
                raise errors.method_not_allowed()
            raw = await request.read()
            entry = self.registry.patch(
                rt,
                req.namespace or "",
                req.name,
                request.headers.get("Content-Type", ""),
                raw,
                req.subresource,
                request.query.get("fieldManager"),
                request.query.get("dryRun") == "All",
                _manager(request),
            )
            return _Response.raw(request, 200, self.registry.render(rt, entry))
        if method == "DELETE":
            return await self._delete(request, req)
        raise errors.method_not_allowed()

    async def _scale(self, request: web.BaseRequest, req: ResourceRequest) -> web.StreamResponse:
        """GET, PUT and PATCH of ``/scale`` (``ksched_kubesim.scale``)."""
        namespace, name = req.namespace or "", req.name or ""
        dry_run = request.query.get("dryRun") == "All"
        if request.method == "GET":
            body = scale.get_scale(self.registry, req.rt, namespace, name)
        elif request.method == "PUT":
            body = scale.update_scale(
                self.registry,
                req.rt,
                namespace,
                name,
                await self._body(request, "Scale"),
                dry_run,
                _manager(request),
            )
        elif request.method == "PATCH":
            body = scale.patch_scale(
                self.registry,
                req.rt,
                namespace,
                name,
                request.headers.get("Content-Type", ""),
                await request.read(),
                dry_run,
                _manager(request),
            )
        else:
            raise errors.method_not_allowed()
        return self._json(request, 200, body)

    async def _body(self, request: web.BaseRequest, kind: str) -> JSON:
        """The request body, an object for ``kind`` (JSON or YAML), read as the real handlers read it."""
        raw = await request.read()
        content_type = (
            request.headers.get("Content-Type", "application/json").split(";", 1)[0].strip().lower()
        )
        if content_type not in ("application/json", "", "*/*", *bodies.YAML_TYPES):
            # a patch type too: the real server takes it only for a PATCH (415 for a create)
            raise errors.unsupported_media_type(content_type, list(ACCEPTED_BODIES))
        return bodies.read(raw, kind, content_type)

    async def _post(self, request: web.BaseRequest, req: ResourceRequest) -> web.StreamResponse:
        rt = req.rt
        if rt is BINDINGS or req.subresource == "binding":
            rt = BINDINGS
        elif req.subresource == "eviction":
            rt = EVICTIONS
        body = await self._body(request, rt.kind)
        namespace = req.namespace or ""
        if rt is BINDINGS and (req.subresource == "binding" or req.name is None):
            body = self.registry.decode_request(rt, body)
            name = req.name if req.name is not None else body["metadata"].get("name") or ""
            if not name:
                raise errors.bad_request("Name parameter required.")
            pod_actions.bind(self.registry, namespace, name, body)
            return self._json(request, 201, errors.success(201))
        if rt is EVICTIONS and req.name:
            pod_actions.evict(self.registry, namespace, req.name, self.registry.decode_request(rt, body))
            return self._json(request, 201, errors.success(201))
        if req.name is not None or (rt.namespaced and req.namespace is None):
            raise errors.method_not_allowed()
        entry = self.registry.create(
            rt, namespace, body, request.query.get("dryRun") == "All", _manager(request)
        )
        return _Response.raw(request, 201, self.registry.render(rt, entry))

    async def _delete(self, request: web.BaseRequest, req: ResourceRequest) -> web.StreamResponse:
        rt = req.rt
        raw = await request.read()
        body = None
        if raw:
            try:
                body = decode(raw)
            except Exception as exc:
                raise errors.bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
        opts = DeleteOptions.from_request(dict(request.query), body if isinstance(body, dict) else None)
        if req.name is None:
            if rt.namespaced and req.namespace is None:
                raise errors.method_not_allowed()
            query = self._list_query(request, rt)
            deleted = self.registry.delete_collection(rt, req.namespace, query, opts)
            items = [self.registry.render_item(rt, e) for e in deleted]
            return _Response.raw(
                request, 200, self._list_bytes(rt, {"resourceVersion": str(self.registry.store.rv)}, items)
            )
        entry, gone = self.registry.delete(rt, req.namespace or "", req.name, opts)
        if gone and rt.storage_key not in ("pods", "namespaces"):
            details: JSON = {"name": entry.name}
            if rt.group:
                details["group"] = rt.group
            details["kind"] = rt.plural
            details["uid"] = entry.uid
            return self._json(request, 200, errors.success(None, details))
        return _Response.raw(request, 200, self.registry.render(rt, entry))

    # --- list and watch -----------------------------------------------------------------------

    def _list_query(self, request: web.BaseRequest, rt: ResourceType) -> ListQuery:
        q = request.query
        limit = max(0, query_int64(q, "limit") or 0)
        query_int64(q, "timeoutSeconds")  # parsed (and refused when malformed), meaningless for a list
        return ListQuery(
            labels=parse_label_selector(q.get("labelSelector")),
            fields=parse_field_selector(q.get("fieldSelector"), rt.selectable_fields()),
            limit=limit,
            continue_token=q.get("continue", ""),
            resource_version=q.get("resourceVersion", ""),
            resource_version_match=q.get("resourceVersionMatch", ""),
        )

    async def _list(self, request: web.BaseRequest, req: ResourceRequest) -> web.StreamResponse:
        rt = req.rt
        query = self._list_query(request, rt)
        waited = 0.0
        while True:
            try:
                result = self.registry.list_entries(rt, req.namespace, query)
                break
            except ApiError as exc:
                if exc.code != 504 or waited >= self.settings.too_large_wait:
                    raise
                await asyncio.sleep(0.05)
                waited += 0.05
        if tables.wants_table(request.headers.get("Accept", "")):
            return self._table(request, rt, result.items, str(result.resource_version))
        meta: JSON = {"resourceVersion": str(result.resource_version)}
        if result.continue_token:
            meta["continue"] = result.continue_token
            if result.remaining is not None:
                meta["remainingItemCount"] = result.remaining
        items = [self.registry.render_item(rt, e) for e in result.items]
        return _Response.raw(request, 200, self._list_bytes(rt, meta, items))

    @staticmethod
    def _list_bytes(rt: ResourceType, meta: JSON, items: list[bytes]) -> bytes:
        return b'{"kind":"%s","apiVersion":"%s","metadata":%s,"items":[%s]}' % (
            rt.list_kind.encode(),
            rt.api_version.encode(),
            encode(meta),
            b",".join(items),
        )

    def _table(self, request: web.BaseRequest, rt: ResourceType, entries: list[Any], rv: str) -> web.Response:
        objects = [decode(self.registry.render(rt, e)) for e in entries]
        include = request.query.get("includeObject", "Metadata")
        return self._json(request, 200, tables.table(rt, objects, rv, include))

    async def _watch(self, request: web.BaseRequest, req: ResourceRequest) -> web.StreamResponse:
        rt = req.rt
        q = request.query
        sie = q.get("sendInitialEvents")
        field_text = q.get("fieldSelector", "")
        if req.name is not None:  # the deprecated watch of one named object
            field_text = ",".join(t for t in (field_text, f"metadata.name={req.name}") if t)
        query = WatchQuery(
            labels=parse_label_selector(q.get("labelSelector")),
            fields=parse_field_selector(field_text, rt.selectable_fields()),
            resource_version=q.get("resourceVersion", ""),
            resource_version_match=q.get("resourceVersionMatch", ""),
            send_initial_events=None if sie is None else query_bool(sie),
            bookmarks=query_bool(q.get("allowWatchBookmarks")),
        )
        timeout: float
        timeout_seconds = query_int64(q, "timeoutSeconds")
        if timeout_seconds:
            timeout = float(timeout_seconds)
        else:
            base = self.settings.default_watch_timeout
            timeout = base * (1 + random.random())
        watcher = self.registry.watch(rt, req.namespace, query)
        self._watchers.add(watcher)
        response = web.StreamResponse(status=200, headers=_Response.headers())
        response.enable_chunked_encoding()
        try:
            await response.prepare(request)
            if timeout > 0:
                watcher.schedule(timeout, watcher.close)
                if query.bookmarks and timeout > PRE_TIMEOUT_BOOKMARK:
                    watcher.schedule(timeout - PRE_TIMEOUT_BOOKMARK, watcher.bookmark)
            await watcher.run(response.write)
        except ConnectionResetError:
            pass
        finally:
            self._watchers.discard(watcher)
            self.registry.stop_watch(watcher)
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response
