"""The package's clustering of a Delta Lake or Iceberg table against the format's own clustering, on the
same rows and the same number of files: files read by the box workload (the format's own data skipping,
counted by Spark's scan metrics) and build time. One format per run (a Spark session serves one).

    .venv/bin/python benchmarks/bench_table_formats.py --format delta|iceberg [--sf 1] [--files 64]
        [--queries 60] [--seed 11] [--json build/bench/table_formats_<format>.json]

Rows: TPC-H lineitem (SF 1 = 6,001,215 rows; generated offline by DuckDB's tpch extension, cached in
build/bench/tpch/), clustering columns (l_shipdate, l_partkey, l_suppkey). Layouts, each a table of
the format:
  package hilbert / zorder  dbt `clustered_table` (the benchmark project's format_lineitem model) with
                            file_format = the format and cluster_num_files = --files;
  CTAS ORDER BY             `CREATE TABLE ... AS SELECT ... ORDER BY` the three columns (--files
                            shuffle partitions): the build baseline;
  Delta OPTIMIZE ZORDER BY  a plain CTAS, then OPTIMIZE ZORDER BY the three columns;
  Delta liquid              CREATE TABLE ... CLUSTER BY the three columns AS SELECT, then OPTIMIZE FULL;
  Iceberg zorder            a plain CTAS, then system.rewrite_data_files(strategy => 'sort',
                            sort_order => 'zorder(...)', rewrite-all).
The natives' target file size (Delta spark.databricks.delta.optimize.maxFileSize, Iceberg
target-file-size-bytes) is the plain table's bytes / --files, so every layout has about --files files;
the counts are reported. Build time: the wall time of the statement(s) that lay the files out (for
the natives the CTAS plus the OPTIMIZE / rewrite after it; for the package the model's execution
time as dbt reports it, after an untimed `dbt parse`, so dbt's own start is not counted). Workload: bench_data_skipping's
seeded boxes (one-, two-, three-column and point queries). Per layout: files read (FileSourceScanExec
numFiles for Delta; BatchScanExec resultDataFiles for Iceberg) summed over the workload, and the
ideal (files whose min/max box meets the query box). Answers must be equal across layouts.
Goals (issue 28): files read <= 0.8 x the best native layout's; package build <= 1.15 x CTAS ORDER BY.
The maintenance half (appends, recluster vs the formats' maintenance): bench_format_maintenance.py.
Prints a markdown table; asserts nothing.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import time
from pathlib import Path

import bench_data_skipping as bds
import report_datasets
from spark_clustering_dev.dbt import run_dbt
from spark_clustering_dev.paths import BUILD, WORK
from spark_clustering_dev.spark import get_spark

BENCH = BUILD / "bench"
COLUMNS = report_datasets.LINEITEM_COLUMNS


# the benchmarks' own dbt project (model format_lineitem), not the integration tests' cases
DBT_PROJECT = Path(__file__).resolve().parent / "dbt_project"
DBT_ENV = {"DBT_TARGET_PATH": str(BENCH / "dbt-target-formats"), "DBT_LOG_PATH": str(BENCH / "dbt-logs-formats")}


def dbt_run(args: list[str], schema: str, vars: dict):
    return run_dbt(args, schema=schema, vars=vars, project_dir=DBT_PROJECT, env=DBT_ENV)


def timed(fn) -> float:
    start = time.monotonic()
    fn()
    return round(time.monotonic() - start, 1)


def file_column(fmt: str) -> str:
    return "_metadata.file_path" if fmt == "delta" else "_file"


def files_of(spark, fmt: str, table: str) -> list[dict]:
    """Each live file's min/max box over the clustering columns, from its rows."""
    aggs = ", ".join(f"min({c}) as {c}_lo, max({c}) as {c}_hi" for c in COLUMNS)
    return [r.asDict() for r in spark.sql(f"select {file_column(fmt)} as path, count(*) as n, {aggs} from {table} "
                                          f"group by 1").collect()]


