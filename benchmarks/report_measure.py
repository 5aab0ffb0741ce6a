"""The measuring half of the benchmark report (benchmarks/report.py): builds every layout of the
telemetry, TPC-DS store_sales and TPC-H lineitem rows, scores their pruning, times the key functions, runs the memory
probes and bench_recluster.py, and returns the figures as one JSON-able dict (report_render.py turns
it into markdown and charts)."""
from __future__ import annotations

import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import report_delta
import report_memory
from common import BENCH
from common.datasets import build_lineitem, build_store_sales, build_telemetry
from common.dbt import dbt_runner
from common.keys import boundaries_sql, native_variants, run_once, warm_up
from common.machine import machine_facts
from common.timing import JvmCpu, ctas, with_cpu
from common.workloads import (column_bounds, make_workloads, matching_rows, mean_file_span, pruning_scores,
                              spark_file_boxes)
from spark_clustering_dev.layout import fingerprint
from spark_clustering_dev.paths import INTEGRATION_TESTS, REPO, WORK, local
from spark_clustering_dev.spark import get_spark

SCHEMA = "bench_report"
CLUSTER_METHODS = ["linear", "zorder", "hilbert"]
# Variant names: keys of each dataset's "variants" in the results.
DELTA = "delta-rs z_order"
ORDER_BY = "plain ORDER BY"
INSERTION = "insertion order"


# ----------------------------------------------------------------------------------------------
# set-up

def start_spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = {"spark.driver.memory": "6g", **report_memory.metrics_conf()}
    spark = get_spark(WORK / "bench_report", app_name="bench_report", extra_conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"create database if not exists {SCHEMA}")
    return spark


# ----------------------------------------------------------------------------------------------
# layouts

def table_files(spark, table: str) -> list[Path]:
    spark.sql(f"refresh table {table}")
    return [local(f) for f in spark.table(table).inputFiles()]


def build_spark_variants(spark, dbt, ds, cpu, rounds: int) -> dict[str, dict]:
    """insertion order, plain ORDER BY, and the package's linear / zorder / hilbert, `ds.files` files
    each, every one built `rounds` times in turn (a burst of outside load hits them alike), each
    round starting one variant later than the last (no variant always runs right after the same
    one); a variant's cost is its fastest round (wall and CPU each)."""
    prefix = f"{SCHEMA}.{ds.name}"
    builders = {
        INSERTION: (f"{prefix}_insertion", lambda: ctas(
            spark, f"{prefix}_insertion",
            f"select /*+ REPARTITION_BY_RANGE({ds.files}, {ds.order_column}) */ * from {ds.table} "
            f"sort by {ds.order_column}", ds.files)),
        ORDER_BY: (f"{prefix}_order_by", lambda: ctas(
            spark, f"{prefix}_order_by", f"select * from {ds.table} order by {', '.join(ds.columns)}", ds.files)),
    }
    for method in CLUSTER_METHODS:
        alias = f"{ds.name}_clustered_{method}"  # not telemetry_<method>: the example models own those names

        def build(method=method, alias=alias):
            run = dbt(["run", "--select", "report_layout"], SCHEMA,
                      {"source": ds.table, "layout_alias": alias, "method": method,
                       "cluster_by": ds.columns, "num_files": ds.files})
            # dbt's own execution time of the model: sampling, boundaries, write, validation and swap.
            return run.node_results()["report_layout"].execution_time

        builders[f"clustered {method}"] = (f"{SCHEMA}.{alias}", build)
    timings = {name: [] for name in builders}
    names = list(builders)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            timings[name].append(with_cpu(cpu, builders[name][1]))
    out = {}
    for name, (table, _) in builders.items():
        cpus = [c for _, c in timings[name] if c is not None]
        out[name] = {"table": table, "build_seconds": min(w for w, _ in timings[name]),
                     "build_cpu_seconds": min(cpus) if cpus else None,
                     "build_rounds": [{"wall": w, "cpu": c} for w, c in timings[name]]}
    return out


def describe_spark_variant(spark, ds, variant: dict, expected_fingerprint) -> None:
    paths = table_files(spark, variant["table"])
    variant["bytes"] = sum(p.stat().st_size for p in paths)
    variant["file_boxes"] = spark_file_boxes(spark, variant["table"], ds.numeric)
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
    scanned = spark_file_boxes(spark, view, ds.numeric, file_column="_file")
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


