"""The package's clustering of a Delta Lake or Iceberg table against the format's own clustering, on the
same rows and the same number of files: files read by the box workload (the format's own data skipping,
counted by Spark's scan metrics) and build time. One format per run (a Spark session serves one).

    .venv/bin/python benchmarks/bench_table_formats.py --format delta|iceberg [--dataset lineitem|store_sales]
        [--sf 1] [--files 64] [--queries 60] [--seed 11] [--build-runs 3] [--json build/bench/table_formats_<format>[_<dataset>].json]

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
The natives' target file size (Delta spark.databricks.delta.optimize.maxFileSize, Iceberg
target-file-size-bytes) is the plain table's bytes / --files, so every layout has about --files files;
the counts are reported. Build time: the wall time of the statement(s) that lay the files out (for
the natives the CTAS plus the OPTIMIZE / rewrite after it; for the package the model's execution
time as dbt reports it, after an untimed `dbt parse`, so dbt's own start is not counted); the package's
builds and the CTAS ORDER BY take turns over --build-runs rounds (default 3) and the fastest of each
counts, the natives' clustering is built once (a minute each). Workload: bench_data_skipping's
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
# What a dataset needs here: its clustering columns, the column numbering its rows in generation
# order (point queries pick rows by it), the column the queries sum, and its parquet generator.
DATASETS = {
    "lineitem": {"columns": report_datasets.LINEITEM_COLUMNS, "order_column": "l_insert_order",
                 "measure": "l_extendedprice", "parquet": report_datasets.generate_lineitem_parquet,
                 "title": "TPC-H lineitem"},
    "store_sales": {"columns": report_datasets.STORE_SALES_COLUMNS, "order_column": "ss_insert_order",
                    "measure": "ss_net_paid", "parquet": report_datasets.generate_store_sales_parquet,
                    "title": "TPC-DS store_sales"},
}


# the benchmarks' own dbt project (model format_table), not the integration tests' cases
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


def files_of(spark, fmt: str, table: str, columns: list[str] = COLUMNS) -> list[dict]:
    """Each live file's min/max box over the clustering columns, from its rows."""
    aggs = ", ".join(f"min({c}) as {c}_lo, max({c}) as {c}_hi" for c in columns)
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
    that gave too many and too few files), up to 6 attempts; when none lands within 10 % the table
    is built once more at the size that came closest. Returns the size, the seconds of each
    statement of the last build, and every (size, files) tried."""
    attempts, size, lo, hi, seconds = [], target, None, None, []

    def build(at: int) -> int:
        nonlocal seconds
        drop_table(spark, "iceberg", table)
        seconds = [timed(lambda st=st: spark.sql(st).collect()) for st in statements(at)]
        got = int(spark.sql(f"select count(*) from {table}.files").first()[0])
        attempts.append((at, got))
        return got

    for _ in range(6):
        got = build(size)
        if abs(got - files) <= max(1, files // 10):
            return size, seconds, attempts
        if got > files:
            lo = size
        else:
            hi = size
        size = int((lo * hi) ** 0.5) if lo and hi else int(size * got / files)
    best = min(attempts, key=lambda a: abs(a[1] - files))
    if best is not attempts[-1]:
        build(best[0])
    return best[0], seconds, attempts


def format_session(fmt: str, app_name: str, files: int):
    """A session of the format for a benchmark: its own warehouse, `files` shuffle partitions, no AQE
    (so a repartition hint gives exactly that many files)."""
    spark = get_spark(WORK / f"{app_name}_{fmt}", app_name=app_name, table_format=fmt,
                      extra_conf={"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": str(files),
                                  "spark.sql.adaptive.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def drop_table(spark, fmt: str, table: str) -> None:
    """Drops a benchmark's table of format `fmt` with its files: Iceberg's DROP TABLE leaves every
    data and metadata file behind unless PURGE (Delta's managed tables go with their directory), and
    rounds of rebuilt Iceberg tables once filled the disk (16 GB)."""
    spark.sql(f"drop table if exists {table}" + (" purge" if fmt == "iceberg" else ""))


def lineitem_source(spark, schema: str, sf: float, dataset: str = "lineitem") -> tuple[str, int]:
    """`<schema>.<dataset>_src`: a parquet table over the cached TPC-H lineitem (or another of
    DATASETS) of scale `sf`; its rows."""
    spark.sql(f"create database if not exists {schema}")
    parquet = DATASETS[dataset]["parquet"](sf, BENCH / ("tpch" if dataset == "lineitem" else "tpcds"))
    source = f"{schema}.{dataset}_src"
    spark.sql(f"drop table if exists {source}")
    spark.sql(f"create table {source} using parquet location '{parquet}'")
    return source, int(spark.sql(f"select count(*) from {source}").first()[0])


def write_results(json_path: Path, spark, args, started: float, load_before, **figures) -> dict:
    """The run's figures with when, where and what ran them, written to `json_path`."""
    results = {"date": datetime.date.today().isoformat(), "machine": bds.machine(), "spark": spark.version,
               "commit": bds.git_head(), "args": {k: str(v) for k, v in vars(args).items()}, **figures,
               "seconds": round(time.monotonic() - started, 1), "loadavg_before": load_before,
               "loadavg_after": os.getloadavg()}
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(results, indent=1, default=str))
    print(f"{results['seconds']:.0f} s; load average before {load_before[0]:.2f}, after {results['loadavg_after'][0]:.2f}; "
          f"figures in {json_path}")
    return results


