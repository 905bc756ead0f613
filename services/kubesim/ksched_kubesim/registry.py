"""The REST semantics of the API server over the store: create, read, update, patch, delete, list and
watch, with the real server's preconditions, defaults and error answers (binding and eviction, the
pod subresources with rules of their own, are in ``pod_actions``).

Every method is synchronous: asyncio runs one request handler at a time between awaits, so a write
and the fan-out of its watch events happen atomically, as one etcd transaction would.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime as dt
from dataclasses import dataclass
from typing import Any

from ksched.api.timestamps import rfc3339
from ksched.apimachinery.field import go_json

from . import bodies, errors, managed_fields, patch, scheme
from .apps_strategies import STRATEGIES as APPS_STRATEGIES
from .dra_strategies import dra_strategy
from .errors import ApiError, FieldError, forbidden_field, invalid, invalid_value, not_supported, required
from .events_api import core_to_events, events_to_core
from .events_api import validate as validate_event
from .jsonio import JSON, decode, encode, new_uid, now, parse_time, random_suffix
from .params import query_int64
from .resources import BY_KEY, CUSTOM_GROUPS, EVICTIONS, RESOURCES, ResourceType, by_kind
from .selectors import FieldSelector, Selector
from .shapes import decode_shapes
from .store import Entry, Store, Table, View, encode_body, with_kind
from .strategies import Strategy, strategy_for
from .time_fields import DecodeFailure, decode_times
from .validation import validate_metadata
from .watch import Watcher, error_line
from .workload_strategies import STRATEGIES as WORKLOAD_STRATEGIES

PODS = BY_KEY["pods"]
NODES = BY_KEY["nodes"]
NAMESPACES = BY_KEY["namespaces"]
PDBS = BY_KEY["poddisruptionbudgets.policy"]
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")


@dataclass(slots=True)
class DeleteOptions:
    grace_period: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False
    #: ``propagationPolicy``: Orphan, Background, Foreground (None: the resource's default)
    propagation: str | None = None
    #: the deprecated ``orphanDependents`` (None: not given)
    orphan_dependents: bool | None = None

    @classmethod
    def from_request(cls, query: dict[str, str], body: JSON | None) -> DeleteOptions:
        opts = cls()
        opts.grace_period = query_int64(query, "gracePeriodSeconds")
        opts.dry_run = query.get("dryRun") == "All"
        opts.propagation = query.get("propagationPolicy") or None
        if "orphanDependents" in query:
            opts.orphan_dependents = query["orphanDependents"] == "true"
        if body:
            opts.merge(body)
        return opts

    def merge(self, body: JSON) -> None:
        if body.get("gracePeriodSeconds") is not None:
            self.grace_period = int(body["gracePeriodSeconds"])
        if isinstance(body.get("propagationPolicy"), str):
            self.propagation = body["propagationPolicy"]
        if isinstance(body.get("orphanDependents"), bool):
            self.orphan_dependents = body["orphanDependents"]
        pre = body.get("preconditions") or {}
        self.uid = pre.get("uid") or self.uid
        self.resource_version = pre.get("resourceVersion") or self.resource_version
        if body.get("dryRun"):
            self.dry_run = "All" in body["dryRun"]


ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
#: resources whose dependents a deletion orphans by default (batch/v1 Jobs, for compatibility)
ORPHAN_BY_DEFAULT = frozenset({"jobs.batch"})


def _gc_finalizers(rt: ResourceType, finalizers: list[str], opts: DeleteOptions) -> list[str]:
    """The finalizers after the API server's garbage-collection step of a deletion: ``orphan`` or
    ``foregroundDeletion`` per the options, else per the finalizers already there, else per the
    resource's default (orphan for Jobs, background for the rest)."""
    policy = opts.propagation
    if opts.orphan_dependents is not None:
        policy = "Orphan" if opts.orphan_dependents else "Background"
    if policy not in ("Orphan", "Background", "Foreground"):
        if ORPHAN_FINALIZER in finalizers:
            policy = "Orphan"
        elif FOREGROUND_FINALIZER in finalizers:
            policy = "Foreground"
        else:
            policy = "Orphan" if rt.storage_key in ORPHAN_BY_DEFAULT else "Background"
    kept = [f for f in finalizers if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    if policy == "Orphan":
        kept.append(ORPHAN_FINALIZER)
    elif policy == "Foreground":
        kept.append(FOREGROUND_FINALIZER)
    return kept


@dataclass(slots=True)
class ListQuery:
    labels: Selector | None = None
    fields: FieldSelector | None = None
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""


@dataclass(slots=True)
class ListResult:
    resource_version: int
    items: list[Entry]
    continue_token: str = ""
    remaining: int | None = None


@dataclass(slots=True)
class WatchQuery:
    labels: Selector | None = None
    fields: FieldSelector | None = None
    resource_version: str = ""
    resource_version_match: str = ""
    send_initial_events: bool | None = None
    bookmarks: bool = False


def _list_options_invalid(errs: list[FieldError]) -> ApiError:
    return invalid("ListOptions", "meta.k8s.io", "", errs)


def encode_continue(rv: int, start: str) -> str:
    raw = b'{"v":"meta.k8s.io/v1","rv":%d,"start":%s}' % (rv, encode(start))
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_continue(token: str) -> tuple[int, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = decode(base64.urlsafe_b64decode(padded))
        if not isinstance(data, dict) or data.get("v") != "meta.k8s.io/v1":
            raise ValueError(
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
            )
        rv, start = int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        message = str(exc) if str(exc).startswith("continue key") else f"continue key is not valid: {exc}"
        raise errors.bad_request(message) from None
    if not start.startswith("/"):
        start = "/" + start
    return rv, start


class Registry:
    """Request semantics for every served resource."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.strategies: dict[str, Strategy] = {}
        for rt in RESOURCES:
            if rt.storage_of is None:
                extra = WORKLOAD_STRATEGIES.get(rt.key) or APPS_STRATEGIES.get(rt.key)
                if extra is not None:
                    self.strategies[rt.key] = extra(rt)
                else:
                    self.strategies[rt.key] = dra_strategy(rt) or strategy_for(rt)
        self.views: dict[str, View] = {
            rt.key: View(rt, core_to_events, events_to_core) for rt in RESOURCES if rt.storage_of == "events"
        }
        self.max_watch_pending_bytes = 256 * 1024 * 1024
        #: a garbage collector runs (the lifecycle's): deletions add its ``orphan`` and
        #: ``foregroundDeletion`` finalizers, as the API server does with garbage collection enabled
        self.garbage_collection = False

    # --- helpers ------------------------------------------------------------------------------

    def table(self, rt: ResourceType) -> Table:
        return self.store.table(rt)

    def strategy(self, rt: ResourceType) -> Strategy:
        return self.strategies[rt.storage_key]

    def view(self, rt: ResourceType) -> View | None:
        return self.views.get(rt.key)

    def render(self, rt: ResourceType, entry: Entry) -> bytes:
        """The full JSON document of ``entry`` as served by ``rt`` (with kind and apiVersion)."""
        view = self.view(rt)
        if view is None:
            return with_kind(rt.prefix, entry.body)
        return with_kind(view.rt.prefix, view.body(entry))

    def render_item(self, rt: ResourceType, entry: Entry) -> bytes:
        """A list item (no kind/apiVersion)."""
        view = self.view(rt)
        return entry.body if view is None else view.body(entry)

    def get_obj(self, key: str, namespace: str, name: str) -> JSON | None:
        table = self.store.tables[key]
        entry = table.get(namespace if table.rt.namespaced else "", name)
        return entry.obj() if entry else None

    def labels_of(self, key: str, namespace: str, name: str) -> dict[str, str] | None:
        entry = self.store.tables[key].get(namespace, name)
        return entry.labels if entry else None

    def list_objs(self, key: str) -> list[JSON]:
        return [e.obj() for e in self.store.tables[key].objects.values()]

    def _check_kind(self, rt: ResourceType, body: Any) -> JSON:
        problem = bodies.type_meta_error(body)  # the type meta is read first (HTTP bodies: bodies.read)
        if problem is not None:
            raise bodies.unrecognized(rt.kind, problem, encode(body))
        obj: JSON = body if body is not None else {}
        kind = obj.get("kind") or rt.kind
        api_version = obj.get("apiVersion") or rt.api_version
        group, _, version = api_version.rpartition("/")
        if (group, version, kind) != (rt.group, rt.version, rt.kind):
            self._another_type(rt, group, version, kind, obj)
        if obj.get("metadata") is None:
            obj["metadata"] = {}
        return obj  # metadata of another type: _decode_body's error

    def _another_type(self, rt: ResourceType, group: str, version: str, kind: str, obj: JSON) -> None:
        """400 for a body of another kind or version than ``rt``'s, as decoding it into the type it
        names and converting that to ``rt``'s fails (scheme.py). Custom resources (not in the
        scheme) must name ``rt``'s kind and group."""
        api_version = f"{group}/{version}" if group else version
        if rt.group in CUSTOM_GROUPS:
            if kind != rt.kind:
                raise errors.bad_request(
                    f'{kind} in version "{version}" cannot be handled as a {rt.kind}: the kind of the object '
                    f"({kind}) does not match the kind of the URL ({rt.kind})"
                )
            if group != rt.group:
                raise errors.bad_request(
                    f"the API version in the data ({api_version}) does not match the expected API version "
                    f"({rt.api_version})"
                )
            return
        prefix = f'{kind} in version "{version}" cannot be handled as a {rt.kind}: '
        if not scheme.registered(group, version, kind):
            raise errors.bad_request(
                f'{prefix}no kind "{kind}" is registered for version "{api_version}" in scheme '
                '"pkg/runtime/scheme.go:111"'
            )
        named = by_kind(api_version, kind)
        failure = decode_shapes(named.key if named else "", kind, obj)
        if failure:
            raise errors.bad_request(prefix + failure.typed)
        target = scheme.internal_type(rt.group, rt.kind)
        if scheme.internal_type(group, kind) != target:
            raise errors.bad_request(
                f"{prefix}converting ({version}.{kind}) to ({target}): unknown conversion"
            )
        if rt is EVICTIONS and api_version == "policy/v1beta1":
            return
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({rt.api_version})"
        )

    def _to_storage(self, rt: ResourceType, obj: JSON) -> JSON:
        view = self.view(rt)
        return view.from_view(obj) if view else obj

    def _fix_namespace(self, rt: ResourceType, namespace: str, meta: JSON) -> None:
        if rt.namespaced:
            given = meta.get("namespace")
            if given and given != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)

    def _decode(self, rt: ResourceType, obj: JSON) -> DecodeFailure | None:
        """What decoding ``obj`` (as ``rt`` serves it) into its Go type rejects: a field of the wrong
        JSON type, a timestamp, then a quantity. Accepted timestamps are re-encoded in place."""
        failure = decode_shapes(rt.key, rt.kind, obj) or decode_times(rt.key, obj)
        if failure is None:
            problem = self.strategy(rt).decode_check(obj)
            failure = DecodeFailure(problem, problem) if problem else None
        return failure

    def decode_request(self, rt: ResourceType, body: Any) -> JSON:
        """A request body of ``rt`` that is stored nowhere (the reviews), its kind checked and its
        fields decoded as the Go type's (400 as for any other body)."""
        obj = self._check_kind(rt, body)
        failure = decode_shapes(rt.key, rt.kind, obj)
        if failure:
            raise errors.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {failure.typed}'
            )
        return obj

    def _decode_body(self, rt: ResourceType, obj: JSON) -> None:
        """400 for a request body that does not decode."""
        failure = self._decode(rt, obj)
        if failure:
            raise errors.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {failure.typed}'
            )

    def _decode_patched(self, rt: ResourceType, media: str, doc: Any, current: JSON, result: JSON) -> None:
        """422 for a patch whose result does not decode: JSON and merge patches quote the patched
        object as the json-patch library writes it, strategic-merge (and apply) patches the patch as
        Go prints a map."""
        failure = self._decode(rt, result)
        if failure is None:
            return
        if media == patch.MERGE_PATCH:
            raise errors.patch_invalid(go_json(patch.merge_patched_as_go_writes(current, doc)), failure.typed)
        if media == patch.JSON_PATCH:
            raise errors.patch_invalid(go_json(patch.json_patched_as_go_writes(result, doc)), failure.typed)
        raise errors.patch_invalid(errors.go_sprint(doc), failure.unstructured)

    def put(self, rt: ResourceType, obj: JSON, old: Entry | None) -> Entry:
        """Store ``obj`` (a new version of ``old``, or a new object) with its selectable fields."""
        strategy = self.strategy(rt)
        return self.store.put(self.table(rt), obj, old, strategy.fields(obj))

    def _invalid(self, rt: ResourceType, name: str, errs: list[FieldError]) -> ApiError:
        # a view validates the internal type of its storage: events.k8s.io's Event is core's
        return invalid(rt.kind, BY_KEY[rt.storage_key].group, name, errs)

    # --- create -------------------------------------------------------------------------------

    def record_write(
        self,
        rt: ResourceType,
        old: JSON | None,
        new: JSON,
        manager: str,
        subresource: str | None = None,
        operation: str = "Update",
    ) -> None:
        """The field manager's step of a write through the API: ``new``'s ``managedFields``."""
        managed_fields.record(
            old,
            new,
            manager=manager,
            api_version=rt.api_version,
            kind=rt.kind,
            subresource=subresource,
            has_status=rt.has_status,
            operation=operation,
        )

    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        dry_run: bool = False,
        manager: str = managed_fields.UNKNOWN_MANAGER,
        operation: str = "Update",
    ) -> Entry:
        obj = self._check_kind(rt, body)
        self._decode_body(rt, obj)
        obj = self._to_storage(rt, obj)
        meta = obj["metadata"]
        self._fix_namespace(rt, namespace, meta)
        if meta.get("resourceVersion"):
            raise errors.internal("resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{random_suffix()}"
        name = meta.get("name") or ""
        if rt.namespaced:
            self._admit_namespace(rt, namespace, name)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = rfc3339()
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(key, None)
        if rt.has_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        strategy = self.strategy(rt)
        strategy.default(obj)
        self.record_write(rt, None, obj, manager, operation=operation)
        strategy.prepare_create(obj, self)
        strategy.normalize(obj)
        errs = validate_metadata(rt, meta)
        if rt.storage_of == "events":
            errs += validate_event(obj, via_events_api=True)
        else:
            errs += strategy.validate(obj, self)
        if errs:
            raise self._invalid(rt, name, errs)
        table = self.table(rt)
        if (namespace if rt.namespaced else "", name) in table.objects:
            raise errors.already_exists(rt.plural, rt.group, name)
        if dry_run:
            return self._dry_entry(rt, obj)
        return self.put(rt, obj, None)

    def _dry_entry(self, rt: ResourceType, obj: JSON) -> Entry:
        meta = obj["metadata"]
        return Entry(
            meta.get("namespace", ""),
            meta["name"],
            int(meta.get("resourceVersion") or 0),
            encode_body(obj),
            meta.get("labels") or {},
            self.strategy(rt).fields(obj),
            meta.get("uid", ""),
            False,
        )

    def _admit_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        """NamespaceLifecycle: no content in missing or terminating namespaces."""
        ns = self.store.tables[NAMESPACES.key].get("", namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        if ns.deleting and rt.storage_key != "events":
            err = errors.forbidden(
                rt.plural,
                rt.group,
                name,
                f"unable to create new content in namespace {namespace} because it is being terminated",
            )
            err.body["details"]["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise err

    # --- read ---------------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str, name: str) -> Entry:
        entry = self.table(rt).get(namespace if rt.namespaced else "", name)
        if entry is None:
            raise errors.not_found(rt.plural, rt.group, name)
        return entry

    # --- update and patch ---------------------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        subresource: str | None = None,
        dry_run: bool = False,
        manager: str = managed_fields.UNKNOWN_MANAGER,
    ) -> Entry:
        obj = self._check_kind(rt, body)
        self._decode_body(rt, obj)
        obj = self._to_storage(rt, obj)
        meta = obj["metadata"]
        given_name = meta.get("name")
        if given_name and given_name != name:
            raise errors.bad_request(
                f"the name of the object ({given_name}) does not match the name on the URL ({name})"
            )
        self._fix_namespace(rt, namespace, meta)
        old = self.get(rt, namespace, name)
        given_rv = meta.get("resourceVersion")
        if given_rv:
            if given_rv != str(old.rv):
                raise errors.stale(rt.plural, rt.group, name)
        elif not rt.unconditional_update:
            raise invalid(
                rt.plural,
                rt.group,
                name,
                [invalid_value("metadata.resourceVersion", 0, "must be specified for an update")],
            )
        return self._apply_update(rt, old, obj, subresource, dry_run, manager)

    def _apply_update(
        self,
        rt: ResourceType,
        old_entry: Entry,
        new: JSON,
        subresource: str | None,
        dry_run: bool = False,
        manager: str = managed_fields.UNKNOWN_MANAGER,
        operation: str = "Update",
    ) -> Entry:
        strategy = self.strategy(rt)
        old = old_entry.obj()
        new.pop("kind", None)
        new.pop("apiVersion", None)
        new_meta = new.setdefault("metadata", {})
        old_meta = old["metadata"]
        given_uid = new_meta.get("uid")
        if given_uid and given_uid != old_meta.get("uid"):
            raise errors.conflict(
                rt.plural,
                rt.group,
                old_entry.name,
                f"Precondition failed: UID in precondition: {given_uid}, UID in object meta: "
                f"{old_meta.get('uid')}",
            )
        for key in (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if key in old_meta:
                new_meta[key] = old_meta[key]
            else:
                new_meta.pop(key, None)
        if subresource == "status":
            strategy.prepare_status_update(new, old)
        elif subresource == "finalize":
            finalizers = (new.get("spec") or {}).get("finalizers")
            new.clear()
            new.update(old)
            new["spec"] = {**(old.get("spec") or {}), "finalizers": finalizers or []}
        else:
            strategy.prepare_update(new, old)
        if rt.has_generation:
            generation = int(old_meta.get("generation") or 1)
            if subresource is None and strategy.spec_changed(new, old):
                generation += 1
            new["metadata"]["generation"] = generation
        strategy.normalize(new)
        errs = validate_metadata(rt, new["metadata"])
        if rt.storage_of == "events":
            errs += validate_event(new, via_events_api=True)
        elif subresource is None:
            errs += strategy.validate_update(new, old, self)
        elif subresource == "status":
            errs += strategy.validate_status_update(new, old, self)
        if errs:
            raise self._invalid(rt, old_entry.name, errs)
        new["metadata"]["resourceVersion"] = old_meta.get("resourceVersion")
        self.record_write(rt, old, new, manager, subresource, operation)
        if new == old:
            return old_entry
        if dry_run:
            return self._dry_entry(rt, new)
        entry = self.put(rt, new, old_entry)
        return self._maybe_finalize(rt, entry, new)

    def _maybe_finalize(self, rt: ResourceType, entry: Entry, obj: JSON) -> Entry:
        """Remove an object whose deletion was only waiting for its finalizers (or namespace content)."""
        meta = obj["metadata"]
        if not meta.get("deletionTimestamp") or meta.get("finalizers"):
            return entry
        if rt.storage_key == "pods" and meta.get("deletionGracePeriodSeconds"):
            return entry
        if rt.storage_key == "namespaces" and (obj.get("spec") or {}).get("finalizers"):
            return entry
        self.store.remove(self.table(rt), entry)
        return entry

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        raw: bytes,
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
        manager: str = managed_fields.UNKNOWN_MANAGER,
    ) -> Entry:
        """``manager``: who writes when the request names no ``field_manager`` (its User-Agent)."""
        media = content_type.split(";", 1)[0].strip().lower()
        if media == patch.APPLY_PATCH_CBOR or media not in patch.PATCH_TYPES:
            raise errors.unsupported_media_type(media, list(patch.PATCH_TYPES))
        doc = self._decode_patch(media, raw)
        if media == patch.APPLY_PATCH and not field_manager:
            raise invalid(
                "PatchOptions", "meta.k8s.io", "", [required("fieldManager", "is required for apply patch")]
            )
        table = self.table(rt)
        old = table.get(namespace if rt.namespaced else "", name)
        if old is None:
            if media == patch.APPLY_PATCH and subresource is None and isinstance(doc, dict):
                meta = doc.setdefault("metadata", {})
                if isinstance(meta, dict):
                    meta.setdefault("name", name)
                return self.create(rt, namespace, doc, dry_run, field_manager or manager, "Apply")
            raise errors.not_found(rt.plural, rt.group, name)
        view = self.view(rt)
        current = old.obj()
        if view is not None:
            current = view.to_view(current)
        current = {"kind": rt.kind, "apiVersion": rt.api_version, **current}
        result = patch.patched(media, current, doc, patch.schema_for(rt.kind))
        if not isinstance(result, dict) or not isinstance(result.get("metadata", {}), dict):
            raise errors.bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}')
        self._decode_patched(rt, media, doc, current, result)
        patch_rv = None
        if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
            patch_rv = doc["metadata"].get("resourceVersion")
        if patch_rv and patch_rv != str(old.rv):
            raise errors.stale(rt.plural, rt.group, name)
        result.setdefault("metadata", {})
        result["metadata"]["name"] = name
        self._fix_namespace(rt, namespace, result["metadata"])
        if view is not None:
            result = view.from_view(result)
        operation = "Apply" if media == patch.APPLY_PATCH else "Update"
        return self._apply_update(rt, old, result, subresource, dry_run, field_manager or manager, operation)

    @staticmethod
    def _decode_patch(media: str, raw: bytes) -> Any:
        try:
            if media == patch.APPLY_PATCH:
                import yaml

                return yaml.safe_load(raw.decode() or "{}")
            return decode(raw or b"{}")
        except Exception as exc:
            raise errors.bad_request(f"error decoding patch: {exc}") from None

    # --- delete -------------------------------------------------------------------------------

    def delete(self, rt: ResourceType, namespace: str, name: str, opts: DeleteOptions) -> tuple[Entry, bool]:
        """Delete per the API server's rules; returns the object and whether it is gone now."""
        old = self.get(rt, namespace, name)
        if opts.uid and opts.uid != old.uid:
            raise errors.conflict(
                rt.kind,
                "",
                name,
                f"the UID in the precondition ({opts.uid}) does not match the UID in record ({old.uid}). "
                "The object might have been deleted and then recreated",
            )
        if opts.resource_version and opts.resource_version != str(old.rv):
            raise errors.conflict(
                rt.kind,
                "",
                name,
                f"the ResourceVersion in the precondition ({opts.resource_version}) does not match the "
                f"ResourceVersion in record ({old.rv}). The object might have been modified",
            )
        if opts.dry_run:
            return old, False
        if rt.storage_key == "pods":
            return self._delete_pod(old, opts)
        if rt.storage_key == "namespaces":
            return self._delete_namespace(old)
        obj = old.obj()
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if self.garbage_collection:
            finalizers = _gc_finalizers(rt, finalizers, opts)
        if finalizers:
            meta["finalizers"] = finalizers
            if meta.get("deletionTimestamp"):
                if finalizers != old.obj()["metadata"].get("finalizers"):
                    return self.put(rt, obj, old), False
                return old, False
            meta["deletionTimestamp"] = rfc3339()
            meta["deletionGracePeriodSeconds"] = 0
            if rt.has_generation:
                meta["generation"] = int(meta.get("generation") or 1) + 1
            return self.put(rt, obj, old), False
        return self.store.remove(self.table(rt), old), True

    def _delete_pod(self, old: Entry, opts: DeleteOptions) -> tuple[Entry, bool]:
        pod = old.obj()
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        grace = opts.grace_period
        if grace is None:
            grace = int(spec.get("terminationGracePeriodSeconds") or 0)
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            grace = 0
        if grace < 0:
            grace = 1
        current = meta.get("deletionTimestamp")
        if current:
            current_grace = int(meta.get("deletionGracePeriodSeconds") or 0)
            if grace >= current_grace:
                return old, False
            requested_at = parse_time(current) - dt.timedelta(seconds=current_grace)
            meta["deletionTimestamp"] = rfc3339(requested_at + dt.timedelta(seconds=grace))
        else:
            meta["deletionTimestamp"] = rfc3339(now() + dt.timedelta(seconds=grace))
            meta["generation"] = int(meta.get("generation") or 1) + 1
        meta["deletionGracePeriodSeconds"] = grace
        entry = self.put(PODS, pod, old)
        if grace == 0 and not meta.get("finalizers"):
            return self.store.remove(self.table(PODS), entry), True
        return entry, False

    def _delete_namespace(self, old: Entry) -> tuple[Entry, bool]:
        if old.name in IMMORTAL_NAMESPACES:
            raise errors.forbidden("namespaces", "", old.name, "this namespace may not be deleted")
        if old.deleting:
            return old, False
        ns = old.obj()
        ns["metadata"]["deletionTimestamp"] = rfc3339()
        ns["metadata"]["deletionGracePeriodSeconds"] = 0
        ns["status"] = {**(ns.get("status") or {}), "phase": "Terminating"}
        entry = self.put(NAMESPACES, ns, old)
        return self._maybe_finalize(NAMESPACES, entry, ns), False

    def delete_collection(
        self, rt: ResourceType, namespace: str | None, query: ListQuery, opts: DeleteOptions
    ) -> list[Entry]:
        deleted: list[Entry] = []
        for entry in self.list_entries(rt, namespace, query).items:
            try:
                result, _ = self.delete(rt, entry.namespace, entry.name, opts)
            except ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            deleted.append(result)
        return deleted

    # --- list ---------------------------------------------------------------------------------

    def list_entries(self, rt: ResourceType, namespace: str | None, query: ListQuery) -> ListResult:
        table = self.table(rt)
        rv_text, match = query.resource_version, query.resource_version_match
        errs: list[FieldError] = []
        if match not in ("", "Exact", "NotOlderThan"):
            errs.append(not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]))
        elif match and not rv_text:
            errs.append(
                forbidden_field(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        elif match == "Exact" and rv_text == "0":
            errs.append(
                forbidden_field(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
        if query.continue_token and rv_text not in ("", "0"):
            errs.append(
                forbidden_field(
                    "resourceVersion", "specifying resource version is not allowed when using continue"
                )
            )
        if errs:
            raise _list_options_invalid(errs)
        limit = query.limit
        start = ""
        if query.continue_token:
            token_rv, start = decode_continue(query.continue_token)
            if token_rv <= 0:
                entries, list_rv = table.sorted_entries(), self.store.rv
            else:
                try:
                    entries = self.store.snapshot(table, token_rv)
                except ApiError:
                    raise errors.expired(
                        "The provided continue parameter is too old to display a consistent list "
                        "result. You can "
                        "start a new list without the continue parameter, or use the continue token in this "
                        "response to retrieve the remainder of the results. Continuing with the "
                        "provided token "
                        "results in an inconsistent list - objects that were created, modified, or "
                        "deleted between "
                        "the time the first chunk was returned and now may show up in the list.",
                        encode_continue(-1, start.lstrip("/")),
                    ) from None
                list_rv = token_rv
        elif rv_text in ("", "0"):
            entries, list_rv = table.sorted_entries(), self.store.rv
            if rv_text == "0":
                limit = 0
        else:
            requested = self.parse_rv(rv_text)
            if requested > self.store.rv:
                raise errors.too_large_resource_version(requested, self.store.rv)
            if match == "Exact" or (match == "" and limit > 0):
                entries, list_rv = self.store.snapshot(table, requested), requested
            else:
                entries, list_rv = table.sorted_entries(), self.store.rv
        items = self._filter(entries, namespace if rt.namespaced else None, query.labels, query.fields, start)
        if limit > 0 and len(items) > limit:
            page, rest = items[:limit], len(items) - limit
            token = encode_continue(list_rv, f"/{page[-1].skey}\x00")
            filtered = query.labels is not None or query.fields is not None
            return ListResult(list_rv, page, token, None if filtered else rest)
        return ListResult(list_rv, items)

    @staticmethod
    def parse_rv(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise errors.bad_request(f'invalid resource version "{text}"') from None
        if value < 0:
            raise errors.bad_request(f'invalid resource version "{text}"')
        return value

    @staticmethod
    def _filter(
        entries: list[Entry],
        namespace: str | None,
        labels: Selector | None,
        fields: FieldSelector | None,
        start: str,
    ) -> list[Entry]:
        if namespace is None and labels is None and fields is None and not start:
            return entries
        out = []
        for e in entries:
            if namespace is not None and e.namespace != namespace:
                continue
            if start and "/" + e.skey < start:
                continue
            if labels is not None and not labels.matches(e.labels):
                continue
            if fields is not None and not fields.matches(e.fields):
                continue
            out.append(e)
        return out

    # --- watch --------------------------------------------------------------------------------

    def watch(self, rt: ResourceType, namespace: str | None, query: WatchQuery) -> Watcher:
        """Open a watch: queue its initial events (or replay) and register it for new changes."""
        errs: list[FieldError] = []
        if query.send_initial_events is not None:
            if query.resource_version_match != "NotOlderThan":
                errs.append(
                    forbidden_field(
                        "resourceVersionMatch",
                        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                    )
                )
            if not query.bookmarks:
                errs.append(
                    forbidden_field(
                        "allowWatchBookmarks",
                        "sendInitialEvents requires setting allowWatchBookmarks to true",
                    )
                )
        elif query.resource_version_match:
            errs.append(
                forbidden_field(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                )
            )
        if errs:
            raise _list_options_invalid(errs)
        table = self.table(rt)
        watcher = Watcher(
            self.store,
            table,
            rt,
            self.view(rt),
            namespace if rt.namespaced else None,
            query.labels,
            query.fields,
            query.bookmarks,
            self.max_watch_pending_bytes,
        )
        rv_text = query.resource_version
        legacy = rv_text in ("", "0") and query.send_initial_events is None
        watcher.start_rv = self.store.rv
        if query.send_initial_events or legacy:
            # a watch from "" or "0" sends the initial events as one asking for them (the WatchList
            # defaulting), with their closing bookmark when bookmarks are allowed
            watcher.initial(table.sorted_entries())
            watcher.bookmark(initial_events_end=True)
        elif rv_text not in ("", "0"):
            requested = self.parse_rv(rv_text)
            if not self.store.can_replay_from(table, requested):
                status = errors.failure(
                    410, "Expired", f"too old resource version: {requested} ({table.window_start})"
                )
                watcher.push(error_line(status))
                watcher.close()
                return watcher
            watcher.start_rv = requested
            for change in self.store.changes_since(table, requested):
                watcher.offer(change)
                watcher.start_rv = change.rv
        table.watchers.append(watcher)
        return watcher

    def stop_watch(self, watcher: Watcher) -> None:
        watcher.close()
        watcher.cancel_timers()
        with contextlib.suppress(ValueError):
            watcher.table.watchers.remove(watcher)
