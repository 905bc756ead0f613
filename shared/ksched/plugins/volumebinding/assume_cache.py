"""The assume cache over the cluster's PVs and PVCs (upstream ``passive_assume_cache.go``).

The informed objects live in the snapshot's object tables; this cache only keeps the versions
VolumeBinding assumed in Reserve (a PV pre-bound to its claim, a PVC with the selected-node
annotation). An assumed version is served while the informed object still has the same
resourceVersion; once the informer delivers a newer one (the API update landed, or someone else
changed the object) the assumed entry expires, as upstream's ``mayExpire`` does on informer events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, Protocol, TypeVar

from ksched.api.meta import ObjectMeta
from ksched.plugins.helper.storage import NotFoundError


class _Object(Protocol):
    @property
    def metadata(self) -> ObjectMeta: ...


T = TypeVar("T", bound=_Object)


class AssumeError(RuntimeError):
    """Assuming an object whose informed version moved on (upstream's "out of sync")."""


def object_key(obj: _Object) -> str:
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


class AssumeCache(Generic[T]):
    """Informed objects (read through ``store``) overlaid with assumed versions."""

    def __init__(self, resource: str, store: Callable[[], Mapping[str, T]]) -> None:
        #: the plural resource name used in NotFound errors (``persistentvolumes``)
        self.resource = resource
        self._store = store
        self._assumed: dict[str, T] = {}

    def __len__(self) -> int:
        """Number of assumed entries still current."""
        return sum(1 for key in list(self._assumed) if self._current_assumed(key) is not None)

    def get_api_obj(self, key: str) -> T:
        """The informed object (NotFoundError when the informer does not have it)."""
        obj = self._store().get(key)
        if obj is None:
            raise NotFoundError(self.resource, key)
        return obj

    def get(self, key: str) -> T:
        """The assumed version while it is current, else the informed object."""
        informed = self.get_api_obj(key)
        assumed = self._current_assumed(key)
        return assumed if assumed is not None else informed

    def _current_assumed(self, key: str) -> T | None:
        assumed = self._assumed.get(key)
        if assumed is None:
            return None
        informed = self._store().get(key)
        if informed is None or informed.metadata.resource_version != assumed.metadata.resource_version:
            del self._assumed[key]  # expired: the informer has a newer object (or none)
            return None
        return assumed

    def values(self) -> Iterator[T]:
        """Every informed object, replaced by its assumed version where that is current."""
        assumed = self._assumed
        for key, obj in list(self._store().items()):
            if key in assumed:
                current = self._current_assumed(key)
                yield current if current is not None else obj
            else:
                yield obj

    def assume(self, obj: T) -> None:
        """Serve ``obj`` instead of the informed object of the same resourceVersion."""
        key = object_key(obj)
        stored = self.get_api_obj(key)
        stored_rv, rv = stored.metadata.resource_version, obj.metadata.resource_version
        if stored_rv != rv:
            raise AssumeError(f'"{key}" is out of sync (stored: {stored_rv}, assume: {rv})')
        self._assumed[key] = obj

    def restore(self, obj: T) -> None:
        """Drop the assumed version of ``obj``'s key if it is the one of ``obj``'s resourceVersion."""
        key = object_key(obj)
        assumed = self._assumed.get(key)
        if assumed is not None and assumed.metadata.resource_version == obj.metadata.resource_version:
            del self._assumed[key]

    def assumed_keys(self) -> list[str]:
        return [key for key in list(self._assumed) if self._current_assumed(key) is not None]