def declared_workload(spark, source: str, n: int, seed: int, rows: int, dataset: dict) -> list[dict]:
    """A workload to declare in `cluster_workload` for `cluster_method: auto`: queries drawn by the
    same generator as the measured workload, with another seed (the layout is chosen on queries like
    the ones it serves, not on those it is measured with), as boxes {column: [lo, hi]}."""
    columns = dataset["columns"]
    aggs = ", ".join(f"min({c}) as {c}_lo, max({c}) as {c}_hi" for c in columns)
    domain = [spark.sql(f"select {aggs} from {source}").first().asDict()]
    return [{c: [str(lo) if isinstance(lo, datetime.date) else lo, str(hi) if isinstance(hi, datetime.date) else hi]
             for c, (lo, hi) in q["box"].items()}
            for q in bds.make_workload(spark, source, domain, n, seed, rows, columns, dataset["order_column"],
                                       dataset["measure"])]


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
                                           "optimize_seconds": optimize}
        drop_table(spark, fmt, f"{schema}.delta_liquid")
        ctas = timed(lambda: spark.sql(f"create table {schema}.delta_liquid using delta cluster by ({cols}) as "
                                       f"select /*+ repartition({files}) */ * from {source}"))
        optimize = timed(lambda: spark.sql(f"optimize {schema}.delta_liquid full").collect())
        out["Delta liquid (OPTIMIZE FULL)"] = {"table": f"{schema}.delta_liquid", "build_seconds": round(ctas + optimize, 1),
                                               "optimize_seconds": optimize}
    else:
        def zorder_build(size: int) -> list[str]:
            return [f"create table {schema}.iceberg_zorder using iceberg as select /*+ repartition({files}) */ * "
                    f"from {source}", iceberg_zorder_rewrite(f"{schema}.iceberg_zorder", cols, size, everything=True)]
        size, seconds, attempts = bisect_iceberg_target(spark, f"{schema}.iceberg_zorder", zorder_build, target, files)
        out["Iceberg rewrite_data_files zorder"] = {"table": f"{schema}.iceberg_zorder", "build_seconds": round(sum(seconds), 1),
                                                    "rewrite_seconds": seconds[-1], "attempts": attempts}
    out["_plain_ctas_seconds"] = plain_seconds
    out["_target_file_bytes"] = target
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=["delta", "iceberg"], required=True)
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="lineitem")
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--build-runs", type=int, default=3,
                        help="rounds of the package's builds and the CTAS ORDER BY, taking turns; the fastest of each counts")
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
    workload = bds.make_workload(spark, source, domain, args.queries, args.seed, rows, columns, dataset["order_column"],
                                 dataset["measure"])
    for info in layouts.values():
        info.update(files_read=0, ideal=0)
    for q in workload:
        answers = set()
        for info in layouts.values():
            df = spark.sql(q["sql"].replace(source, info["table"]))
            answers.add(tuple(tuple(r) for r in df.collect()))
            info["files_read"] += files_read(df)
            info["ideal"] += len(bds.intersecting(info["boxes"], q["box"]))
        assert len(answers) == 1, f"layouts disagree on {q['sql']}: {answers}"

    natives = {k: v for k, v in layouts.items() if k.startswith(("Delta", "Iceberg"))}
    best_native = min(natives.values(), key=lambda v: v["files_read"])
    best_name = [k for k, v in natives.items() if v is best_native][0]
    baseline = layouts["CTAS ORDER BY"]["build_seconds"]
    print(f"\n{dataset['title']} SF {args.sf:g} ({rows:,} rows), clustered on {', '.join(columns)}, {fmt}, {len(workload)} box queries (seed {args.seed}); "
          f"natives' target file size {extras['_target_file_bytes']:,} bytes\n")
    print("| layout | files | files read | / ideal | / best native | build s | / CTAS ORDER BY |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, info in layouts.items():
        print(f"| {name} | {info['files']} | {info['files_read']} | {info['files_read'] / max(info['ideal'], 1):.2f} | "
              f"{info['files_read'] / max(best_native['files_read'], 1):.2f} | {info['build_seconds']} | "
              f"{info['build_seconds'] / baseline:.2f} |")
    print(f"\nbest native: {best_name}; goals: files read <= 0.8 x best native, build <= 1.15 x CTAS ORDER BY")
    write_results(json_path, spark, args, started, load_before, format=fmt, rows=rows, best_native=best_name,
                  **extras, declared_workload_seed=args.seed + 1,
                  layouts={k: {kk: vv for kk, vv in v.items() if kk != "boxes"} for k, v in layouts.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
