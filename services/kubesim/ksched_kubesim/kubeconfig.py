"""A kubeconfig file pointing at kubesim (what clients load with ``config.load_kube_config``)."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

CONTEXT = "kubesim"


def kubeconfig(
    url: str, token: str | None, ca_data: str | None = None, namespace: str = "default"
) -> dict[str, object]:
    user: dict[str, str] = {"token": token} if token else {}
    cluster: dict[str, str] = {"server": url}
    if ca_data:
        cluster["certificate-authority-data"] = ca_data
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": user}],
        "contexts": [
            {"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, url: str, token: str | None, ca_data: str | None = None) -> Path:
    """Write the kubeconfig atomically with owner-only permissions (it holds the token)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(kubeconfig(url, token, ca_data), fh, sort_keys=False)
    tmp.replace(target)
    return target