def measure_dataset(spark, dbt, ds, bounds, workloads, cpu, rounds: int) -> dict:
    print(f"[{ds.name}] {ds.rows:,} rows: building the layouts, {rounds} round(s)", flush=True)
    expected = fingerprint(spark, ds.table)
    variants = build_spark_variants(spark, dbt, ds, cpu, rounds)
    for variant in variants.values():
        describe_spark_variant(spark, ds, variant, expected)
    print(f"[{ds.name}] delta-rs z_order", flush=True)
    variants[DELTA] = build_delta_variant(spark, ds, expected)
    print(f"[{ds.name}] pruning", flush=True)
    matching = {w.name: matching_rows(spark, ds.table, ds.numeric, w.boxes) for w in workloads}
    base, base_cpu = variants[ORDER_BY]["build_seconds"], variants[ORDER_BY]["build_cpu_seconds"]
    for name, variant in variants.items():
        variant["pruning"] = {w.name: pruning_scores(variant["file_boxes"], w.boxes, matching[w.name])
                              for w in workloads}
        variant["build_over_order_by"] = None if name == DELTA else variant["build_seconds"] / base
        variant["build_cpu_over_order_by"] = (variant["build_cpu_seconds"] / base_cpu
                                              if name != DELTA and base_cpu and variant["build_cpu_seconds"] else None)
        variant["mean_file_span"] = mean_file_span(variant["file_boxes"], bounds)
        del variant["file_boxes"]
    return {"title": ds.title, "table": ds.table, "rows": ds.rows, "files": ds.files, "columns": ds.columns,
            "notes": ds.notes, "workloads": {w.name: {"description": w.description,
                                                     "mean_matching_rows": statistics.mean(matching[w.name])}
                                             for w in workloads},
            "variants": variants}


# ----------------------------------------------------------------------------------------------
# cost and memory

def key_throughput(spark, rows: int, repeat: int) -> dict:
    """The curve keys' native variants (common/keys.py) at `rows` rows: medians over interleaved rounds."""
    variants = native_variants(boundaries_sql())
    cpu = JvmCpu(spark)
    for variant in variants:
        warm_up(spark, variant, rows)
    walls = {v.name: [] for v in variants}
    cpus = {v.name: [] for v in variants}
    for _ in range(repeat):
        for variant in variants:  # interleaved: a burst of outside load hits baseline and variants alike
            wall, cpu_seconds = run_once(spark, variant.expr, rows, cpu)
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

def measure(args, command: str) -> dict:
    """Everything the report shows, measured in one run with `args` (report.py's options)."""
    started = time.monotonic()
    BENCH.mkdir(parents=True, exist_ok=True)
    dbt = dbt_runner("report")
    spark = start_spark()
    load = report_memory.MachineLoad().start({os.getpid()})
    cpu = JvmCpu(spark)

    datasets = {}
    # the telemetry rows are the example's model, telemetry_events, in the integration project
    tele = build_telemetry(spark, dbt_runner("report", INTEGRATION_TESTS), SCHEMA, args.rows, args.files)
    load.note_other_processes()
    tpcds = build_store_sales(spark, SCHEMA, args.tpcds_sf, args.tpcds_files, BENCH / "tpcds")
    tpch = build_lineitem(spark, SCHEMA, args.tpch_sf, args.tpch_files, BENCH / "tpch")
    for ds in (tele, tpcds, tpch):
        bounds = column_bounds(spark, ds.table, ds.numeric)
        workloads = make_workloads(bounds, args.boxes, args.box_fraction, args.seed)
        datasets[ds.name] = measure_dataset(spark, dbt, ds, bounds, workloads, cpu, args.build_rounds)
        load.note_other_processes()
    print("[keys] throughput", flush=True)
    keys = key_throughput(spark, args.rows, args.key_repeat)
    telemetry_dir = table_files(spark, tele.table)[0].parent
    load.note_other_processes()
    load.stop()
    results = {"date": datetime.date.today().isoformat(), "command": command.strip(), "args": vars(args),
               "machine": machine_facts(), "spark": spark.version, "master": spark.sparkContext.master,
               "load": {"other_cores": load.other_cores(), "other_processes": sorted(load.other_processes)},
               "datasets": datasets, "key_throughput": keys, "memory_rows": tele.rows}
    spark.stop()
    print("[memory] local, then standalone cluster", flush=True)
    results["memory"] = memory_probes(telemetry_dir, args.files)
    print("[recluster]", flush=True)
    results["recluster"] = recluster_figures(args.recluster_rows)
    results["wall_seconds"] = time.monotonic() - started
    return results


def save(results: dict, path: Path = BENCH / "report.json") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, default=str))
