"""Services refuse to start with extender settings they cannot use, as kube-scheduler does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
- urlPrefix: https://127.0.0.1:9/x
  filterVerb: filter
  tlsConfig: {insecure: true, caData: "LS0tLS0="}
"""


@pytest.mark.parametrize("service", ["scheduler", "binder"])
def test_unusable_tls_settings_stop_the_service(service: str, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    out = subprocess.run(
        [sys.executable, "-m", "ksched.cli", service, "--config", str(config)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert out.returncode == 2
    assert (
        "couldn't build extenders: specifying a root certificates file with the insecure flag" in out.stderr
    )
