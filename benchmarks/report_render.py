"""The rendering half of the benchmark report (benchmarks/report.py): from the results dict of
report_measure.measure (or a saved build/bench/report.json), the markdown of build/bench/report.md and
docs/benchmarks.md, the README block between `<!-- bench:begin -->` and `<!-- bench:end -->`, and the
charts (report_charts). Needs no Spark."""
from __future__ import annotations

import os
import re

import report_charts
from common import BENCH
from report_measure import DELTA
from spark_clustering_dev.paths import REPO

IMG = REPO / "docs" / "img"
README = REPO / "README.md"
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def flat_figures(figures: dict, prefix: str = "") -> dict:
    """Scalars of bench_recluster.py's JSON with nested dicts flattened to dotted keys (lists, such as
    per-step rows, stay in the JSON file)."""
    flat = {}
    for key, value in figures.items():
        if isinstance(value, dict):
            flat.update(flat_figures(value, f"{prefix}{key}."))
        elif not isinstance(value, list):
            flat[f"{prefix}{key}"] = value
    return flat


def ratio_figures(figures: dict) -> dict:
    return {k: v for k, v in flat_figures(figures).items() if "ratio" in k.lower()}


def gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def fmt_ratio(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def machine_line(results: dict) -> str:
    m, load = results["machine"], results["load"]
    shared = (f"shared with other processes ({', '.join(sorted(load['other_processes'])) or 'unnamed'}; they kept "
              f"{load['other_cores']:.2f} cores busy on average)" if load["other_cores"] >= 0.1 or load["other_processes"]
              else f"quiet machine (other processes: {load['other_cores']:.2f} cores on average)")
    return (f"{results['date']}, {m['cores']} cores, {m['ram_gib']:.1f} GiB RAM ({m['cpu']}), Spark {results['spark']} "
            f"`{results['master']}` (driver and executor in one JVM, -Xmx 6g), {shared}")


def dataset_table(d: dict) -> list[str]:
    workloads = list(d["workloads"])
    head = "| layout | files | MiB | build s | JVM CPU s | build / ORDER BY (wall) | (CPU) | rows preserved | " + " | ".join(
        f"{w}: files scanned / all | {w}: scanned / ideal" for w in workloads) + " |"
    lines = [head, "|---|" + "---:|" * 6 + "---|" + "---:|" * (2 * len(workloads))]
    for name, v in d["variants"].items():
        cpu = v["build_cpu_seconds"]
        cells = [name, str(v["files"]), f"{v['bytes'] / 2**20:.1f}", f"{v['build_seconds']:.1f}",
                 "-" if cpu is None else f"{cpu:.1f}", fmt_ratio(v["build_over_order_by"]),
                 fmt_ratio(v["build_cpu_over_order_by"]), "yes" if v["rows_preserved"] else "NO"]
        for w in workloads:
            p = v["pruning"][w]
            cells += [f"{p['files_scanned_ratio']:.3f}", f"{p['scanned_over_ideal']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def span_table(d: dict) -> list[str]:
    """Why the pruning differs: how wide files are on each column."""
    lines = ["Mean file span / column range (1.00 = every file covers the whole column):", "",
             "| layout | " + " | ".join(d["columns"]) + " |", "|---|" + "---:|" * len(d["columns"])]
    for name, v in d["variants"].items():
        lines.append(f"| {name} | " + " | ".join(f"{v['mean_file_span'][c]:.3f}" for c in d["columns"]) + " |")
    return lines


def recluster_lines(r: dict) -> list[str]:
    if r["status"] == "missing":
        return ["recluster: not measured (bench_recluster.py missing)"]
    if r["status"] == "failed":
        return [f"recluster: `{r['command']}` failed (exit {r['exit_code']}):", "", "```",
                *r["error"], "```"]
    flat, ratios = flat_figures(r["figures"]), ratio_figures(r["figures"])
    lines = [f"`{r['command']}` ({r['seconds']:.0f} s; `bench_recluster.py` is its own benchmark, run as is) "
             "reported (ratios first; per-step figures in build/bench/recluster.json):", "",
             "| key | value |", "|---|---:|"]
    for key, value in {**ratios, **{k: v for k, v in flat.items() if k not in ratios}}.items():
        shown = f"{value:,.3f}" if isinstance(value, float) else (f"{value:,}" if isinstance(value, int) else str(value))
        lines.append(f"| {'**' + key + '**' if key in ratios else key} | {shown} |")
    return lines


MEMORY_LABELS = {"JVMHeapMemory": "heap used", "JVMOffHeapMemory": "off-heap used",
                 "OnHeapExecutionMemory": "Spark execution memory", "DirectPoolMemory": "direct buffers",
                 "ProcessTreeJVMRSSMemory": "RSS seen by Spark"}


def size(n: float) -> str:
    return gib(n) if n >= 2**30 else mib(n)


def memory_lines(probes: dict) -> list[str]:
    lines = ["The telemetry Hilbert build run again by `benchmarks/report_memory_probe.py`, alone in a fresh Spark "
             "application (after a `System.gc()`), so nothing else grew the JVMs first. Resident set: psutil, "
             "every 0.1 s. Spark: executor metrics polled every 100 ms (`spark.executor.metrics.pollingInterval`, "
             "`spark.executor.processTreeMetrics.enabled`), peaks from the REST API `/executors` "
             "(`peakMemoryMetrics`).", "",
             "| mode | JVM | build s | RSS before | RSS peak | " + " | ".join(MEMORY_LABELS.values()) + " |",
             "|---|---|---:|---:|---:|" + "---:|" * len(MEMORY_LABELS)]
    for mode, probe in probes.items():
        if "error" in probe:
            lines.append(f"| {mode} | failed: {' '.join(probe['error'])[-300:]} |")
            continue
        spark_ids = {"driver": "driver", **{f"executor JVM {i + 1}": eid for i, eid in
                                           enumerate(sorted(e for e in probe["spark_executor_peaks"] if e != "driver"))}}
        for jvm, rss in probe["jvm_rss"].items():
            peaks = probe["spark_executor_peaks"].get(spark_ids.get(jvm, ""), {})
            label = jvm if mode == "cluster" else "driver + executor (one JVM)"
            lines.append(f"| {mode} (`{probe['master']}`) | {label} | {probe['build_seconds']:.1f} | "
                         f"{size(rss['before_bytes'])} | {size(rss['peak_bytes'])} | "
                         + " | ".join(size(peaks[k]) if k in peaks else "-" for k in MEMORY_LABELS) + " |")
    settings = next((p["conf"] for p in probes.values() if "conf" in p and p["mode"] == "cluster"), {})
    lines += ["", f"Heap limits: driver -Xmx {settings.get('spark.driver.memory') or '6g'}; cluster executors "
              f"{settings.get('spark.executor.memory') or '-'} each (2 workers x 1 core). Heap used counts garbage "
              "not yet collected, so it tracks the limit more than the need."]
    return lines


def render_report(results: dict, image_prefix: str) -> str:
    a = results["args"]
    out = ["# Benchmark report", "",
           f"Generated by `{results['command']}` in {results['wall_seconds'] / 60:.1f} min.", "",
           f"Machine: {machine_line(results)}.", "",
           "Every variant of a dataset holds the same rows (checked: order-independent fingerprint) in the same "
           "number of files (delta-rs: as close as its target size gets, actual count shown). Every Spark layout "
           f"of a dataset is built {a.get('build_rounds', 1)} time(s) in turn, each round starting one layout later "
           "than the last; its build cost is the fastest round (wall and CPU each; all rounds are in build/bench/report.json).", ""]
    for d in results["datasets"].values():
        out += [f"## {d['title']}: {d['rows']:,} rows, {d['files']} files, cluster on {', '.join(d['columns'])}", ""]
        out += [f"- {n}" for n in d["notes"]]
        for w, info in d["workloads"].items():
            out.append(f"- workload `{w}`: {info['description']} (seed {a['seed']}); mean {info['mean_matching_rows']:,.0f} matching rows")
        delta = d["variants"][DELTA]
        out += [f"- delta-rs: `DeltaTable.optimize.z_order({d['columns']}, target_size={delta['target_size']:,})` "
                f"gave {delta['files']} files (tries (target_size, files): {delta['attempts']}); per-file min/max "
                f"from the Delta log, which {'equals' if delta['log_stats_match_scan'] else 'DIFFERS FROM'} a Spark "
                "scan of the same files; its build time is the z_order call alone (another engine: not "
                "comparable to the Spark CTAS times)", ""]
        out += dataset_table(d) + [""] + span_table(d) + [""]
    out += [f"![files scanned per layout]({image_prefix}bench_pruning.png)", "", "## Cost", "",
            "Build time / plain ORDER BY is in the tables above (same file count, AQE partition coalescing off "
            "for ORDER BY; clustered times are dbt's execution time of the model: the sampling pass, the write, "
            "the row-count validation of the default `cluster_validate: count`, and the swap). The CPU column is the Spark JVM's CPU time over the same span (from /proc), "
            "which other processes on the machine disturb much less than wall time.", "",
            f"Key throughput ({results['key_throughput']['input_rows']:,} rows, `bench_curve_keys.py` queries, "
            f"median of {results['key_throughput']['repeat']} interleaved rounds; ratio = key rate / plain scan rate "
            "on the same inputs, by wall time and by the JVM's CPU time):", "",
            "| function | rows/s | ratio (wall) | ratio (CPU) |", "|---|---:|---:|---:|"]
    for k in results["key_throughput"]["rows"]:
        out.append(f"| {k['variant']} | {k['rows_per_second'] / 1e6:.1f} M | {k['ratio_wall']:.2f} | {fmt_ratio(k['ratio_cpu'])} |")
    out += ["", f"![cost]({image_prefix}bench_cost.png)", "", "### Recluster", ""] + recluster_lines(results["recluster"])
    out += ["", f"## Memory: {results['memory_rows']:,}-row Hilbert build", ""] + memory_lines(results["memory"])
    out += ["", f"![memory]({image_prefix}bench_memory.png)", ""]
    return "\n".join(out) + "\n"


def short_title(d: dict) -> str:
    """`telemetry`, `TPC-DS store_sales`, ...: the dataset's title without scale or detail."""
    return re.sub(r" (SF [\d.]+|\(.*\))$", "", d["title"]).replace("synthetic ", "")


def readme_section(results: dict) -> str:
    datasets = list(results["datasets"].values())
    first = datasets[0]
    w = "all columns"
    data = "; ".join(f"{d['title']}: {d['rows']:,} rows in {d['files']} files, clustered on ({', '.join(d['columns'])})"
                     for d in datasets)
    lines = [f"- Run: `{results['command']}`, {results['wall_seconds'] / 60:.0f} min, {machine_line(results)}.",
             f"- Data: {data}.",
             f"- Workload: {first['workloads'][w]['description']} (seed {results['args']['seed']}). Build cost: "
             f"the fastest of {results['args'].get('build_rounds', 1)} rounds, wall and JVM CPU. The full report "
             "(a second workload, file spans, bytes, delta-rs details, memory) is "
             "[docs/benchmarks.md](docs/benchmarks.md).", "",
             "| layout | " + " | ".join(f"{short_title(d)}: files scanned / all | scanned / ideal | build / ORDER BY "
                                       "(wall, CPU)" for d in datasets) + " |",
             "|---|" + "---:|" * (3 * len(datasets))]
    for name in first["variants"]:
        row = [name if name != DELTA else f"{name} (" + " / ".join(str(d["variants"][name]["files"]) for d in datasets)
               + " files)"]
        for d in datasets:
            v = d["variants"][name]
            cost = ("-" if v["build_over_order_by"] is None
                    else f"{v['build_over_order_by']:.2f}, {fmt_ratio(v['build_cpu_over_order_by'])}")
            row += [f"{v['pruning'][w]['files_scanned_ratio']:.3f}", f"{v['pruning'][w]['scanned_over_ideal']:.2f}", cost]
        lines.append("| " + " | ".join(row) + " |")
    keys = {k["variant"]: k for k in results["key_throughput"]["rows"]}
    mem = results["memory"]
    lines += ["", f"- Key throughput / plain scan ({results['key_throughput']['input_rows']:,} rows, by wall time; CPU: by the JVM's CPU time): "
              + ", ".join(f"{name} {k['ratio_wall']:.2f} (CPU {fmt_ratio(k['ratio_cpu'])})" for name, k in keys.items()) + "."]
    if results["recluster"]["status"] == "ok":
        ratios = ratio_figures(results["recluster"]["figures"])
        lines.append(f"- Recluster (`{results['recluster']['command']}`): " + (", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                                  for k, v in ratios.items()) or "see the full report") + ".")
    else:
        lines.append("- Recluster: " + recluster_lines(results["recluster"])[0].replace("recluster: ", "") + ".")
    lines.append(f"- Peak memory, {results['memory_rows']:,}-row Hilbert build alone in a fresh application: "
                 + memory_summary(mem) + ".")
    lines += ["", "![files scanned per layout](docs/img/bench_pruning.png)"]
    return "\n".join(lines)


def memory_summary(probes: dict) -> str:
    parts = []
    for mode, probe in probes.items():
        if "error" in probe:
            parts.append(f"{mode} mode failed")
            continue
        rss = probe["jvm_rss"]
        peaks = probe["spark_executor_peaks"]
        if mode == "local":
            heap = peaks.get("driver", {}).get("JVMHeapMemory")
            parts.append(f"local mode (one JVM) RSS {gib(rss['driver']['peak_bytes'])}"
                         + (f", heap used {gib(heap)}" if heap else ""))
        else:
            executors = [v["peak_bytes"] for k, v in rss.items() if k != "driver"]
            parts.append(f"standalone cluster driver RSS {gib(rss['driver']['peak_bytes'])}, executors RSS "
                         + " / ".join(gib(e) for e in executors))
    return "; ".join(parts)


def replace_marked_section(text: str, body: str) -> str:
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"README.md has no {BEGIN} ... {END} section")
    return pattern.sub(lambda _: f"{BEGIN}\n{body}\n{END}", text)


def write_outputs(results: dict, publish: bool) -> None:
    """Charts and build/bench/report.md; with `publish`, also docs/img, docs/benchmarks.md and the
    README block."""
    BENCH.mkdir(parents=True, exist_ok=True)
    img = IMG if publish else BENCH / "img"
    img.mkdir(parents=True, exist_ok=True)
    report_charts.pruning_chart(results, img / "bench_pruning.png")
    report_charts.cost_chart(results, img / "bench_cost.png")
    report_charts.memory_chart(results, img / "bench_memory.png")
    prefix = os.path.relpath(img, BENCH) + "/"
    (BENCH / "report.md").write_text(render_report(results, prefix))
    if publish:
        (REPO / "docs" / "benchmarks.md").write_text(render_report(results, "img/"))
        README.write_text(replace_marked_section(README.read_text(), readme_section(results)))
