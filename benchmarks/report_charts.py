"""PNG charts of the report's results (matplotlib, no display)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def grouped_bars(ax, groups: list[str], series: dict[str, list[float]], ylabel: str, title: str, fmt: str) -> None:
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, values, width, label=label)
        ax.bar_label(bars, labels=[fmt.format(v) for v in values], fontsize=7, padding=1)
    ax.set_xticks(range(len(groups)), groups, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)


def pruning_chart(results: dict, path: Path) -> None:
    """Files scanned / all files per variant, one panel per workload, one bar per dataset."""
    datasets = results["datasets"]
    workloads = list(next(iter(datasets.values()))["workloads"])
    variants = list(next(iter(datasets.values()))["variants"])
    fig, axes = plt.subplots(1, len(workloads), figsize=(6 * len(workloads), 4.2), squeeze=False)
    for ax, workload in zip(axes[0], workloads):
        series = {d["title"]: [d["variants"][v]["pruning"][workload]["files_scanned_ratio"] for v in variants]
                  for d in datasets.values()}
        grouped_bars(ax, variants, series, "files scanned / all files (lower is better)",
                     f"workload: {workload}", "{:.2f}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cost_chart(results: dict, path: Path) -> None:
    """Build time relative to plain ORDER BY per variant, and key throughput relative to a scan."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    datasets = results["datasets"]
    variants = [v for v in next(iter(datasets.values()))["variants"] if v != "delta-rs z_order"]
    series = {d["title"]: [d["variants"][v]["build_over_order_by"] for v in variants] for d in datasets.values()}
    grouped_bars(left, variants, series, "build time / plain ORDER BY", "Spark CTAS time (same file count)", "{:.2f}")
    keys = results["key_throughput"]["rows"]
    names = [k["variant"] for k in keys]
    grouped_bars(right, names, {"wall time": [k["ratio_wall"] for k in keys],
                                "JVM CPU time": [k["ratio_cpu"] or 0.0 for k in keys]},
                 "key rate / plain scan rate (1 = free)", "native key functions vs a plain scan", "{:.2f}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def memory_chart(results: dict, path: Path) -> None:
    """JVM resident set over the report's Spark phases, the Hilbert build shaded."""
    memory = results["memory"]
    times = [t for t, _ in memory["rss_timeline"]]
    gib = [rss / 2**30 for _, rss in memory["rss_timeline"]]
    fig, ax = plt.subplots(figsize=(10, 3.8))
    ax.plot(times, gib, lw=1, label="JVM RSS (psutil)")
    start, end = memory["hilbert_window"]
    ax.axvspan(start, end, color="orange", alpha=0.25, label="10M-row Hilbert build" if memory["rows"] >= 10_000_000
               else f"{memory['rows']:,}-row Hilbert build")
    heap = memory["spark_stage_peaks"].get("JVMHeapMemory")
    if heap:
        ax.hlines(heap / 2**30, start, end, colors="red", lw=1.5, label="Spark peak JVM heap used (build stages)")
    ax.set_xlabel("seconds since the session started")
    ax.set_ylabel("GiB")
    ax.set_title("Spark JVM memory (local mode: driver and executor are one JVM)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
