"""Clustered CTAS vs plain ORDER BY CTAS, and what each layout buys a box workload. One run, one
Spark session, the same rows for every variant.

    .venv/bin/python benchmarks/bench_clustered_write.py [--rows 5000000] [--files 40] [--boxes 60]

Source: the example's synthetic telemetry (`telemetry_events`, generated in SQL) at --rows rows.
Variants, all written as --files parquet files:
  * insertion order: range-partitioned on event_id (the order rows were generated in);
  * plain ORDER BY:  `create table .. as select * .. order by mission_id, ts, reading_value`;
  * clustered_table: linear / zorder / hilbert on (mission_id, ts, reading_value), through dbt
    (the benchmarks' own project, benchmarks/dbt_project: model clustered_write).
Time ratio = variant build time / plain ORDER BY time (dbt's own execution time for the model,
which includes boundaries, key, validation and swap). Pruning: --boxes random boxes, each 10 % of
every column's range; files scanned = files whose min/max box intersects the query box; ideal =
ceil(matching rows / rows per file). Not a test: prints a markdown table, asserts nothing.
"""
from __future__ import annotations

import argparse
import math
import random
import sys
import time

from common.dbt import PROJECT as DBT_PROJECT
from spark_clustering_dev.dbt import run_dbt
from spark_clustering_dev.layout import fingerprint
from spark_clustering_dev.paths import WORK
from spark_clustering_dev.spark import get_spark

SCHEMA = "bench_write"
COLUMNS = ["mission_id", "ts", "reading_value"]
NUMERIC = {"mission_id": "cast(mission_id as double)", "ts": "cast(ts as double)",
           "reading_value": "reading_value"}


def timed(fn):
    start = time.monotonic()
    fn()
    return time.monotonic() - start


def file_boxes(spark, table):
    aggs = ", ".join(f"min({NUMERIC[c]}) as {c}_lo, max({NUMERIC[c]}) as {c}_hi" for c in COLUMNS)
    return [r.asDict() for r in spark.sql(f"select count(*) as n, {aggs} from {table} group by _metadata.file_path").collect()]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--boxes", type=int, default=60)
    args = parser.parse_args()

    spark = get_spark(WORK / "bench_write", app_name="bench_clustered_write",
                      extra_conf={"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": str(args.files)})
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"create database if not exists {SCHEMA}")
    src = f"{SCHEMA}.telemetry_events"
    run_dbt(["run", "--select", "telemetry_events"], schema=SCHEMA, vars={"telemetry_rows": args.rows})
    spark.sql(f"select count(*) from {src}").collect()  # warm the file listing + JIT

    tables, seconds = {}, {}
    for name, order in [("insertion order", "event_id"), ("plain ORDER BY", ", ".join(COLUMNS))]:
        table = f"{SCHEMA}.{name.split()[0]}_{'ctas'}"
        spark.sql(f"drop table if exists {table}")
        hint = f"/*+ REPARTITION_BY_RANGE({args.files}, event_id) */" if name == "insertion order" else ""
        clause = "sort by event_id" if name == "insertion order" else f"order by {order}"
        # AQE would coalesce ORDER BY's shuffle to a few partitions: same file count for every variant.
        spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
        seconds[name] = timed(lambda: spark.sql(f"create table {table} using parquet as select {hint} * from {src} {clause}"))
        spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")
        tables[name] = table
    for method in ["linear", "zorder", "hilbert"]:
        alias = f"clustered_{method}"
        run = run_dbt(["run", "--select", "clustered_write"], schema=SCHEMA, project_dir=DBT_PROJECT,
                      vars={"source": src, "write_alias": alias, "method": method,
                            "cluster_by": COLUMNS, "num_files": args.files})
        seconds[f"clustered {method}"] = run.node_results()["clustered_write"].execution_time
        tables[f"clustered {method}"] = f"{SCHEMA}.{alias}"

    expected = fingerprint(spark, src)
    bounds = spark.sql("select " + ", ".join(f"min({NUMERIC[c]}), max({NUMERIC[c]})" for c in COLUMNS) + f" from {src}").first()
    rng = random.Random(11)
    boxes = []
    for _ in range(args.boxes):
        box = {}
        for i, c in enumerate(COLUMNS):
            lo, hi = float(bounds[2 * i]), float(bounds[2 * i + 1])
            start = rng.uniform(lo, hi - 0.1 * (hi - lo))
            box[c] = (start, start + 0.1 * (hi - lo))
        boxes.append(box)
    where = [" and ".join(f"{NUMERIC[c]} between {lo!r} and {hi!r}" for c, (lo, hi) in b.items()) for b in boxes]
    matching = [spark.sql(f"select count(*) from {src} where {w}").first()[0] for w in where]

    print(f"\n{args.rows:,} rows, {args.files} files per variant, {args.boxes} random boxes (10 % of each of "
          f"{', '.join(COLUMNS)})\n")
    print("| variant | files | build s | time / plain ORDER BY | rows preserved | files scanned / all | scanned / ideal |")
    print("|---|---|---|---|---|---|---|")
    for name, table in tables.items():
        files = file_boxes(spark, table)
        rows_per_file = sum(f["n"] for f in files) / len(files)
        scanned, over_ideal = [], []
        for box, m in zip(boxes, matching):
            hit = sum(all(f[f"{c}_lo"] <= hi and f[f"{c}_hi"] >= lo for c, (lo, hi) in box.items()) for f in files)
            scanned.append(hit / len(files))
            over_ideal.append(hit / max(1, math.ceil(m / rows_per_file)))
        same = fingerprint(spark, table, [f.name for f in spark.table(src).schema.fields]) == expected
        print(f"| {name} | {len(files)} | {seconds[name]:.1f} | {seconds[name] / seconds['plain ORDER BY']:.2f} | "
              f"{'yes' if same else 'NO'} | {sum(scanned) / len(scanned):.3f} | {sum(over_ideal) / len(over_ideal):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
