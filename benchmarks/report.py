"""One command for the benchmark report (issue #7): pruning, cost and memory of the package's
layouts against insertion order, plain ORDER BY and delta-rs Z-order, on synthetic telemetry and
TPC-DS store_sales, measured in one run.

    .venv/bin/python benchmarks/report.py [--rows 10000000] [--quick]

Writes build/bench/report.md and build/bench/report.json. A full run also writes the charts to
docs/img/bench_*.png, a copy of the report to docs/benchmarks.md and the results table of README.md
(between `<!-- bench:begin -->` and `<!-- bench:end -->`); `--quick` (~200k rows) is a smoke check
that writes only under build/bench/ (unless --publish). Not a test: it asserts nothing.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import report_charts
import report_datasets
import report_delta
import report_memory
import report_pruning
from spark_clustering_dev.dbt import packages_installed, run_dbt
from spark_clustering_dev.layout import fingerprint
from spark_clustering_dev.paths import BUILD, REPO, WORK, local
from spark_clustering_dev.spark import get_spark

BENCH = BUILD / "bench"
IMG = REPO / "docs" / "img"
README = REPO / "README.md"
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
SCHEMA = "bench_report"
CLUSTER_METHODS = ["linear", "zorder", "hilbert"]
DELTA = "delta-rs z_order"
ORDER_BY = "plain ORDER BY"
INSERTION = "insertion order"


# ----------------------------------------------------------------------------------------------
# set-up

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, help="telemetry rows (default 10,000,000; --quick 200,000)")
    parser.add_argument("--quick", action="store_true", help="smoke check: small data, one timing round")
    parser.add_argument("--files", type=int, help="files per telemetry variant (default 64; --quick 16)")
    parser.add_argument("--tpcds-sf", type=float, help="TPC-DS scale factor (default 1 = 2.88M rows; --quick 0.1)")
    parser.add_argument("--tpcds-files", type=int, help="files per store_sales variant (default 32; --quick 16)")
    parser.add_argument("--boxes", type=int, default=60, help="boxes per workload")
    parser.add_argument("--box-fraction", type=float, default=0.1, help="box width per column, share of its range")
    parser.add_argument("--seed", type=int, default=11, help="seed of the box workloads")
    parser.add_argument("--recluster-rows", type=int,
                        help="--rows for bench_recluster.py (default: its own default; --quick 200,000)")
    parser.add_argument("--key-repeat", type=int, help="timed rounds of the key-throughput queries (default 3; --quick 1)")
    parser.add_argument("--render-only", action="store_true",
                        help="measure nothing: rewrite the outputs from the last run's build/bench/report.json")
    parser.add_argument("--publish", action=argparse.BooleanOptionalAction, default=None,
                        help="write docs/img, docs/benchmarks.md and the README table (default: on unless --quick)")
    args = parser.parse_args(argv)
    quick = args.quick
    args.rows = args.rows or (200_000 if quick else 10_000_000)
    args.files = args.files or (16 if quick else 64)
    args.tpcds_sf = args.tpcds_sf or (0.1 if quick else 1.0)
    args.tpcds_files = args.tpcds_files or (16 if quick else 32)
    args.key_repeat = args.key_repeat or (1 if quick else 3)
    args.recluster_rows = args.recluster_rows or (200_000 if quick else None)
    args.publish = (not quick) if args.publish is None else args.publish
    return args


def dbt_runner():
    """run_dbt with this report's own target/log folders (the tests may run dbt at the same time)."""
    # dbt deps rewrites integration_tests/dbt_packages, which a concurrent test run may be reading:
    # skip it when the local package link is already there.
    deps = not packages_installed()
    env = {"DBT_TARGET_PATH": str(BENCH / "dbt-target"), "DBT_LOG_PATH": str(BENCH / "dbt-logs")}

    def run(args: list[str], schema: str, vars: dict) -> object:
        return run_dbt(args, schema=schema, vars=vars, env=env, deps=deps)

    return run


