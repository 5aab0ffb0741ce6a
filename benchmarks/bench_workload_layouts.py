"""`cluster_method: auto` against the uniform Hilbert layout, on the files actually written (issue #15).

    .venv/bin/python benchmarks/bench_workload_layouts.py [--quick] [--json build/bench/workload_layouts.json]

For TPC-H lineitem SF 1 (64 files) and the telemetry rows (10,000,000, 64 files), each in one Spark
session: a plain ORDER BY CTAS, the uniform `hilbert` build, and three `auto` builds: one declaring a
skewed workload (70 % one-column ranges on the time column, 20 % on a key column, 10 % boxes on
all three clustering columns), one a uniform workload (boxes on all three), and one with
`cluster_workload: observed` built again after the skewed queries ran through Spark on it. Files scanned are
counted on the written files (exact per-file min/max from a Spark scan) for the workload each was
built for; ratio = auto / hilbert (goal: <= 0.67 skewed, <= 1.05 uniform). Build cost: dbt's
execution time of the model / the ORDER BY CTAS, and the candidate evaluation alone (table property
spark_clustering.layout_seconds). Not a test: it asserts nothing.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time

from common import BENCH
from common.datasets import build_lineitem, build_telemetry
from common.dbt import dbt_runner
from common.timing import JvmCpu, ctas, with_cpu
from common.workloads import column_bounds, matching_rows, pruning_scores, spark_file_boxes
from spark_clustering_dev.layout import skewed_boxes
from spark_clustering_dev.paths import INTEGRATION_TESTS, WORK
from spark_clustering_dev.spark import get_spark

SCHEMA = "bench_report"  # the report's database and warehouse (build/work/bench_report)
EPOCH = datetime.date(1970, 1, 1)


def declared_value(kind: str, x: float):
    """A numeric bound as the column's literal (ints, days and seconds rounded down; the scoring
    reads the rounded literal back, so declared and scored boxes are the same)."""
    n = math.floor(x)
    if kind == "date":
        return (EPOCH + datetime.timedelta(days=n)).isoformat()
    if kind == "timestamp":
        return datetime.datetime.fromtimestamp(n, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    if kind == "int":
        return n
    return x


def numeric_value(kind: str, v) -> float:
    if kind == "date":
        return float((datetime.date.fromisoformat(v) - EPOCH).days)
    if kind == "timestamp":
        return datetime.datetime.strptime(v, "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    return float(v)


def sql_literal(v) -> str:
    return f"'{v}'" if isinstance(v, str) else repr(v)


def workloads(bounds, kinds, time_column, key_column, count, seed):
    """{name: (declared boxes for cluster_workload, the same boxes as doubles for scoring)}."""
    out = {}
    for name, shares in (("skewed", (0.7, 0.2, 0.1)), ("uniform", (0.0, 0.0, 1.0))):
        raw = skewed_boxes(bounds, time_column, key_column, count, seed, shares)
        declared = [{c: [declared_value(kinds[c], lo), declared_value(kinds[c], hi)] for c, (lo, hi) in b.items()}
                    for b in raw]
        numeric = [{c: (numeric_value(kinds[c], lo), numeric_value(kinds[c], hi)) for c, (lo, hi) in b.items()}
                   for b in declared]
        out[name] = (declared, numeric)
    return out


def measure(spark, dbt, cpu, ds, kinds, time_column, key_column, boxes: int, seed: int) -> dict:
    bounds = column_bounds(spark, ds.table, ds.numeric)
    loads = workloads(bounds, kinds, time_column, key_column, boxes, seed)
    matching = {w: matching_rows(spark, ds.table, ds.numeric, numeric) for w, (_, numeric) in loads.items()}

    def build(alias, method, workload):
        def run():
            result = dbt(["run", "--select", "workload_layout"], SCHEMA,
                         {"source": ds.table, "workload_alias": alias, "method": method,
                          "cluster_by": ds.columns, "num_files": ds.files, "workload": workload})
            return result.node_results()["workload_layout"].execution_time
        return with_cpu(cpu, run)

    prefix = f"{SCHEMA}.{ds.name}_wl"
    builds = {"plain ORDER BY": (f"{prefix}_order_by", with_cpu(cpu, lambda: ctas(
        spark, f"{prefix}_order_by", f"select * from {ds.table} order by {', '.join(ds.columns)}", ds.files)))}
    builds["hilbert"] = (f"{prefix}_hilbert", build(f"{ds.name}_wl_hilbert", "hilbert", None))
    for w, (declared, _) in loads.items():
        builds[f"auto ({w} workload)"] = (f"{prefix}_auto_{w}", build(f"{ds.name}_wl_auto_{w}", "auto", declared))
    # observed: the skewed queries run through Spark on the table (built uniform: nothing seen yet),
    # then the table is built again from what the extension recorded
    observed = f"{prefix}_auto_observed"
    spark.sql(f"drop table if exists {observed}")
    build(f"{ds.name}_wl_auto_observed", "auto", "observed")
    for box in loads["skewed"][0]:
        condition = " and ".join(f"{c} between {sql_literal(lo)} and {sql_literal(hi)}" for c, (lo, hi) in box.items())
        spark.sql(f"select count(*) from {observed} where {condition}").collect()
    builds["auto (observed skewed queries)"] = (observed, build(f"{ds.name}_wl_auto_observed", "auto", "observed"))
    base_wall, base_cpu = builds["plain ORDER BY"][1]
    variants = {}
    for name, (table, (wall, cpu_s)) in builds.items():
        files = spark_file_boxes(spark, table, ds.numeric)
        props = {r[0]: r[1] for r in spark.sql(f"show tblproperties {table}").collect()}
        variants[name] = {
            "table": table, "files": len(files), "build_seconds": wall, "build_cpu_seconds": cpu_s,
            "build_over_order_by": wall / base_wall, "build_cpu_over_order_by": (cpu_s / base_cpu) if cpu_s and base_cpu else None,
            "layout": props.get("spark_clustering.layout_name") or None,
            "layout_seconds": float(props["spark_clustering.layout_seconds"]) if props.get("spark_clustering.layout_seconds") else None,
            "simulated_ratio": float(props["spark_clustering.layout_simulated_ratio"]) if props.get("spark_clustering.layout_simulated_ratio") else None,
            "pruning": {w: pruning_scores(files, numeric, matching[w]) for w, (_, numeric) in loads.items()},
        }
    h = variants["hilbert"]["pruning"]
    return {"title": ds.title, "rows": ds.rows, "files": ds.files, "columns": ds.columns, "time_column": time_column,
            "key_column": key_column, "boxes": boxes, "variants": variants,
            "ratios": {"skewed_auto_over_hilbert": variants["auto (skewed workload)"]["pruning"]["skewed"]["files_scanned_ratio"]
                       / h["skewed"]["files_scanned_ratio"],
                       "uniform_auto_over_hilbert": variants["auto (uniform workload)"]["pruning"]["uniform"]["files_scanned_ratio"]
                       / h["uniform"]["files_scanned_ratio"],
                       "observed_skewed_auto_over_hilbert":
                           variants["auto (observed skewed queries)"]["pruning"]["skewed"]["files_scanned_ratio"]
                           / h["skewed"]["files_scanned_ratio"]}}


def render(results: dict) -> str:
    lines = [f"`{results['command']}`, {results['date']}, {results['wall_seconds'] / 60:.0f} min", ""]
    for d in results["datasets"].values():
        lines += [f"### {d['title']}: {d['rows']:,} rows, {d['files']} files, cluster on {', '.join(d['columns'])}", "",
                  f"Workloads of {d['boxes']} boxes, each side 10 % of its column: `skewed` = 70 % ranges on "
                  f"{d['time_column']} alone, 20 % on {d['key_column']} alone, 10 % boxes on all three; `uniform` = "
                  "boxes on all three.", "",
                  "| build | layout | skewed: files scanned / all | uniform: files scanned / all | build / ORDER BY (wall, CPU) | candidate evaluation s |",
                  "|---|---|---:|---:|---:|---:|"]
        for name, v in d["variants"].items():
            cpu = f"{v['build_cpu_over_order_by']:.2f}" if v["build_cpu_over_order_by"] else "-"
            lines.append(f"| {name} | {v['layout'] or '-'} | {v['pruning']['skewed']['files_scanned_ratio']:.3f} | "
                         f"{v['pruning']['uniform']['files_scanned_ratio']:.3f} | {v['build_over_order_by']:.2f}, {cpu} | "
                         f"{v['layout_seconds'] if v['layout_seconds'] is not None else '-'} |")
        r = d["ratios"]
        lines += ["", f"- auto / hilbert, files scanned by the workload it was built for: skewed declared "
                      f"**{r['skewed_auto_over_hilbert']:.2f}**, skewed observed **{r['observed_skewed_auto_over_hilbert']:.2f}**, "
                      f"uniform **{r['uniform_auto_over_hilbert']:.2f}**", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="lineitem SF 0.1 and 200,000 telemetry rows, 16 files")
    parser.add_argument("--boxes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", default=str(BENCH / "workload_layouts.json"))
    args = parser.parse_args(argv)
    started = time.monotonic()
    dbt = dbt_runner("report")
    spark = get_spark(WORK / "bench_report", app_name="bench_report", extra_conf={"spark.driver.memory": "6g"})
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"create database if not exists {SCHEMA}")
    cpu = JvmCpu(spark)
    files = 16 if args.quick else 64
    lineitem = build_lineitem(spark, SCHEMA, 0.1 if args.quick else 1.0, files, BENCH / "tpch")
    # the telemetry rows are the example's model, telemetry_events, in the integration project
    telemetry = build_telemetry(spark, dbt_runner("report", INTEGRATION_TESTS), SCHEMA,
                                200_000 if args.quick else 10_000_000, files)
    results = {"date": datetime.date.today().isoformat(),
               "command": ".venv/bin/python benchmarks/bench_workload_layouts.py " + " ".join(sys.argv[1:] if argv is None else argv),
               "datasets": {}}
    results["datasets"]["lineitem"] = measure(spark, dbt, cpu, lineitem, {"l_shipdate": "date", "l_partkey": "int", "l_suppkey": "int"},
                                              "l_shipdate", "l_partkey", args.boxes, args.seed)
    results["datasets"]["telemetry"] = measure(spark, dbt, cpu, telemetry, {"mission_id": "int", "ts": "timestamp", "reading_value": "double"},
                                               "ts", "mission_id", args.boxes, args.seed)
    results["wall_seconds"] = time.monotonic() - started
    spark.stop()
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1, default=str)
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
