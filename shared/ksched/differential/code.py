"""Which ksched a run compared: a digest of the code on the scheduling path, so runs made at different
commits count together when only the harness, the docs or other services changed between them."""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

PACKAGES = ("ksched", "ksched_informer", "ksched_queue", "ksched_scheduler", "ksched_binder")
"""What decides and binds a pod: the shared library and the services of the pipeline (``ksched
simulate`` and the drop-in are in ``ksched``)."""
LEFT_OUT = ("ksched/differential", "ksched/bench")
"""This harness and the benchmarks: neither decides anything."""


def package_roots() -> dict[str, Path]:
    """Where the :data:`PACKAGES` this process imports are."""
    return {p: Path(importlib.import_module(p).__file__ or "").parent for p in PACKAGES}


def tree_roots(tree: Path) -> dict[str, Path]:
    """Where the :data:`PACKAGES` are in a checkout of the repository (``git worktree``, an archive)."""
    services = {p: tree / "services" / p.removeprefix("ksched_") / p for p in PACKAGES if p != "ksched"}
    return {"ksched": tree / "shared" / "ksched", **services}


def code_digest(roots: dict[str, Path] | None = None) -> str:
    """``sha256:`` and 16 hex digits over every ``.py`` file of :data:`PACKAGES` (path and content, the
    files of :data:`LEFT_OUT` and tests left out), from ``roots`` (default :func:`package_roots`):
    equal for runs of the same scheduler. FileNotFoundError names a package folder that is not there
    (a path that is no checkout of the repository)."""
    digest = hashlib.sha256()
    for package, root in sorted((roots or package_roots()).items()):
        if not root.is_dir():
            raise FileNotFoundError(f"no package {package} at {root}: not a checkout of the repository")
        for path in sorted(root.rglob("*.py")):
            name = f"{package}/{path.relative_to(root).as_posix()}"
            if name.startswith(LEFT_OUT) or path.name.endswith("_test.py") or "__pycache__" in name:
                continue
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()[:16]
