"""Keeping a Delta Lake or Iceberg table clustered while it grows: the package's `recluster()` against
the format's own maintenance, after each of --steps appends of +--growth of the first build's rows, on
the same rows in every layout. One format per run (a Spark session serves one).

    .venv/bin/python benchmarks/bench_format_maintenance.py --format delta|iceberg [--sf 0.1] [--files 16]
        [--steps 10] [--growth 0.1] [--queries 20] [--seed 11] [--method hilbert|zorder|auto] [--recluster JSON]
        [--skip-natives] [--json build/bench/format_maintenance_<format>.json]

Rows: TPC-H lineitem (generated offline by DuckDB's tpch extension, cached in build/bench/tpch/) in
dbgen's order (`l_insert_order`): the first build takes the first 1 / (1 + steps x growth) of it, each
step appends the next growth x that many rows (INSERT INTO, in growth x --files files, as an
unclustered dbt incremental append writes them). Layouts, each a table of the format, clustered on
(l_shipdate, l_partkey, l_suppkey):
  package recluster        the benchmark project's `format_table` model (clustered_table, --method, default
                           hilbert; auto declares --queries queries of the workload's generator drawn with
                           seed --seed + 1, as bench_table_formats.py does), then `dbt run-operation
                           spark_clustering.recluster` after each append (--skip-natives: this layout only);
  Delta OPTIMIZE ZORDER BY a plain CTAS, OPTIMIZE ZORDER BY, and OPTIMIZE ZORDER BY again after each append;
  Delta liquid             CREATE TABLE ... CLUSTER BY AS SELECT + OPTIMIZE FULL, then OPTIMIZE after each append;
  Iceberg zorder           a plain CTAS + rewrite_data_files(strategy => 'sort', sort_order => 'zorder(...)',
                           rewrite-all), then the same call with the format's default file selection after each append.
The natives' target file size is the first build's plain bytes / --files (Iceberg's: bisected on its
first build until it gives --files files, as in bench_table_formats.py); the package's target file rows
its rows / --files (cluster_target_file_rows, so that, as the natives' files, its files keep their size
as the table grows). Per step and layout: bytes and files the maintenance rewrote (the files of the
table before it that are gone after it, from table_data_files: the format's own metadata), its
seconds, the files after it, and the files read by the box workload (bench_data_skipping's seeded
boxes; Spark's scan metrics), whose answers must be equal across layouts. Goal (issue 28): bytes
rewritten <= 0.25 x the best native maintenance's, at equal or fewer files read. Prints markdown
tables; asserts only that every layout answers alike.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from common import BENCH
from common.datasets import DATASETS, lineitem_source
from common.datasets import LINEITEM_COLUMNS as COLUMNS
from common.dbt import PROJECT, dbt_env, dbt_runner
from common.formats import (bisect_iceberg_target, drop_table, files_of, files_read, format_session,
                            iceberg_zorder_rewrite, table_bytes)
from common.machine import write_results
from common.timing import timed
from common.workloads import declared_workload, intersecting, make_workload
from spark_clustering_dev.dbt import run_operation_json

# run_dbt on the benchmarks' own dbt project (model format_table) with bench_table_formats' target/log folders
dbt_run = dbt_runner("formats")

PACKAGE = "package recluster"


def live(spark, fmt: str, table: str) -> dict[str, int]:
    """{path: bytes} of the table's current data files, from the format's metadata."""
    return {r[0]: int(r[1]) for r in spark.sql(f"select file_path, file_size from table_data_files('{table}')").collect()}


def natives(fmt: str, schema: str, cols: str, target: int) -> dict[str, dict]:
    """Each native layout: its table, the statements of its first build (after which the table holds
    the base rows) and of its maintenance after an append."""
    if fmt == "delta":
        return {
            "Delta OPTIMIZE ZORDER BY": {
                "table": f"{schema}.m_delta_zorder",
                "build": lambda t, src, n: [f"create table {t} using delta as select /*+ repartition({n}) */ * from {src}",
                                            f"optimize {t} zorder by ({cols})"],
                "maintain": lambda t: [f"optimize {t} zorder by ({cols})"]},
            "Delta liquid (OPTIMIZE)": {
                "table": f"{schema}.m_delta_liquid",
                "build": lambda t, src, n: [f"create table {t} using delta cluster by ({cols}) as "
                                            f"select /*+ repartition({n}) */ * from {src}", f"optimize {t} full"],
                "maintain": lambda t: [f"optimize {t}"]},
        }

    return {
        "Iceberg rewrite_data_files zorder": {
            "table": f"{schema}.m_iceberg_zorder",
            "build": lambda t, src, n: [f"create table {t} using iceberg as select /*+ repartition({n}) */ * from {src}",
                                        iceberg_zorder_rewrite(t, cols, target, everything=True)],
            "maintain": lambda t: [iceberg_zorder_rewrite(t, cols, target, everything=False)]},
    }

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=["delta", "iceberg"], required=True)
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--growth", type=float, default=0.1)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--recluster", type=json.loads, default=None,
                        help="the model's recluster config (the gate), JSON, e.g. '{\"max_average_depth\": 2}'; "
                             "default: the package's defaults")
    parser.add_argument("--method", choices=["hilbert", "zorder", "auto"], default="hilbert")
    parser.add_argument("--skip-natives", action="store_true", help="the package's layout only (to compare "
                        "settings; the goal's comparison needs the natives)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    fmt = args.format
    json_path = args.json or BENCH / f"format_maintenance_{fmt}.json"
    started, load_before = time.monotonic(), os.getloadavg()
    spark = format_session(fmt, "bench_format_maintenance", args.files)
    schema = f"bench_maintenance_{fmt}"
    source, rows = lineitem_source(spark, schema, args.sf)
    base_rows = int(rows / (1 + args.steps * args.growth))
    step_rows = int(base_rows * args.growth)
    append_files = max(1, round(args.files * args.growth))
    cols = ", ".join(COLUMNS)

    def batch(i: int) -> str:  # the rows of step i (0: the first build)
        lo, hi = (0, base_rows) if i == 0 else (base_rows + (i - 1) * step_rows, base_rows + i * step_rows)
        return f"(select * from {source} where l_insert_order > {lo} and l_insert_order <= {hi})"

    spark.sql(f"create or replace temporary view base_rows as select * from {batch(0)}")
    drop_table(spark, fmt, f"{schema}.m_plain")
    spark.sql(f"create table {schema}.m_plain using {fmt} as select /*+ repartition({args.files}) */ * from base_rows")
    target = max(1, table_bytes(spark, fmt, f"{schema}.m_plain") // args.files)
    drop_table(spark, fmt, f"{schema}.m_plain")
    if fmt == "delta":
        spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(target))

    bisected = {}
    if fmt == "iceberg" and not args.skip_natives:
        # the z-order rewrite's files come out smaller than the target: the size that gives --files
        # files is found on the first build (common/formats.py's bisect_iceberg_target) and kept for
        # the maintenance after each append, so the layouts have equal file counts at the start
        table = f"{schema}.m_iceberg_zorder"
        target, seconds, attempts = bisect_iceberg_target(
            spark, table, lambda size: natives(fmt, schema, cols, size)["Iceberg rewrite_data_files zorder"]["build"](
                table, "base_rows", args.files), target, args.files)
        bisected = {"Iceberg rewrite_data_files zorder": {"build_seconds": round(sum(seconds), 1), "attempts": attempts}}
    layouts = {} if args.skip_natives else natives(fmt, schema, cols, target)
    declared = (declared_workload(spark, source, args.queries, args.seed + 1, rows, DATASETS["lineitem"])
                if args.method == "auto" else None)
    package_vars = {"source": "base_rows", "alias": "m_package", "format": fmt, "method": args.method,
                    "num_files": None, "file_rows": -(-base_rows // args.files), "recluster": args.recluster,
                    "workload": declared}
    dbt_run(["parse"], schema=schema, vars={})
    drop_table(spark, fmt, f"{schema}.m_package")
    run = dbt_run(["run", "--select", "format_table"], schema=schema, vars=package_vars)
    layouts = {PACKAGE: {"table": f"{schema}.m_package",
                         "build_seconds": round(run.node_results()["format_table"].execution_time, 1)}, **layouts}
    for name, layout in layouts.items():
        if name in bisected:
            layout.update(bisected[name])
        elif name != PACKAGE:
            drop_table(spark, fmt, layout['table'])
            layout["build_seconds"] = round(timed(lambda: [spark.sql(s).collect() for s in layout["build"](
                layout["table"], "base_rows", args.files)]), 1)
        layout["steps"] = []
        print(f"{name}: {len(live(spark, fmt, layout['table']))} files after the first build "
              f"({layout['build_seconds']} s)", flush=True)

    domain = [b for layout in layouts.values() for b in files_of(spark, fmt, layout["table"])]
    workload = make_workload(spark, source, domain, args.queries, args.seed, rows)

    def maintain(name: str, layout: dict) -> dict:
        before = live(spark, fmt, layout["table"])
        start = time.monotonic()
        if name == PACKAGE:
            outcome = run_operation_json("spark_clustering.recluster", {"relation": layout["table"]}, prefix="recluster",
                                         schema=schema, vars=package_vars, project_dir=PROJECT, env=dbt_env("formats"))
            decision = outcome.get("decision")
        else:
            for statement in layout["maintain"](layout["table"]):
                spark.sql(statement).collect()
            decision = None
        seconds = round(time.monotonic() - start, 1)
        after = live(spark, fmt, layout["table"])
        gone = set(before) - set(after)
        return {"seconds": seconds, "bytes_rewritten": sum(before[p] for p in gone), "files_rewritten": len(gone),
                "files_after": len(after), "bytes_after": sum(after.values()), "decision": decision}

    for step in range(1, args.steps + 1):
        for name, layout in layouts.items():
            before = live(spark, fmt, layout["table"])
            spark.sql(f"insert into {layout['table']} select /*+ repartition({append_files}) */ * from {batch(step)}")
            appended = sum(b for p, b in live(spark, fmt, layout["table"]).items() if p not in before)
            layout["steps"].append({"step": step, "bytes_appended": appended, **maintain(name, layout)})
        for layout in layouts.values():
            layout["steps"][-1].update(files_read=0, ideal=0)
        boxes = {name: files_of(spark, fmt, layout["table"]) for name, layout in layouts.items()}
        for q in workload:
            answers = set()
            for name, layout in layouts.items():
                df = spark.sql(q["sql"].replace(source, layout["table"]))
                answers.add(tuple(tuple(r) for r in df.collect()))
                layout["steps"][-1]["files_read"] += files_read(df)
                layout["steps"][-1]["ideal"] += len(intersecting(boxes[name], q["box"]))
            assert len(answers) == 1, f"layouts disagree after step {step} on {q['sql']}: {answers}"
        print(f"step {step}: " + "; ".join(f"{n}: {l['steps'][-1]['decision'] or ''} rewrote {l['steps'][-1]['bytes_rewritten']:,} B in "
                                          f"{l['steps'][-1]['seconds']} s, {l['steps'][-1]['files_after']} files, "
                                          f"read {l['steps'][-1]['files_read']}" for n, l in layouts.items()), flush=True)

    appended = sum(int(spark.sql(f"select count(*) from {batch(i)}").first()[0]) for i in range(1, args.steps + 1))
    totals = {name: {"bytes_rewritten": sum(s["bytes_rewritten"] for s in layout["steps"]),
                     "bytes_appended": sum(s["bytes_appended"] for s in layout["steps"]),
                     "files_rewritten": sum(s["files_rewritten"] for s in layout["steps"]),
                     "seconds": round(sum(s["seconds"] for s in layout["steps"]), 1),
                     "files_read": sum(s["files_read"] for s in layout["steps"]),
                     "ideal": sum(s["ideal"] for s in layout["steps"]),
                     "files_after": layout["steps"][-1]["files_after"], "bytes_after": layout["steps"][-1]["bytes_after"]}
              for name, layout in layouts.items()}
    package = totals[PACKAGE]
    # the goal's comparison: the native maintenance rewriting the fewest bytes among those that read at
    # least as many files as the package (a native reading fewer is reported, not compared)
    peers = {n: t for n, t in totals.items() if n != PACKAGE and t["files_read"] >= package["files_read"]}
    best_name = min(peers, key=lambda n: peers[n]["bytes_rewritten"]) if peers else None
    print(f"\nlineitem SF {args.sf:g}, {fmt}: a first build of {base_rows:,} rows in {args.files} files, then "
          f"{args.steps} appends of {step_rows:,} rows ({appended:,} in all) in {append_files} file(s) each, maintained "
          f"after each; {len(workload)} box queries after each step (seed {args.seed}); natives' target file size "
          f"{target:,} bytes\n")
    print("| layout | bytes rewritten | / appended bytes | files rewritten | maintenance s | files at the end | "
          "files read (all steps) | / ideal | bytes rewritten / package's |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, t in totals.items():
        print(f"| {name} | {t['bytes_rewritten']:,} | {t['bytes_rewritten'] / max(1, t['bytes_appended']):.2f} | {t['files_rewritten']} | {t['seconds']} | "
              f"{t['files_after']} | {t['files_read']} | {t['files_read'] / max(1, t['ideal']):.2f} | "
              f"{t['bytes_rewritten'] / max(1, package['bytes_rewritten']):.1f} |")
    if best_name:
        ratio = package["bytes_rewritten"] / max(1, totals[best_name]["bytes_rewritten"])
        print(f"\npackage bytes rewritten / {best_name}'s = {ratio:.3f} (goal <= 0.25), files read "
              f"{package['files_read']} vs {totals[best_name]['files_read']}")
    elif args.skip_natives:
        print("\nnatives skipped (--skip-natives): no comparison")
    else:
        print("\nevery native maintenance read fewer files than the package: no comparison at equal or fewer files read")
    write_results(json_path, spark, args, started, load_before, format=fmt, rows=rows, base_rows=base_rows,
                  step_rows=step_rows, target_file_bytes=target, compared_with=best_name, totals=totals,
                  layouts={n: {k: v for k, v in l.items() if k in ("table", "build_seconds", "attempts", "steps")}
                           for n, l in layouts.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