def start_spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = {"spark.driver.memory": "6g", **report_memory.metrics_conf()}
    spark = get_spark(WORK / "bench_report", app_name="bench_report", extra_conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"create database if not exists {SCHEMA}")
    return spark


def timed(fn) -> float:
    start = time.monotonic()
    fn()
    return time.monotonic() - start


# ----------------------------------------------------------------------------------------------
# layouts

def table_files(spark, table: str) -> list[Path]:
    spark.sql(f"refresh table {table}")
    return [local(f) for f in spark.table(table).inputFiles()]


def ctas(spark, table: str, select: str, files: int) -> float:
    """CTAS timed with AQE partition coalescing off, so ORDER BY keeps `files` partitions."""
    spark.sql(f"drop table if exists {table}")
    spark.conf.set("spark.sql.shuffle.partitions", str(files))
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    try:
        return timed(lambda: spark.sql(f"create table {table} using parquet as {select}"))
    finally:
        spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")


def with_cpu(cpu, build) -> tuple[float, float | None]:
    """(the build's own wall seconds, JVM CPU seconds it used): on a shared machine the CPU time a
    build needs moves much less than its wall time."""
    before = cpu.seconds()
    wall = build()
    after = cpu.seconds()
    return wall, (after - before) if before is not None and after is not None else None


def build_spark_variants(spark, dbt, ds, cpu) -> dict[str, dict]:
    """insertion order, plain ORDER BY, and the package's linear / zorder / hilbert, `ds.files` files each."""
    prefix = f"{SCHEMA}.{ds.name}"
    built = {
        INSERTION: (f"{prefix}_insertion", with_cpu(cpu, lambda: ctas(
            spark, f"{prefix}_insertion",
            f"select /*+ REPARTITION_BY_RANGE({ds.files}, {ds.order_column}) */ * from {ds.table} "
            f"sort by {ds.order_column}", ds.files))),
        ORDER_BY: (f"{prefix}_order_by", with_cpu(cpu, lambda: ctas(
            spark, f"{prefix}_order_by", f"select * from {ds.table} order by {', '.join(ds.columns)}", ds.files))),
    }
    for method in CLUSTER_METHODS:
        alias = f"{ds.name}_clustered_{method}"  # not telemetry_<method>: the example models own those names

        def build(method=method, alias=alias):
            run = dbt(["run", "--select", "cluster_case"], SCHEMA,
                      {"case_source": ds.table, "case_alias": alias, "case_method": method,
                       "case_cluster_by": ds.columns, "case_num_files": ds.files})
            # dbt's own execution time of the model: boundaries, key, write, validation and swap.
            return run.node_results()["cluster_case"].execution_time

        built[f"clustered {method}"] = (f"{SCHEMA}.{alias}", with_cpu(cpu, build))
    return {name: {"table": table, "build_seconds": wall, "build_cpu_seconds": cpu_seconds}
            for name, (table, (wall, cpu_seconds)) in built.items()}


def describe_spark_variant(spark, ds, variant: dict, expected_fingerprint) -> None:
    paths = table_files(spark, variant["table"])
    variant["bytes"] = sum(p.stat().st_size for p in paths)
    variant["file_boxes"] = report_pruning.spark_file_boxes(spark, variant["table"], ds.numeric)
    variant["files"] = len(variant["file_boxes"])
    variant["rows"] = sum(f["n"] for f in variant["file_boxes"])
    source_columns = [f.name for f in spark.table(ds.table).schema.fields]
    variant["rows_preserved"] = fingerprint(spark, variant["table"], source_columns) == expected_fingerprint


