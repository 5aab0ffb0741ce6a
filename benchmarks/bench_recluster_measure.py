"""What a recluster's measure step costs on a plain parquet table: file_stats with the jar (each
file's exact statistics from its footer, table_file_stats) against the row scan it replaces (the
GROUP BY over every row's clustering columns that file_stats runs without the jar). Two tables of the
same --files files (64), one of --rows rows and one of 10x --rows; the goal of issue #50: the measure
of the larger <= 1.3x the smaller's, the row scan growing with the rows.

    .venv/bin/python benchmarks/bench_recluster_measure.py [--rows 1000000] [--files 64] [--repeats 3]
        [--json build/bench/recluster_measure.json]

The SQL timed is what the package's file_stats returns (benchmarks/dbt_project's
measure_file_stats_sql). Cold: the footer cache cleared before each run (a new driver, or files it
never read); warm: the footers cached, as a long-lived Thrift server holds them. Medians of
--repeats. Prints a table; asserts nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import time
from pathlib import Path

from common import BENCH
from common.dbt import dbt_runner
from common.machine import write_results
from common.timing import ctas, timed
from spark_clustering_dev.paths import WORK
from spark_clustering_dev.spark import get_spark

SCHEMA = "bench_recluster_measure"
COLUMNS = ["a", "b", "day", "amount"]


def rows_sql(rows: int, files: int) -> str:
    """Four clustering columns (bigint, int, date, decimal(15,2)) hashed from the id, range-partitioned
    on the id into `files` files (each holds a narrow range of a)."""
    return f"""select /*+ REPARTITION_BY_RANGE({files}, id) */ id as a, cast(pmod(xxhash64(id, 2), 1000) as int) as b,
        date_add(date'2020-01-01', cast(pmod(xxhash64(id, 3), 2000) as int)) as day,
        cast(pmod(xxhash64(id, 4), 1000000) / 100 as decimal(15,2)) as amount,
        concat('payload-', id) as payload
    from range({rows})"""


def row_scan_sql(table: str) -> str:
    """file_stats's SQL without the jar (macros/stats/file_stats.sql)."""
    aggregates = "".join(f", min({c}) as {c}__min, max({c}) as {c}__max, count(*) - count({c}) as {c}__null_count"
                         for c in COLUMNS)
    return f"select _metadata.file_path as file_path, count(*) as row_count{aggregates} from {table} group by 1"


def median_seconds(spark, sql: str, repeats: int, cold: bool) -> tuple[float, int]:
    store = spark._jvm.org.apache.spark.sql.sparkclustering.stats.FileStatsStore
    times, files = [], 0
    for _ in range(repeats):
        if cold:
            store.clearCaches()
        rows = []
        times.append(timed(lambda: rows.extend(spark.sql(sql).collect())))
        files = len(rows)
    return statistics.median(times), files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=str(BENCH / "recluster_measure.json"))
    args = parser.parse_args()
    started, load_before = time.monotonic(), os.getloadavg()
    spark = get_spark(WORK / "bench-recluster-measure", app_name="bench_recluster_measure")
    spark.sql(f"create database if not exists {SCHEMA}")
    tables = {"small": args.rows, "large": 10 * args.rows}
    for name, rows in tables.items():
        seconds = ctas(spark, f"{SCHEMA}.{name}", rows_sql(rows, args.files), args.files)
        print(f"built {name}: {rows:,} rows in {args.files} files, {seconds:.1f} s")

    run = dbt_runner("recluster_measure")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # the macro prints the SQL
        run(["run-operation", "measure_file_stats_sql", "--args",
             json.dumps({"schema": SCHEMA, "tables": list(tables), "columns": COLUMNS})], schema=SCHEMA, vars={})
    line = [x for x in printed.getvalue().splitlines() if x.startswith("measure_file_stats_sql: ")][-1]
    measure_sql = json.loads(line.split("measure_file_stats_sql: ", 1)[1])
    assert all("table_file_stats(" in sql for sql in measure_sql.values()), measure_sql  # the jar's path

    figures = {}
    print(f"\n{'table':<6} {'rows':>12} {'files':>6} {'measure cold':>13} {'measure warm':>13} {'row scan':>9}")
    for name, rows in tables.items():
        table = f"{SCHEMA}.{name}"
        cold, files = median_seconds(spark, measure_sql[name], args.repeats, cold=True)
        warm, _ = median_seconds(spark, measure_sql[name], args.repeats, cold=False)
        scan, scan_files = median_seconds(spark, row_scan_sql(table), args.repeats, cold=False)
        assert files == scan_files == args.files, (files, scan_files)
        figures[name] = {"rows": rows, "files": files, "measure_cold_s": round(cold, 3), "measure_warm_s": round(warm, 3),
                         "row_scan_s": round(scan, 3)}
        print(f"{name:<6} {rows:>12,} {files:>6} {cold:>12.3f}s {warm:>12.3f}s {scan:>8.2f}s")
    ratio = {k: round(figures["large"][k] / figures["small"][k], 2) for k in ("measure_cold_s", "measure_warm_s", "row_scan_s")}
    print(f"large / small: measure cold {ratio['measure_cold_s']}x, warm {ratio['measure_warm_s']}x, "
          f"row scan {ratio['row_scan_s']}x (goal: measure <= 1.3x)")
    write_results(Path(args.json), spark, args, started, load_before,
                  tables=figures, ratio_large_to_small=ratio)


if __name__ == "__main__":
    main()
