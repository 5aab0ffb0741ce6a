"""The package's clustering of a Delta Lake or Iceberg table against the format's own clustering, on the
same rows and the same number of files: files read by the box workload (the format's own data skipping,
counted by Spark's scan metrics) and build time; with --format parquet, of a plain parquet table
(which has no clustering of its own: the package's layouts and the CTAS ORDER BY only, read through
the package's data skipping). One format per run (a Spark session serves one).

    .venv/bin/python benchmarks/bench_table_formats.py --format delta|iceberg|parquet [--dataset lineitem|store_sales]
        [--sf 1] [--files 64] [--queries 60] [--seed 11] [--build-runs 3] [--other-readers]
        [--json build/bench/table_formats_<format>[_<dataset>].json]

Rows: TPC-H lineitem (SF 1 = 6,001,215 rows; generated offline by DuckDB's tpch extension, cached in
build/bench/tpch/), clustering columns (l_shipdate, l_partkey, l_suppkey); or with --dataset
store_sales TPC-DS store_sales (SF 1 = 2,880,404 rows, DuckDB's tpcds extension, build/bench/tpcds/)
on (ss_sold_date_sk, ss_item_sk, ss_customer_sk). Layouts, each a table of
the format:
  package hilbert / zorder  dbt `clustered_table` (the benchmark project's format_table model) with
                            file_format = the format and cluster_num_files = --files;
  package auto              the same with cluster_method auto and a declared cluster_workload: --queries
                            queries of the measured workload's generator drawn with seed --seed + 1;
  CTAS ORDER BY             `CREATE TABLE ... AS SELECT ... ORDER BY` the three columns (--files
                            shuffle partitions): the build baseline;
  Delta OPTIMIZE ZORDER BY  a plain CTAS, then OPTIMIZE ZORDER BY the three columns;
  Delta liquid              CREATE TABLE ... CLUSTER BY the three columns AS SELECT, then OPTIMIZE FULL;
  Iceberg zorder            a plain CTAS, then system.rewrite_data_files(strategy => 'sort',
                            sort_order => 'zorder(...)', rewrite-all).
--format parquet builds the package's three layouts and the CTAS ORDER BY as plain parquet tables (no
natives: no best native, no files-read goal).
The natives' target file size (Delta spark.databricks.delta.optimize.maxFileSize, Iceberg
target-file-size-bytes) is the plain table's bytes / --files, so every layout has about --files files;
the counts are reported. Build time: the wall time of the statement(s) that lay the files out (for
the natives the CTAS plus the OPTIMIZE / rewrite after it; for the package the model's execution
time as dbt reports it, after an untimed `dbt parse`, so dbt's own start is not counted); the package's
builds and the CTAS ORDER BY take turns over --build-runs rounds (default 3) and the fastest of each
counts, the natives' clustering is built once (a minute each). Workload: bench_data_skipping's
seeded boxes (one-, two-, three-column and point queries; common/workloads.py). Per layout: files
read (FileSourceScanExec numFiles for Delta and parquet; BatchScanExec resultDataFiles for Iceberg)
summed over the workload, and the ideal (files whose min/max box meets the query box). On parquet the
files Spark reads are those the package's extension (loaded in the benchmark's session) kept: its
scan, DataSkippingScanExec, is asserted on every query, and skips from the sidecar clustered_table
wrote (the CTAS ORDER BY has none: from the footers). Answers must be equal across layouts.
Goals (issue 28): files read <= 0.8 x the best native layout's; package build <= 1.15 x CTAS ORDER BY.
--other-readers: the same workload read by DuckDB's own Delta / Iceberg reader on every layout's table
(spark_clustering_dev.other_readers: files read from DuckDB's profile, 'Total Files Read'), and by a
pyarrow dataset of the layout's live data files (files and row groups whose footer statistics may meet
the box); their answers must equal Spark's, and their files read are reported next to Spark's (goal,
issue 51: <= 1.05 x Spark's on the package's tables). On parquet DuckDB reads the table with
read_parquet of its data files as table_data_files lists them (every file Spark would list; never a
glob, which would take the sidecar and any leftover file too), and pyarrow reads the same list.
read_parquet knows nothing of a file before it opens it: 'Total Files Read', the only file counter
of its profile, is every listed file in every query (it reads each footer, then skips the row groups
whose statistics miss the box and reads no data of a file whose row groups it all skips); the files
it reads row groups of are not in its profile (pyarrow's columns count them for a reader that prunes
row groups by the same footers).
The maintenance half (appends, recluster vs the formats' maintenance): bench_format_maintenance.py.
Prints a markdown table; asserts no goal (only equal answers, and on parquet the extension's scan).
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from common import BENCH
from common.datasets import DATASETS, lineitem_source
from common.datasets import LINEITEM_COLUMNS as COLUMNS
from common.dbt import dbt_runner
from common.formats import (bisect_iceberg_target, drop_table, files_of, files_read, format_session,
                            iceberg_zorder_rewrite, table_bytes)
from common.machine import write_results
from common.scans import scan_classes, scan_nodes
from common.timing import timed
from common.workloads import declared_workload, intersecting, make_workload
from spark_clustering_dev.paths import local

# run_dbt on the benchmarks' own dbt project (model format_table) with this benchmark's target/log folders
dbt_run = dbt_runner("formats")


def build_layouts(spark, fmt: str, schema: str, source: str, files: int, workload: list[dict],
                  columns: list[str] = COLUMNS, build_runs: int = 3) -> dict:
    cols = ", ".join(columns)
    out = {}
    # dbt's own start (project parsing, adapter) is not part of a build: an untimed parse first, and
    # the build time is the model's execution time as dbt reports it (the wall time is kept too)
    dbt_run(["parse"], schema=schema, vars={})
    # and one untimed small build warms the JVM up for the package's code paths, as the CTAS
    # baselines after it find it warm (a new table: one of another dataset's columns left by an
    # earlier run could not be replaced on Iceberg, whose Hive metastore refuses the column changes)
    drop_table(spark, fmt, f"{schema}.package_warmup")
    dbt_run(["run", "--select", "format_table"], schema=schema, vars={
        "source": f"(select * from {source} limit 20000) s", "alias": "package_warmup", "format": fmt,
        "method": "hilbert", "num_files": 2, "cluster_by": columns})
    # The package's builds and the CTAS ORDER BY baseline take turns, --build-runs rounds, and each
    # counts its fastest: a single build moved by up to 20 % between runs on this machine. Every
    # round builds each table anew (dropped first), as a first build; the last round's tables stay.
    rounds = {}
    for _ in range(build_runs):
        for method in ("hilbert", "zorder", "auto"):
            name = f"package_{method}"
            drop_table(spark, fmt, f"{schema}.{name}")
            start = time.monotonic()
            run = dbt_run(["run", "--select", "format_table"], schema=schema, vars={
                "source": source, "alias": name, "format": fmt, "method": method, "num_files": files,
                "cluster_by": columns, "workload": workload if method == "auto" else None})
            rounds.setdefault(f"package {method}", []).append(
                (run.node_results()["format_table"].execution_time, time.monotonic() - start))
        drop_table(spark, fmt, f"{schema}.ctas_order_by")
        ctas = timed(lambda: spark.sql(
            f"create table {schema}.ctas_order_by using {fmt} as select * from {source} order by {cols}"))
        rounds.setdefault("CTAS ORDER BY", []).append((ctas, ctas))
    for name, times in rounds.items():
        table = f"{schema}.ctas_order_by" if name == "CTAS ORDER BY" else f"{schema}.{name.replace(' ', '_')}"
        out[name] = {"table": table, "build_seconds": round(min(t for t, _ in times), 1),
                     "build_runs_seconds": [round(t, 1) for t, _ in times],
                     "wall_seconds": round(min(w for _, w in times), 1)}

    if fmt == "parquet":  # no clustering of its own: nothing to size a native's files for
        return out
    drop_table(spark, fmt, f"{schema}.plain")
    plain_seconds = timed(lambda: spark.sql(
        f"create table {schema}.plain using {fmt} as select /*+ repartition({files}) */ * from {source}"))
    target = max(1, table_bytes(spark, fmt, f"{schema}.plain") // files)
    if fmt == "delta":
        spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(target))
        drop_table(spark, fmt, f"{schema}.delta_zorder")
        ctas = timed(lambda: spark.sql(f"create table {schema}.delta_zorder using delta as select /*+ repartition({files}) */ * "
                                       f"from {source}"))
        optimize = timed(lambda: spark.sql(f"optimize {schema}.delta_zorder zorder by ({cols})").collect())
        out["Delta OPTIMIZE ZORDER BY"] = {"table": f"{schema}.delta_zorder", "build_seconds": round(ctas + optimize, 1),
                                           "optimize_seconds": round(optimize, 1)}
        drop_table(spark, fmt, f"{schema}.delta_liquid")
        ctas = timed(lambda: spark.sql(f"create table {schema}.delta_liquid using delta cluster by ({cols}) as "
                                       f"select /*+ repartition({files}) */ * from {source}"))
        optimize = timed(lambda: spark.sql(f"optimize {schema}.delta_liquid full").collect())
        out["Delta liquid (OPTIMIZE FULL)"] = {"table": f"{schema}.delta_liquid", "build_seconds": round(ctas + optimize, 1),
                                               "optimize_seconds": round(optimize, 1)}
    else:
        def zorder_build(size: int) -> list[str]:
            return [f"create table {schema}.iceberg_zorder using iceberg as select /*+ repartition({files}) */ * "
                    f"from {source}", iceberg_zorder_rewrite(f"{schema}.iceberg_zorder", cols, size, everything=True)]
        size, seconds, attempts = bisect_iceberg_target(spark, f"{schema}.iceberg_zorder", zorder_build, target, files)
        out["Iceberg rewrite_data_files zorder"] = {"table": f"{schema}.iceberg_zorder", "build_seconds": round(sum(seconds), 1),
                                                    "rewrite_seconds": round(seconds[-1], 1), "attempts": attempts}
    out["_plain_ctas_seconds"] = round(plain_seconds, 1)
    out["_target_file_bytes"] = target
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=["delta", "iceberg", "parquet"], required=True)
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="lineitem")
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--build-runs", type=int, default=3,
                        help="rounds of the package's builds and the CTAS ORDER BY, taking turns; the fastest of each counts")
    parser.add_argument("--other-readers", action="store_true",
                        help="also read every layout with DuckDB's Delta / Iceberg reader (parquet: read_parquet of its "
                             "data files) and a pyarrow dataset (files read, answers)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    fmt = args.format
    json_path = args.json or BENCH / f"table_formats_{fmt}{'' if args.dataset == 'lineitem' else '_' + args.dataset}.json"
    dataset = DATASETS[args.dataset]
    columns = dataset["columns"]
    started = time.monotonic()
    load_before = os.getloadavg()
    spark = format_session(fmt, "bench_table_formats", args.files)
    schema = f"bench_formats_{fmt}"
    source, rows = lineitem_source(spark, schema, args.sf, args.dataset)

    declared = declared_workload(spark, source, args.queries, args.seed + 1, rows, dataset)
    layouts = build_layouts(spark, fmt, schema, source, args.files, declared, columns, args.build_runs)
    extras = {k: layouts.pop(k) for k in [k for k in layouts if k.startswith("_")]}
    for name, info in layouts.items():
        info["boxes"] = files_of(spark, fmt, info["table"], columns)
        info["files"] = len(info["boxes"])
        print(f"{name}: {info['files']} files, built in {info['build_seconds']} s", flush=True)

    domain = [b for info in layouts.values() for b in info["boxes"]]
    workload = make_workload(spark, source, domain, args.queries, args.seed, rows, columns, dataset["order_column"],
                             dataset["measure"])
    for info in layouts.values():
        info.update(files_read=0, ideal=0)
    for q in workload:
        answers = set()
        for info in layouts.values():
            df = spark.sql(q["sql"].replace(source, info["table"]))
            answers.add(tuple(tuple(r) for r in df.collect()))
            if fmt == "parquet":  # Spark's skipping on a plain table is the package's extension's
                classes = scan_classes(scan_nodes(df._jdf.queryExecution().executedPlan()))
                assert any(c.endswith(".DataSkippingScanExec") for c in classes), \
                    f"{info['table']}: no data-skipping scan (is the extension loaded?): {classes}"
            info["files_read"] += files_read(df)
            info["ideal"] += len(intersecting(info["boxes"], q["box"]))
        assert len(answers) == 1, f"layouts disagree on {q['sql']}: {answers}"
    if args.other_readers:
        read_with_duckdb(spark, fmt, layouts, workload, source)
        read_with_pyarrow(spark, fmt, layouts, workload, source, dataset["measure"])

    natives = {k: v for k, v in layouts.items() if k.startswith(("Delta", "Iceberg"))}  # none on parquet
    best_native = min(natives.values(), key=lambda v: v["files_read"]) if natives else None
    best_name = [k for k, v in natives.items() if v is best_native][0] if natives else None
    baseline = layouts["CTAS ORDER BY"]["build_seconds"]
    target = (f"natives' target file size {extras['_target_file_bytes']:,} bytes" if natives
              else "no natives (plain parquet: the package's data skipping)")
    print(f"\n{dataset['title']} SF {args.sf:g} ({rows:,} rows), clustered on {', '.join(columns)}, {fmt}, {len(workload)} box queries (seed {args.seed}); "
          f"{target}\n")
    print("| layout | files | files read | / ideal | / best native | build s | / CTAS ORDER BY |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, info in layouts.items():
        versus_native = f"{info['files_read'] / max(best_native['files_read'], 1):.2f}" if natives else "-"
        print(f"| {name} | {info['files']} | {info['files_read']} | {info['files_read'] / max(info['ideal'], 1):.2f} | "
              f"{versus_native} | {info['build_seconds']} | {info['build_seconds'] / baseline:.2f} |")
    if args.other_readers:
        print("\n| layout | files read: Spark | DuckDB | DuckDB / Spark | pyarrow | pyarrow / Spark | pyarrow row groups |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, info in layouts.items():
            print(f"| {name} | {info['files_read']} | {info['duckdb_files_read']} | "
                  f"{info['duckdb_files_read'] / max(info['files_read'], 1):.2f} | {info['pyarrow_files_read']} | "
                  f"{info['pyarrow_files_read'] / max(info['files_read'], 1):.2f} | {info['pyarrow_row_groups_read']} |")
    if natives:
        print(f"\nbest native: {best_name}; goals: files read <= 0.8 x best native, build <= 1.15 x CTAS ORDER BY")
    else:
        print("\nno natives on parquet; goal: build <= 1.15 x CTAS ORDER BY")
    write_results(json_path, spark, args, started, load_before, format=fmt, rows=rows, best_native=best_name,
                  **extras, declared_workload_seed=args.seed + 1,
                  layouts={k: {kk: vv for kk, vv in v.items() if kk != "boxes"} for k, v in layouts.items()})
    return 0


def read_with_duckdb(spark, fmt: str, layouts: dict, workload: list[dict], source: str):
    """Every query of the workload on every layout's table through DuckDB's reader of the format:
    its files read (info['duckdb_files_read']); its answers must equal Spark's."""
    from spark_clustering_dev.other_readers import DuckDbReader
    from spark_clustering_dev.recluster_case import location

    reader = DuckDbReader(fmt)
    try:
        for info in layouts.values():
            table_source = (reader.files_source(data_files(spark, info["table"])) if fmt == "parquet"
                            else reader.source(location(spark, info["table"])))
            info["duckdb_files_read"] = 0
            for q in workload:
                want = [tuple(r) for r in spark.sql(q["sql"].replace(source, info["table"])).collect()]
                got, files = reader.query(q["sql"].replace(source, table_source))
                assert [tuple(map(_number, r)) for r in got] == [tuple(map(_number, r)) for r in want], \
                    f"DuckDB and Spark disagree on {info['table']}: {q['sql']}: {got} vs {want}"
                info["duckdb_files_read"] += files
    finally:
        reader.close()


