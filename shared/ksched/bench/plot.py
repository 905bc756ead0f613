"""``ksched bench plot``: create-to-bound latency against the pod rate, both schedulers, from the JSON
lines ``ksched bench compare`` prints (docs/benchmarks.md, "Against the real kube-scheduler").

Every line of the given files that is one JSON object with ``kube_scheduler`` and ``ksched`` is a
report; other lines (progress, warnings) are skipped. The reports at a steady rate (``rate`` > 0) are
drawn: p50 and p99 of each side against the rate, one panel per node count, on a logarithmic
latency axis. Burst reports (``rate`` 0) are not drawn (their latency is queueing, in seconds); both
kinds are listed by :func:`table`. matplotlib is an optional dependency (``pip install
'ksched[plot]'``); reading the reports needs none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SIDES = {"kube_scheduler": "kube-scheduler", "ksched": "ksched"}
PERCENTILES = ("p50", "p99")
STYLE = {
    "kube_scheduler": {"color": "tab:blue", "marker": "o"},
    "ksched": {"color": "tab:orange", "marker": "s"},
}
LINES = {"p50": "-", "p99": "--"}


@dataclass(frozen=True)
class Report:
    """One shape of one ``bench compare`` run, as its JSON line holds it."""

    source: str
    nodes: int
    pods: int
    shape: str
    rate: float
    sides: dict[str, dict[str, Any]]

    def latency(self, side: str, percentile: str) -> float | None:
        value = self.sides[side]["latency_ms"].get(percentile)
        return float(value) if value is not None else None


def read_reports(paths: Sequence[Path]) -> list[Report]:
    """The reports in ``paths``, in file and line order."""
    reports: list[Report] = []
    for path in paths:
        for line in path.read_text().splitlines():
            if not line.startswith("{"):
                continue
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if not isinstance(data, dict) or not all(side in data for side in SIDES):
                continue
            reports.append(
                Report(
                    source=path.name,
                    nodes=int(data["nodes"]),
                    pods=int(data["pods"]),
                    shape=str(data["shape"]),
                    rate=float(data.get("rate") or 0.0),
                    sides={side: data[side] for side in SIDES},
                )
            )
    return reports


def series(reports: Iterable[Report], nodes: int, side: str, percentile: str) -> list[tuple[float, float]]:
    """(rate, latency in ms) of one side at ``nodes`` nodes, by rate; bursts and missing figures left out."""
    points = [
        (r.rate, latency)
        for r in reports
        if r.nodes == nodes and r.rate > 0 and (latency := r.latency(side, percentile)) is not None
    ]
    return sorted(points)


def plot(reports: Sequence[Report], output: Path, title: str | None = None) -> list[int]:
    """Draw the steady-rate reports into ``output`` (its suffix picks the format: .png, .svg ...);
    the node counts drawn, one panel each. ValueError when no report has a rate."""
    sizes = sorted({r.nodes for r in reports if r.rate > 0})
    if not sizes:
        raise ValueError("no report at a steady rate (bench compare --rate R) to plot")
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(
        1, len(sizes), figsize=(5.5 * len(sizes), 4.2), sharey=True, squeeze=False, layout="constrained"
    )
    for ax, nodes in zip(axes[0], sizes, strict=True):
        for side, label in SIDES.items():
            for percentile in PERCENTILES:
                points = series(reports, nodes, side, percentile)
                if points:
                    ax.plot(
                        [p[0] for p in points],
                        [p[1] for p in points],
                        linestyle=LINES[percentile],
                        label=f"{label} {percentile}",
                        **STYLE[side],
                    )
        ax.set_title(f"{nodes:,} nodes")
        ax.set_xlabel("pods created per second (one client, steady)")
        ax.set_xticks(sorted({r.rate for r in reports if r.nodes == nodes and r.rate > 0}))
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("create → bound latency, ms")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=len(labels))
    figure.suptitle(title or "Create-to-bound latency against the rate (ksched bench compare)")
    output.parent.mkdir(parents=True, exist_ok=True)
    # No timestamps in the file, so the same reports give the same bytes.
    metadata = {"Software": None} if output.suffix == ".png" else {"Date": None}
    figure.savefig(output, dpi=100, metadata=metadata)
    pyplot.close(figure)
    return sizes


def _cpu(side: dict[str, Any]) -> str:
    per_pod = side["cpu_ms_per_pod"]
    total = per_pod.get("total")
    parts = [f"{name} {value}" for name, value in per_pod.items() if name != "total"]
    return f"{total}" if len(parts) <= 1 else f"{total} ({', '.join(parts)})"


def table(reports: Iterable[Report]) -> str:
    """A Markdown table of the reports, one row per report and side: pods/s, CPU ms per pod (ksched's
    per process), API server and etcd CPU ms per pod, and the latency percentiles in ms."""
    rows = [
        "| nodes | shape | rate | side | pods/s | CPU ms/pod | API server + etcd ms/pod | "
        "latency p50 / p90 / p99 / max, ms | log |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in reports:
        for side, label in SIDES.items():
            out = r.sides[side]
            control = out.get("control_plane_cpu_ms_per_pod", {})
            lat = out["latency_ms"]
            rows.append(
                f"| {r.nodes:,} | {r.shape} | {f'{r.rate:g}/s' if r.rate else 'burst'} | {label} "
                f"| {out['pods_per_second']} | {_cpu(out)} "
                f"| {control.get('kube-apiserver')} + {control.get('etcd')} "
                f"| {lat['p50']} / {lat['p90']} / {lat['p99']} / {lat['max']} | {r.source} |"
            )
    return "\n".join(rows)
