"""Grow a clustered table in steps of +10 % and keep it clustered two ways, in one run:

  incremental  dbt appends the step's rows (recluster switched off for the append, so the appended
               bytes can be measured), then `recluster` (the post-hook's macro, default gate) rewrites
               what the gate selects;
  full         the whole table is rebuilt clustered every step (`clustered_table` over all rows).

The tables are models of the benchmarks' own dbt project (benchmarks/dbt_project): recluster_grown
(incremental, the recluster() post-hook), recluster_rebuilt (clustered_table over the view
recluster_all_rows); both hold the rows of its macro recluster_rows.

Per step: bytes appended, bytes rewritten, seconds, and the average per-column depth after the step
(the standard metric, unweighted, from per-file min/max). Totals give the ratios the README and
the benchmark report quote: bytes rewritten / bytes appended for each way, and time incremental /
time full.

    .venv/bin/python benchmarks/bench_recluster.py [--rows 1000000] [--steps 10] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from common.dbt import PROJECT as DBT_PROJECT
from spark_clustering_dev.dbt import run_dbt, run_operation_json
from spark_clustering_dev.metrics_reference import column_metrics
from spark_clustering_dev.paths import WORK
from spark_clustering_dev.recluster_case import data_files
from spark_clustering_dev.spark import get_spark

SCHEMA = "bench_recluster"
COLUMNS = ["a", "b", "c"]  # the models' cluster_by


def dbt(args: list[str], vars: dict):
    return run_dbt(args, schema=SCHEMA, vars=vars, project_dir=DBT_PROJECT)


def average_depth(spark, table) -> float:
    """Mean over the clustering columns of the per-column average depth (per-file min/max)."""
    aggs = ", ".join(f"min({c}), max({c})" for c in COLUMNS)
    rows = spark.sql(f"select {aggs} from {table} group by _metadata.file_path").collect()
    depths = [column_metrics([(r[2 * i], r[2 * i + 1]) for r in rows])["average_depth"] for i in range(len(COLUMNS))]
    return sum(depths) / len(depths)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows before the first step")
    parser.add_argument("--file-rows", type=int, default=50_000, help="cluster_target_file_rows")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--growth", type=float, default=0.10, help="each step adds this share of the current rows")
    parser.add_argument("--max-average-depth", default="auto",
                        help="the gate's recluster.max_average_depth (default auto, as the package)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    spark = get_spark(WORK / "bench-recluster", app_name="bench_recluster")
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"drop database if exists {SCHEMA} cascade")
    spark.sql(f"create database {SCHEMA}")
    gate = {} if args.max_average_depth == "auto" else {"max_average_depth": float(args.max_average_depth)}
    incr_vars = {"file_rows": args.file_rows, "recluster": gate}
    full_vars = {"file_rows": args.file_rows}

    def rebuild_full(end: int) -> tuple[float, int]:
        dbt(["run", "--select", "recluster_all_rows"], {**full_vars, "end": end})  # the view, untimed
        started = time.monotonic()
        dbt(["run", "--select", "recluster_rebuilt"], full_vars)
        return time.monotonic() - started, sum(data_files(spark, f"{SCHEMA}.rebuilt").values())

    # Step 0: both tables clustered from the same rows.
    end = args.rows
    dbt(["run", "--select", "recluster_grown"],
        {**incr_vars, "start": 0, "end": end, "recluster": {"max_average_depth": 1, "max_rounds": 1}})
    rebuild_full(end)
    steps = []
    for step in range(1, args.steps + 1):
        add = int(round(end * args.growth))
        before = data_files(spark, f"{SCHEMA}.grown")
        started = time.monotonic()
        dbt(["run", "--select", "recluster_grown"],
            {**incr_vars, "start": end, "end": end + add, "spark_clustering_recluster": False})
        appended = {p: n for p, n in data_files(spark, f"{SCHEMA}.grown").items() if p not in before}
        out = run_operation_json("recluster", {"relation": f"{SCHEMA}.grown"}, schema=SCHEMA,
                                 project_dir=DBT_PROJECT, vars={**incr_vars, "start": 0, "end": 0})
        incr_seconds = time.monotonic() - started
        end += add
        full_seconds, full_bytes = rebuild_full(end)
        steps.append({
            "step": step, "rows": end, "bytes_appended": sum(appended.values()),
            "incremental": {"decision": out["decision"], "rounds": len(out["rounds"]),
                            "bytes_rewritten": sum(r["bytes_written"] for r in out["rounds"]),
                            "seconds": round(incr_seconds, 2), "files": len(data_files(spark, f"{SCHEMA}.grown")),
                            "average_depth": round(average_depth(spark, f"{SCHEMA}.grown"), 3)},
            "full": {"bytes_rewritten": full_bytes, "seconds": round(full_seconds, 2),
                     "files": len(data_files(spark, f"{SCHEMA}.rebuilt")),
                     "average_depth": round(average_depth(spark, f"{SCHEMA}.rebuilt"), 3)},
        })
        s = steps[-1]
        print(f"step {step:2d}: {end:>10,} rows, +{s['bytes_appended']:>11,} B | incremental {s['incremental']['decision']:<11} "
              f"rewrote {s['incremental']['bytes_rewritten']:>11,} B in {s['incremental']['seconds']:6.1f}s, depth "
              f"{s['incremental']['average_depth']:6.2f} | full rewrote {s['full']['bytes_rewritten']:>11,} B in "
              f"{s['full']['seconds']:6.1f}s, depth {s['full']['average_depth']:6.2f}", flush=True)

    appended = sum(s["bytes_appended"] for s in steps)
    totals = {
        "rows_start": args.rows, "rows_end": end, "steps": args.steps, "file_rows": args.file_rows,
        "max_average_depth": args.max_average_depth,
        "bytes_appended": appended,
        "bytes_rewritten_incremental": sum(s["incremental"]["bytes_rewritten"] for s in steps),
        "bytes_rewritten_full": sum(s["full"]["bytes_rewritten"] for s in steps),
        "seconds_incremental": round(sum(s["incremental"]["seconds"] for s in steps), 1),
        "seconds_full": round(sum(s["full"]["seconds"] for s in steps), 1),
        "average_depth_final_incremental": steps[-1]["incremental"]["average_depth"],
        "average_depth_final_full": steps[-1]["full"]["average_depth"],
    }
    totals["rewrite_ratio_incremental"] = round(totals["bytes_rewritten_incremental"] / appended, 2)
    totals["rewrite_ratio_full"] = round(totals["bytes_rewritten_full"] / appended, 2)
    totals["time_ratio_incremental_to_full"] = round(totals["seconds_incremental"] / totals["seconds_full"], 3)
    totals["depth_ratio_incremental_to_full"] = round(
        totals["average_depth_final_incremental"] / totals["average_depth_final_full"], 3)
    print(f"\n| gate max_average_depth={args.max_average_depth} | bytes rewritten / bytes appended "
          f"| seconds ({args.steps} steps) | average depth after the last step |")
    print("|---|---|---|---|")
    print(f"| recluster (gated, incremental) | {totals['rewrite_ratio_incremental']} | {totals['seconds_incremental']} "
          f"| {totals['average_depth_final_incremental']} |")
    print(f"| full recluster every step | {totals['rewrite_ratio_full']} | {totals['seconds_full']} "
          f"| {totals['average_depth_final_full']} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"totals": totals, "steps": steps}, indent=1))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