def files_read(df) -> int:
    """Files the query's scans read: numFiles of file-source scans (Delta), resultDataFiles of
    Iceberg's batch scans."""
    total = 0
    for node in bds.plan_nodes(df._jdf.queryExecution().executedPlan()):
        metrics = node.metrics()
        for name in ("numFiles", "resultDataFiles"):
            m = metrics.get(name)
            if m.isDefined():
                total += int(m.get().value())
    return total


def table_bytes(spark, fmt: str, table: str) -> int:
    if fmt == "delta":
        return int(spark.sql(f"describe detail {table}").first()["sizeInBytes"])
    return int(spark.sql(f"select sum(file_size_in_bytes) from {table}.files").first()[0])


def iceberg_zorder_rewrite(table: str, cols: str, target: int, everything: bool) -> str:
    """Iceberg's own z-order: rewrite_data_files with the sort strategy, every file (`rewrite-all`)
    or the files its default selection picks."""
    rewrite_all = ", 'rewrite-all', 'true'" if everything else ""
    return (f"call spark_catalog.system.rewrite_data_files(table => '{table}', strategy => 'sort', "
            f"sort_order => 'zorder({cols})', options => map('target-file-size-bytes', '{target}'{rewrite_all}))")


def bisect_iceberg_target(spark, table: str, statements, target: int, files: int) -> tuple[int, list[float], list]:
    """The target-file-size-bytes at which `statements(size)` (a build of `table` ending in a z-order
    rewrite) gives about `files` files. Iceberg's writer rolls a file at the target size of its
    in-memory estimate, which a z-ordered file (compressing worse) reaches sooner, and not linearly:
    each attempt drops the table and builds it again, bisecting the size (geometric mean of the sizes
    that gave too many and too few files), up to 6 attempts. Returns the size, the seconds of each
    statement of the last attempt, and every (size, files) tried."""
    attempts, size, lo, hi, seconds = [], target, None, None, []
    for _ in range(6):
        spark.sql(f"drop table if exists {table}")
        seconds = [timed(lambda st=st: spark.sql(st).collect()) for st in statements(size)]
        got = int(spark.sql(f"select count(*) from {table}.files").first()[0])
        attempts.append((size, got))
        if abs(got - files) <= max(1, files // 10):
            break
        if got > files:
            lo = size
        else:
            hi = size
        size = int((lo * hi) ** 0.5) if lo and hi else int(size * got / files)
    return size, seconds, attempts


def format_session(fmt: str, app_name: str, files: int):
    """A session of the format for a benchmark: its own warehouse, `files` shuffle partitions, no AQE
    (so a repartition hint gives exactly that many files)."""
    spark = get_spark(WORK / f"{app_name}_{fmt}", app_name=app_name, table_format=fmt,
                      extra_conf={"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": str(files),
                                  "spark.sql.adaptive.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def lineitem_source(spark, schema: str, sf: float) -> tuple[str, int]:
    """`<schema>.lineitem_src`: a parquet table over the cached TPC-H lineitem of scale `sf`; its rows."""
    spark.sql(f"create database if not exists {schema}")
    parquet = report_datasets.generate_lineitem_parquet(sf, BENCH / "tpch")
    source = f"{schema}.lineitem_src"
    spark.sql(f"drop table if exists {source}")
    spark.sql(f"create table {source} using parquet location '{parquet}'")
    return source, int(spark.sql(f"select count(*) from {source}").first()[0])


def write_results(json_path: Path, spark, args, started: float, load_before, **figures) -> dict:
    """The run's figures with when, where and what ran them, written to `json_path`."""
    write_results(json_path, spark, args, started, load_before, format=fmt, rows=rows, best_native=best_name,
                  **extras, layouts={k: {kk: vv for kk, vv in v.items() if kk != "boxes"} for k, v in layouts.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
