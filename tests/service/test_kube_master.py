"""kube-scheduler's ``--master``: the API server's address replaces the kubeconfig's, credentials kept."""

from __future__ import annotations

from pathlib import Path

import yaml
from ksched_kubesim import KubeSim

from ksched.client.config import api_client


async def test_master_replaces_the_kubeconfig_server(kubesim: KubeSim, tmp_path: Path) -> None:
    real = kubesim.write_kubeconfig(tmp_path / "real")
    doc = yaml.safe_load(Path(real).read_text())
    server = doc["clusters"][0]["cluster"]["server"]
    doc["clusters"][0]["cluster"]["server"] = "http://127.0.0.1:1"  # nothing listens there
    wrong = tmp_path / "wrong"
    wrong.write_text(yaml.safe_dump(doc))
    api = await api_client(str(wrong), master=server)
    try:
        assert api.configuration.host == server.rstrip("/")
        namespaces = await api.get("/api/v1/namespaces")
        assert "default" in {n["metadata"]["name"] for n in namespaces["items"]}
    finally:
        await api.close()


async def test_master_alone_is_the_whole_configuration() -> None:
    api = await api_client(None, master="http://127.0.0.1:6443/")
    try:
        assert api.configuration.host == "http://127.0.0.1:6443"
    finally:
        await api.close()
