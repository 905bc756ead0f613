"""The OpenTelemetry export is optional and free when off: a service started without
``--tracing-config-file`` has imported nothing of OpenTelemetry; with one it has (so the check can
fail). Each run is a fresh interpreter starting the binder against the session's NATS and kubesim;
and a bad TracingConfiguration is refused naming its field, as kube-apiserver words it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from ksched.service.tracing_config import TracingConfigError, load_tracing_config

STARTS_A_BINDER = """
import asyncio, sys
from ksched.config import default_config
from dataclasses import replace
from ksched.service.options import add_common_arguments, common_options
from ksched_binder.options import BinderOptions
from ksched_binder.service import BinderService
import argparse

async def main() -> None:
    parser = argparse.ArgumentParser()
    add_common_arguments(parser, 0, env={})
    common = common_options(parser.parse_args(sys.argv[1:]), "binder")
    common = replace(common, http_host="127.0.0.1", http_port=0, identity="otel-probe")
    options = BinderOptions(common=common, workers=1)
    service = BinderService(options, default_config())
    await service.start()
    print("STARTED", any(m == "opentelemetry" or m.startswith("opentelemetry.") for m in sys.modules))
    await service.stop()

asyncio.run(main())
"""


async def imported_opentelemetry(nats_url: str, kubeconfig: Path, *flags: str) -> bool:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        STARTS_A_BINDER,
        "--nats",
        nats_url,
        "--kubeconfig",
        str(kubeconfig),
        "--subject-prefix",
        "otelprobe",
        *flags,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    line = next((x for x in out.decode().splitlines() if x.startswith("STARTED")), "")
    assert proc.returncode == 0 and line, err.decode()[-2000:]
    return line.split()[1] == "True"


async def test_a_service_without_the_flag_imports_no_opentelemetry(
    nats_url: str, kubesim_kubeconfig: Path, tmp_path: Path
) -> None:
    assert not await imported_opentelemetry(nats_url, kubesim_kubeconfig)
    config = tmp_path / "tracing.yaml"
    config.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: 127.0.0.1:9\n"
    )
    assert await imported_opentelemetry(nats_url, kubesim_kubeconfig, "--tracing-config-file", str(config))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "samplingRatePerMillion: 2000000",
            "samplingRatePerMillion: Invalid value: 2000000: sampling rate per million must be less than or "
            "equal to one million",
        ),
        (
            "samplingRatePerMillion: -1",
            "samplingRatePerMillion: Invalid value: -1: sampling rate must be positive",
        ),
        (
            "endpoint: http://collector:4318",
            'endpoint: Invalid value: "http://collector:4318": unsupported scheme: http.',
        ),
        ("samplingRatePerMillion: lots", "samplingRatePerMillion: Invalid value: 'lots': must be an integer"),
    ],
)
def test_bad_tracing_configurations_are_refused_naming_the_field(
    tmp_path: Path, body: str, message: str
) -> None:
    path = tmp_path / "tracing.yaml"
    path.write_text(f"apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n{body}\n")
    with pytest.raises(TracingConfigError) as err:
        load_tracing_config(str(path))
    assert message in str(err.value) and str(path) in str(err.value)


def test_defaults_and_the_older_api_versions(tmp_path: Path) -> None:
    path = tmp_path / "tracing.yaml"
    path.write_text("apiVersion: apiserver.k8s.io/v1beta1\nkind: TracingConfiguration\n")
    config = load_tracing_config(str(path))
    assert (config.endpoint, config.sampling_rate_per_million) == ("localhost:4317", 0)
    path.write_text("apiVersion: v1\nkind: Pod\n")
    with pytest.raises(TracingConfigError, match="no kind 'Pod' is registered"):
        load_tracing_config(str(path))
