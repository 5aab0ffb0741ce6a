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
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.4))
    datasets = results["datasets"]
    variants = [v for v in next(iter(datasets.values()))["variants"] if v != "delta-rs z_order"]
    series = {}
    for d in datasets.values():
        short = d["title"].split(" (")[0]
        series[f"{short}: wall"] = [d["variants"][v]["build_over_order_by"] for v in variants]
        series[f"{short}: JVM CPU"] = [d["variants"][v]["build_cpu_over_order_by"] or 0.0 for v in variants]
    grouped_bars(left, variants, series, "build / plain ORDER BY", "Spark CTAS cost (same file count)", "{:.2f}")
    keys = results["key_throughput"]["rows"]
    names = [k["variant"] for k in keys]
    grouped_bars(right, names, {"wall time": [k["ratio_wall"] for k in keys],
                                "JVM CPU time": [k["ratio_cpu"] or 0.0 for k in keys]},
                 "key rate / plain scan rate (1 = free)", "native key functions vs a plain scan", "{:.2f}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def memory_chart(results: dict, path: Path) -> None:
    """Resident set of each JVM during the Hilbert build, local mode and standalone cluster."""
    probes = {m: p for m, p in results["memory"].items() if "error" not in p}
    fig, axes = plt.subplots(1, max(1, len(probes)), figsize=(6.5 * max(1, len(probes)), 3.8), squeeze=False)
    for ax, (mode, probe) in zip(axes[0], probes.items()):
        for jvm, rss in probe["jvm_rss"].items():
            label = "driver + executor" if mode == "local" else jvm
            ax.plot([t for t, _ in rss["timeline"]], [b / 2**30 for _, b in rss["timeline"]], lw=1.2, label=label)
        window = max(rss["build_seconds"] for rss in probe["jvm_rss"].values())
        ax.axvspan(0, window, color="orange", alpha=0.15, label="`dbt run` of the model (parse + build)")
        ax.set_xlabel("seconds since the build started")
        ax.set_ylabel("resident set, GiB")
        ax.set_title(f"{probe['rows']:,}-row Hilbert build, {mode} (`{probe['master']}`)", fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