def build_delta_variant(spark, ds, expected_fingerprint) -> dict:
    """The same rows as a Delta table, z-ordered by delta-rs to (about) the same file count; per-file
    stats from the Delta log, checked against a Spark scan of the files."""
    path = BENCH / "delta" / ds.name
    written_bytes = report_delta.write_delta(table_files(spark, ds.table), path)
    zorder = report_delta.zorder_to_file_count(path, ds.columns, ds.files, written_bytes)
    boxes = report_delta.delta_file_boxes(path, ds.columns)
    view = f"{ds.name}_delta_files"
    # A view hides _metadata: carry the file path as a column.
    files_df = spark.read.parquet(*report_delta.delta_data_files(path))
    files_df.selectExpr("*", "_metadata.file_path as _file").createOrReplaceTempView(view)
    scanned = report_pruning.spark_file_boxes(spark, view, ds.numeric, file_column="_file")
    source_columns = [f.name for f in spark.table(ds.table).schema.fields]
    return {"table": str(path.relative_to(REPO)), "build_seconds": zorder.seconds, "build_cpu_seconds": None,
            "files": zorder.files,
            "bytes": zorder.bytes, "file_boxes": boxes, "rows": sum(b["n"] for b in boxes),
            "rows_preserved": fingerprint(spark, view, source_columns) == expected_fingerprint,
            "log_stats_match_scan": same_file_boxes(boxes, scanned, ds.columns),
            "target_size": zorder.target_size, "attempts": zorder.attempts}


def same_file_boxes(a: list[dict], b: list[dict], columns: list[str]) -> bool:
    def key(f):
        return (f["n"], *[None if f[f"{c}_{e}"] is None else round(f[f"{c}_{e}"], 6) for c in columns for e in ("lo", "hi")])

    return sorted(map(key, a), key=repr) == sorted(map(key, b), key=repr)


def measure_dataset(spark, dbt, ds, bounds, workloads, cpu) -> dict:
    print(f"[{ds.name}] {ds.rows:,} rows: building the layouts", flush=True)
    expected = fingerprint(spark, ds.table)
    variants = build_spark_variants(spark, dbt, ds, cpu)
    for variant in variants.values():
        describe_spark_variant(spark, ds, variant, expected)
    print(f"[{ds.name}] delta-rs z_order", flush=True)
    variants[DELTA] = build_delta_variant(spark, ds, expected)
    print(f"[{ds.name}] pruning", flush=True)
    matching = {w.name: report_pruning.matching_rows(spark, ds.table, ds.numeric, w.boxes) for w in workloads}
    base, base_cpu = variants[ORDER_BY]["build_seconds"], variants[ORDER_BY]["build_cpu_seconds"]
    for name, variant in variants.items():
        variant["pruning"] = {w.name: report_pruning.pruning_scores(variant["file_boxes"], w.boxes, matching[w.name])
                              for w in workloads}
        variant["build_over_order_by"] = None if name == DELTA else variant["build_seconds"] / base
        variant["build_cpu_over_order_by"] = (variant["build_cpu_seconds"] / base_cpu
                                              if name != DELTA and base_cpu and variant["build_cpu_seconds"] else None)
        variant["mean_file_span"] = report_pruning.mean_file_span(variant["file_boxes"], bounds)
        del variant["file_boxes"]
    return {"title": ds.title, "table": ds.table, "rows": ds.rows, "files": ds.files, "columns": ds.columns,
            "notes": ds.notes, "workloads": {w.name: {"description": w.description,
                                                     "mean_matching_rows": statistics.mean(matching[w.name])}
                                             for w in workloads},
            "variants": variants}


# ----------------------------------------------------------------------------------------------
# cost and memory

