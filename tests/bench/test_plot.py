"""``ksched bench plot`` on recorded ``ksched bench compare`` output (compare-rates.log: the JSON lines
and some progress lines of real runs, 2026-12-06): the reports are read, the steady-rate ones drawn."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksched.bench.cli import main
from ksched.bench.plot import plot, read_reports, series, table

LOG = Path(__file__).with_name("compare-rates.log")


def test_the_reports_are_the_json_lines_with_both_sides() -> None:
    reports = read_reports([LOG])
    assert {(r.nodes, r.rate) for r in reports} >= {(2000, 10.0), (2000, 150.0), (5000, 10.0), (2000, 0.0)}
    assert all(r.source == LOG.name and set(r.sides) == {"kube_scheduler", "ksched"} for r in reports)


def test_a_series_is_by_rate_without_bursts() -> None:
    reports = read_reports([LOG])
    points = series(reports, 2000, "ksched", "p99")
    assert [rate for rate, _ in points] == sorted(r.rate for r in reports if r.nodes == 2000 and r.rate > 0)
    assert all(latency > 0 for _, latency in points)
    assert series(reports, 1234, "ksched", "p50") == []


def test_the_plot_is_written_with_a_panel_per_size(tmp_path: Path) -> None:
    out = tmp_path / "images" / "latency.png"
    assert plot(read_reports([LOG]), out) == [2000, 5000]
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    svg = tmp_path / "latency.svg"
    plot(read_reports([LOG]), svg, title="t")
    assert b"<svg" in svg.read_bytes()


def test_bursts_alone_cannot_be_plotted(tmp_path: Path) -> None:
    bursts = [r for r in read_reports([LOG]) if r.rate == 0]
    assert bursts
    with pytest.raises(ValueError, match="steady rate"):
        plot(bursts, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_the_command_draws_and_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plot.png"
    assert main(["plot", str(LOG), "--output", str(out), "--table"]) == 0
    printed = capsys.readouterr().out
    assert out.exists() and f"wrote {out}" in printed
    rows = [line for line in printed.splitlines() if line.startswith("| 2,000 | plain | 10/s |")]
    assert [row.split(" | ")[3] for row in rows] == ["kube-scheduler", "ksched"]
    assert table(read_reports([LOG])).count("\n") == 1 + 2 * len(read_reports([LOG]))


def test_a_file_without_reports_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "progress.log"
    empty.write_text("[ksched] control plane up in 5 s\n{not json\n[1, 2]\n")
    with pytest.raises(SystemExit):
        main(["plot", str(empty), "--output", str(tmp_path / "x.png")])