def read_with_pyarrow(spark, fmt: str, layouts: dict, workload: list[dict], source: str, measure: str):
    """Every query of the workload as a pyarrow dataset of each layout's live data files reads it
    (the footers' row-group statistics, nothing of the format's log; a parquet table's files as
    table_data_files lists them, as DuckDB's): its files and row groups read
    (info['pyarrow_files_read'], info['pyarrow_row_groups_read']); its count and sum must equal Spark's."""
    import pyarrow.compute as pc

    from spark_clustering_dev.other_readers import PyArrowReader

    for info in layouts.values():
        reader = PyArrowReader(data_files(spark, info["table"]) if fmt == "parquet"
                               else (local(f["path"]) for f in info["boxes"]))
        info.update(pyarrow_files_read=0, pyarrow_row_groups_read=0)
        for q in workload:
            rows, files, row_groups = reader.query(PyArrowReader.box_filter(q["box"]), [measure])
            got = (rows.num_rows, pc.sum(rows[measure]).as_py())
            want = tuple(spark.sql(q["sql"].replace(source, info["table"])).first())
            assert tuple(map(_number, got)) == tuple(map(_number, want)), \
                f"pyarrow and Spark disagree on {info['table']}: {q['sql']}: {got} vs {want}"
            info["pyarrow_files_read"] += files
            info["pyarrow_row_groups_read"] += row_groups


def data_files(spark, table: str) -> list[Path]:
    """A plain table's data files as the package lists them (recluster_case.data_files: its
    location's files, hidden names such as the sidecar's skipped), local paths."""
    from spark_clustering_dev.recluster_case import data_files as listed

    return [local(p) for p in listed(spark, table)]


def _number(value):
    """Spark's Decimal and DuckDB's Decimal / float of the same sum compare as numbers."""
    return float(value) if value is not None and not isinstance(value, (str, bool)) else value


if __name__ == "__main__":
    raise SystemExit(main())