def key_throughput(spark, rows: int, repeat: int) -> dict:
    """bench_curve_keys' native variants at `rows` rows: medians over interleaved rounds."""
    import bench_curve_keys as keys

    variants = keys.native_variants(keys.boundaries_sql())
    cpu = keys.JvmCpu(spark)
    for variant in variants:
        keys.warm_up(spark, variant, rows)
    walls = {v.name: [] for v in variants}
    cpus = {v.name: [] for v in variants}
    for _ in range(repeat):
        for variant in variants:  # interleaved: a burst of outside load hits baseline and variants alike
            wall, cpu_seconds = keys.run_once(spark, variant.expr, rows, cpu)
            walls[variant.name].append(wall)
            if cpu_seconds is not None:
                cpus[variant.name].append(cpu_seconds)
    wall = {n: statistics.median(v) for n, v in walls.items()}
    cpu_median = {n: statistics.median(v) if v else None for n, v in cpus.items()}
    base_of = {v.baseline: v.name for v in variants if v.name.startswith("baseline")}
    out = []
    for variant in variants:
        if variant.name.startswith("baseline"):
            continue
        base = base_of[variant.baseline]
        out.append({"variant": variant.name.replace("native ", ""), "baseline": base,
                    "rows_per_second": rows / wall[variant.name],
                    "ratio_wall": wall[base] / wall[variant.name],
                    "ratio_cpu": (cpu_median[base] / cpu_median[variant.name]
                                  if cpu_median[base] and cpu_median[variant.name] else None)})
    return {"rows": out, "input_rows": rows, "repeat": repeat}


def memory_probes(source_dir: Path, files: int) -> dict[str, dict]:
    """The Hilbert build again, alone in a fresh application (report_memory_probe.py): local mode,
    then a standalone cluster (driver and executors in separate JVMs)."""
    probes = {}
    for mode in ("local", "cluster"):
        out = BENCH / f"memory_{mode}.json"
        out.unlink(missing_ok=True)
        command = [sys.executable, str(REPO / "benchmarks" / "report_memory_probe.py"), "--source", str(source_dir),
                   "--files", str(files), "--json", str(out)] + (["--cluster"] if mode == "cluster" else [])
        proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=1800)
        (BENCH / f"memory_{mode}.log").write_text(proc.stdout + proc.stderr)
        if proc.returncode == 0 and out.exists():
            probes[mode] = json.loads(out.read_text())
        else:
            probes[mode] = {"mode": mode, "error": (proc.stderr or proc.stdout).strip().splitlines()[-5:]}
    return probes


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


def recluster_figures(rows: int | None) -> dict:
    """Runs benchmarks/bench_recluster.py (written separately) when it exists and reports its JSON."""
    script = REPO / "benchmarks" / "bench_recluster.py"
    if not script.exists():
        return {"status": "missing"}
    out = BENCH / "recluster.json"
    out.unlink(missing_ok=True)
    help_text = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True,
                               cwd=REPO, timeout=300).stdout
    command = [sys.executable, str(script), "--json", str(out)]
    if rows and "--rows" in help_text:
        command += ["--rows", str(rows)]
    start = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=3600)
    shown = " ".join(shlex.quote(str(Path(c).relative_to(REPO)) if c.startswith(str(REPO)) else c) for c in command)
    result = {"command": shown, "seconds": time.monotonic() - start, "exit_code": proc.returncode}
    (BENCH / "recluster.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not out.exists():
        return {**result, "status": "failed", "error": (proc.stderr or proc.stdout).strip().splitlines()[-5:]}
    return {**result, "status": "ok", "figures": json.loads(out.read_text())}


# ----------------------------------------------------------------------------------------------
# rendering

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
           "number of files (delta-rs: as close as its target size gets, actual count shown). Timings are one "
           "run each; Spark's range partitioner samples its cut points, so last digits move between runs.", ""]
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
            "for ORDER BY; clustered times are dbt's execution time of the model: boundaries, keys, write, "
            "validation and swap). The CPU column is the Spark JVM's CPU time over the same span (from /proc), "
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


def readme_section(results: dict) -> str:
    tele, tpcds = results["datasets"]["telemetry"], results["datasets"]["store_sales"]
    w = "all columns"
    lines = [f"- Run: `{results['command']}`, {results['wall_seconds'] / 60:.0f} min, {machine_line(results)}.",
             f"- Data: telemetry {tele['rows']:,} rows in {tele['files']} files, clustered on "
             f"({', '.join(tele['columns'])}); TPC-DS store_sales SF {results['args']['tpcds_sf']:g}, "
             f"{tpcds['rows']:,} rows in {tpcds['files']} files, on ({', '.join(tpcds['columns'])}).",
             f"- Workload: {tele['workloads'][w]['description']} (seed {results['args']['seed']}). The full report "
             "(a second workload, file spans, bytes, delta-rs details, memory) is "
             "[docs/benchmarks.md](docs/benchmarks.md).", "",
             "| layout | telemetry: files scanned / all | scanned / ideal | build / ORDER BY (wall, CPU) | "
             "TPC-DS: files scanned / all | scanned / ideal | build / ORDER BY (wall, CPU) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name in tele["variants"]:
        row = [name if name != DELTA else f"{name} ({tele['variants'][name]['files']} / "
                                          f"{tpcds['variants'][name]['files']} files)"]
        for d in (tele, tpcds):
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


def write_outputs(results: dict) -> None:
    BENCH.mkdir(parents=True, exist_ok=True)
    (BENCH / "report.json").write_text(json.dumps(results, indent=1, default=str))
    img = IMG if results["args"]["publish"] else BENCH / "img"
    img.mkdir(parents=True, exist_ok=True)
    report_charts.pruning_chart(results, img / "bench_pruning.png")
    report_charts.cost_chart(results, img / "bench_cost.png")
    report_charts.memory_chart(results, img / "bench_memory.png")
    prefix = os.path.relpath(img, BENCH) + "/"
    (BENCH / "report.md").write_text(render_report(results, prefix))
    if results["args"]["publish"]:
        (REPO / "docs" / "benchmarks.md").write_text(render_report(results, "img/"))
        README.write_text(replace_marked_section(README.read_text(), readme_section(results)))


# ----------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render_only:
        write_outputs(json.loads((BENCH / "report.json").read_text()))
        print(f"rewrote the outputs of the run in {BENCH / 'report.json'}")
        return 0
    started = time.monotonic()
    command = ".venv/bin/python benchmarks/report.py " + " ".join(sys.argv[1:] if argv is None else argv)
    BENCH.mkdir(parents=True, exist_ok=True)
    dbt = dbt_runner()
    spark = start_spark()
    load = report_memory.MachineLoad().start({os.getpid()})
    import bench_curve_keys

    cpu = bench_curve_keys.JvmCpu(spark)

    datasets = {}
    tele = report_datasets.build_telemetry(spark, dbt, SCHEMA, args.rows, args.files)
    load.note_other_processes()
    tpcds = report_datasets.build_store_sales(spark, SCHEMA, args.tpcds_sf, args.tpcds_files, BENCH / "tpcds")
    for ds in (tele, tpcds):
        bounds = report_pruning.column_bounds(spark, ds.table, ds.numeric)
        workloads = report_pruning.make_workloads(bounds, args.boxes, args.box_fraction, args.seed)
        datasets[ds.name] = measure_dataset(spark, dbt, ds, bounds, workloads, cpu)
        load.note_other_processes()
    print("[keys] throughput", flush=True)
    keys = key_throughput(spark, args.rows, args.key_repeat)
    telemetry_dir = table_files(spark, tele.table)[0].parent
    load.note_other_processes()
    load.stop()
    results = {"date": datetime.date.today().isoformat(), "command": command.strip(), "args": vars(args),
               "machine": report_memory.machine_facts(), "spark": spark.version, "master": spark.sparkContext.master,
               "load": {"other_cores": load.other_cores(), "other_processes": sorted(load.other_processes)},
               "datasets": datasets, "key_throughput": keys, "memory_rows": tele.rows}
    spark.stop()
    print("[memory] local, then standalone cluster", flush=True)
    results["memory"] = memory_probes(telemetry_dir, args.files)
    print("[recluster]", flush=True)
    results["recluster"] = recluster_figures(args.recluster_rows)
    results["wall_seconds"] = time.monotonic() - started
    write_outputs(results)
    print(f"wrote {BENCH / 'report.md'} in {results['wall_seconds']:.0f} s", flush=True)
    print((BENCH / "report.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
