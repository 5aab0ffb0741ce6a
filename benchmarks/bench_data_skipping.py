"""Planning-time data skipping (`spark.sparkclustering.skipping.enabled`): how many files a filtered
scan reads with the rule on, against the files it has to read, what that saves in wall time, and
what the rule costs at planning time on a table of many small files. One Spark session, AQE off.

    .venv/bin/python benchmarks/bench_data_skipping.py [--sf 1] [--files 64] [--queries 60] [--rounds 3]
        [--small-files 10000] [--small-queries 20] [--rebuild] [--json build/bench/data_skipping.json]

Part 1, TPC-H lineitem (SF 1 = 6,001,215 rows, generated offline by DuckDB's tpch extension from the
duckdb-extension-tpch wheel, cached in build/bench/tpch/), written by dbt's `clustered_table`
(benchmarks/dbt_project's `skipping_table` model) into --files parquet files, hilbert on
(l_shipdate, l_partkey, l_suppkey); then `write_file_stats('<table>', false)` writes the sidecar
(skipped with a note when that table function is not registered). The clustered table is kept in the
benchmark's warehouse (build/work/bench_data_skipping) and reused by the next run unless --rebuild.
Workload: --queries seeded queries (--seed), a quarter each of one-, two- and three-column boxes
(each column's width log-uniform in 0.5 %..20 % of its range) and point queries (equality on all
three columns, values of a random existing row), each
`select count(*), sum(l_extendedprice) from <table> where <box>`. Per query:
  files on / off  the scan's SQL metric numFiles (every plan node that has it: FileSourceScanExec
                  and the rule's scan, a subclass of it) with the rule on / off;
  ideal           files whose exact min/max box (one `group by _metadata.file_path` scan, done once)
                  intersects the query box: what a perfect min/max skipper reads;
  answers         the (count, sum) of every run, on and off, must be identical.
Timing: one untimed warm-up pass (off then on for each query: files, answers, the files the
rule-on scan listed), then --rounds timed rounds; in round r query i runs off then on when i + r is
even, on then off otherwise. Time of a run = `spark.sql(q).collect()` wall time (planning included);
workload time = sum over queries of each query's median over the rounds.
Goals: files read on / ideal <= 1.05; workload time on / off <= 0.5.

Part 2, --small-files tiny parquet files (`spark.range(--small-rows)` in --small-files partitions,
so each file holds a contiguous id block; columns id, g, v, s; written once to build/bench/), an
external table over them without any sidecar (footers only), and --small-queries selective queries
`select count(*), sum(v) from <table> where id between a and a + w` (w 10..500, about 1-6 files).
Planning time = wall time of `spark.sql(q)` + `queryExecution().executedPlan()` + each scan node's
`inputRDD()` (FileSourceScanExec lists and packs its files lazily, when its RDD is built: this
forces that listing, where a scan-level skipper prunes, without running a Spark job). Order:
query 1 rule off (cold: the relation's file listing of every file), query 1 rule on (the rule's first
look at the table: footer reading), query 1 rule off again (warm); then queries 2.. each planned
--plan-repeat (5) times on and off, alternating which goes first; overhead = median(on) - median(off)
per query, reported as the median over queries. Every query is then run once each way to check the
answers. Goal: overhead per query after the first <= 50 ms. (Part 2 is common/small_files.py:
bench_object_store.py runs it on a bucket.)

Prints markdown tables and writes every figure, per query, to --json. Not a test: asserts nothing.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path

from common import BENCH
from common.datasets import LINEITEM_COLUMNS as COLUMNS, generate_lineitem_parquet
from common.dbt import dbt_runner
from common.machine import git_head, machine_facts
from common.scans import run_query, set_skipping
from common.small_files import SCHEMA, part_small_files
from common.workloads import KINDS, file_boxes, intersecting, make_workload
from spark_clustering_dev.paths import WORK
from spark_clustering_dev.spark import get_spark

# run_dbt on the benchmarks' own dbt project (model skipping_table) with this benchmark's target/log folders
dbt_run = dbt_runner("skipping")


# ----------------------------------------------------------------------------------------------
# part 1: TPC-H lineitem, clustered

def table_exists(spark, table: str) -> bool:
    return spark.catalog.tableExists(table)


def build_lineitem(spark, args) -> dict:
    parquet = generate_lineitem_parquet(args.sf, BENCH / "tpch")
    table = f"{SCHEMA}.lineitem_hilbert_{args.files}"
    source = f"parquet.`{parquet}`"
    expected_rows = int(spark.sql(f"select count(*) from {source}").first()[0])
    info = {"source_parquet": str(parquet), "table": table, "rows": expected_rows, "reused": False}
    if not args.rebuild and table_exists(spark, table):
        spark.sql(f"refresh table {table}")
        rows = int(spark.sql(f"select count(*) from {table}").first()[0])
        files = len(spark.table(table).inputFiles())
        if rows == expected_rows and files == args.files:
            info.update(reused=True, files=files)
            print(f"reusing {table}: {rows:,} rows in {files} files (--rebuild to rebuild it)")
            return info
    start = time.monotonic()
    run = dbt_run(["run", "--select", "skipping_table"], schema=SCHEMA,
                  vars={"source": source, "skipping_alias": table.split(".")[1], "method": "hilbert",
                        "cluster_by": COLUMNS, "num_files": args.files})
    info["build_seconds"] = round(time.monotonic() - start, 1)
    info["dbt_execution_seconds"] = round(run.node_results()["skipping_table"].execution_time, 1)
    spark.sql(f"refresh table {table}")
    info["files"] = len(spark.table(table).inputFiles())
    print(f"built {table} with dbt clustered_table: {info['files']} files in {info['build_seconds']} s")
    return info


def write_sidecar(spark, table: str) -> dict:
    import logging

    from pyspark.logger import PySparkLogger

    start = time.monotonic()
    # pyspark logs every analysis error with its Java stack (created through PySparkLogger, as pyspark does)
    quiet = PySparkLogger.getLogger("SQLQueryContextLogger")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        rows = spark.sql(f"select * from write_file_stats('{table}', false)").collect()
    except Exception as error:  # noqa: BLE001 - AnalysisException from py4j
        text = str(error)
        if "write_file_stats" in text and ("UNRESOLVED_ROUTINE" in text or "not found" in text.lower()
                                           or "Undefined function" in text or "TABLE_VALUED_FUNCTION" in text):
            print("note: write_file_stats is not registered in this build of the extension: no sidecar written")
            return {"written": False, "note": "write_file_stats not registered"}
        raise
    finally:
        quiet.setLevel(level)
    seconds = time.monotonic() - start
    print(f"write_file_stats('{table}', false): {len(rows)} row(s) in {seconds:.1f} s")
    return {"written": True, "seconds": round(seconds, 2), "rows": [r.asDict() for r in rows][:5]}


def show(value) -> str:
    return value.isoformat() if isinstance(value, datetime.date) else str(value)


def part_lineitem(spark, args) -> dict:
    info = build_lineitem(spark, args)
    table = info["table"]
    info["sidecar"] = write_sidecar(spark, table)
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    boxes = file_boxes(spark, table)
    queries = make_workload(spark, table, boxes, args.queries, args.seed, info["rows"])
    by_path = {f["path"]: f for f in boxes}

    print(f"\nwarm-up pass: {len(queries)} queries, rule off then on")
    spark.sql(f"select count(*), sum(l_extendedprice) from {table}").collect()  # page cache + JIT
    for q in queries:
        off = run_query(spark, q["sql"], False)
        on = run_query(spark, q["sql"], True, want_paths=True)
        ideal = intersecting(boxes, q["box"])
        q.update(files_off=off["files"], files_on=on["files"], ideal=len(ideal), answer=off["answer"],
                 answers_equal=off["answer"] == on["answer"], scan_classes_on=on["scan_classes"],
                 scan_classes_off=off["scan_classes"], skipping_metrics_on=on["skipping_metrics"], paths_on=on["paths"],
                 extra_files=[p for p in on["paths"] if p not in {f["path"] for f in ideal}],
                 missing_files=[f["path"] for f in ideal if f["path"] not in set(on["paths"])] if on["paths"] else [],
                 seconds_on=[], seconds_off=[])

    print(f"timed: {args.rounds} rounds, alternating which setting runs first")
    for r in range(args.rounds):
        for i, q in enumerate(queries):
            for on in ([False, True] if (i + r) % 2 == 0 else [True, False]):
                res = run_query(spark, q["sql"], on)
                q["seconds_on" if on else "seconds_off"].append(res["seconds"])
                if res["answer"] != q["answer"]:
                    q["answers_equal"] = False
    set_skipping(spark, True)

    for q in queries:
        q["median_on"] = statistics.median(q["seconds_on"])
        q["median_off"] = statistics.median(q["seconds_off"])
    total_on = sum(q["files_on"] for q in queries)
    total_off = sum(q["files_off"] for q in queries)
    total_ideal = sum(q["ideal"] for q in queries)
    time_on = sum(q["median_on"] for q in queries)
    time_off = sum(q["median_off"] for q in queries)
    rounds_on = [sum(q["seconds_on"][r] for q in queries) for r in range(args.rounds)]
    rounds_off = [sum(q["seconds_off"][r] for q in queries) for r in range(args.rounds)]
    per_kind = {}
    for kind in KINDS:
        qs = [q for q in queries if q["kind"] == kind]
        if qs:
            per_kind[kind] = {"queries": len(qs), "files_on": sum(q["files_on"] for q in qs),
                              "files_off": sum(q["files_off"] for q in qs), "ideal": sum(q["ideal"] for q in qs),
                              "seconds_on": sum(q["median_on"] for q in qs),
                              "seconds_off": sum(q["median_off"] for q in qs),
                              "matching_rows": sum(int(q["answer"][0][0]) for q in qs)}
    over = [q for q in queries if q["files_on"] > q["ideal"]]
    under = [q for q in queries if q["files_on"] < q["ideal"]]
    summary = {
        "files_on": total_on, "files_off": total_off, "ideal": total_ideal,
        "files_on_over_ideal": total_on / total_ideal if total_ideal else None,
        "seconds_on": time_on, "seconds_off": time_off, "time_on_over_off": time_on / time_off,
        "round_totals_on": rounds_on, "round_totals_off": rounds_off,
        "answers_equal": all(q["answers_equal"] for q in queries),
        "queries_over_ideal": len(over), "queries_under_ideal": len(under),
        "rule_active": any(q["files_on"] != q["files_off"] for q in queries),
        "scan_classes_on": sorted({c for q in queries for c in q["scan_classes_on"]}),
        "scan_classes_off": sorted({c for q in queries for c in q["scan_classes_off"]}),
        "per_kind": per_kind,
        "stats_ms_on_warmup": sum(q["skipping_metrics_on"].get("statsTime", 0) for q in queries),
    }

    print(f"\n## TPC-H lineitem SF {args.sf:g}: {info['rows']:,} rows, {info['files']} files, hilbert on "
          f"{', '.join(COLUMNS)}\n")
    print(f"sidecar: {'written by write_file_stats' if info['sidecar']['written'] else info['sidecar']['note']}; "
          f"rule active: {summary['rule_active']}; scan nodes on: {', '.join(summary['scan_classes_on'])}\n")
    print("| queries | files read on | files read off | ideal | on / ideal | time on s | time off s | on / off | matching rows |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind, k in per_kind.items():
        print(f"| {kind} ({k['queries']}) | {k['files_on']} | {k['files_off']} | {k['ideal']} | "
              f"{k['files_on'] / k['ideal'] if k['ideal'] else float('nan'):.3f} | {k['seconds_on']:.2f} | "
              f"{k['seconds_off']:.2f} | {k['seconds_on'] / k['seconds_off']:.2f} | {k['matching_rows']:,} |")
    print(f"| **all ({len(queries)})** | {total_on} | {total_off} | {total_ideal} | "
          f"**{summary['files_on_over_ideal']:.3f}** | {time_on:.2f} | {time_off:.2f} | "
          f"**{summary['time_on_over_off']:.2f}** | {sum(k['matching_rows'] for k in per_kind.values()):,} |")
    print(f"\ngoals: files on / ideal <= 1.05: {summary['files_on_over_ideal']:.3f}; time on / off <= 0.5: "
          f"{summary['time_on_over_off']:.2f}; answers identical on and off: {summary['answers_equal']}")
    print(f"round totals on: {', '.join(f'{s:.2f}' for s in rounds_on)} s; off: "
          f"{', '.join(f'{s:.2f}' for s in rounds_off)} s")
    if over:
        print(f"\n{len(over)} queries read more files than the ideal with the rule on (first 5):")
        for q in over[:5]:
            print(f"- [{q['kind']}] {q['where']}: on {q['files_on']}, ideal {q['ideal']}, off {q['files_off']}")
            for p in q["extra_files"][:3]:
                f = by_path.get(p)
                if f:
                    print("    extra file " + Path(p).name[:40] + ": " + ", ".join(
                        f"{c} [{show(f[c + '_lo'])}, {show(f[c + '_hi'])}]" for c in q["box"]))
    if under:
        print(f"\n{len(under)} queries read FEWER files than the ideal with the rule on (rows could be lost):")
        for q in under[:5]:
            print(f"- [{q['kind']}] {q['where']}: on {q['files_on']}, ideal {q['ideal']}, missing "
                  f"{[Path(p).name[:40] for p in q['missing_files'][:3]]}")

    for q in queries:
        q["box"] = {c: [show(lo), show(hi)] for c, (lo, hi) in q["box"].items()}
        q["answer"] = [[str(v) for v in row] for row in q["answer"]]
        q["paths_on"] = [Path(p).name for p in q["paths_on"]]
        q["extra_files"] = [{"file": Path(p).name, **{k: show(v) for k, v in by_path.get(p, {}).items() if k != "path"}}
                            for p in q["extra_files"]]
        q["missing_files"] = [Path(p).name for p in q["missing_files"]]
    return {"dataset": info, "summary": summary, "queries": queries,
            "file_boxes": [{k: show(v) if k != "path" else Path(v).name for k, v in f.items()} for f in boxes]}


# ----------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (1 = 6,001,215 lineitem rows)")
    parser.add_argument("--files", type=int, default=64, help="files of the clustered lineitem table")
    parser.add_argument("--queries", type=int, default=60, help="workload size (a quarter of each kind)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of the lineitem workload")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the clustered table even if it exists")
    parser.add_argument("--small-files", type=int, default=10_000)
    parser.add_argument("--small-rows", type=int, default=1_000_000)
    parser.add_argument("--small-queries", type=int, default=20)
    parser.add_argument("--plan-repeat", type=int, default=5, help="planning runs per setting per query (part 2)")
    parser.add_argument("--skip-lineitem", action="store_true")
    parser.add_argument("--skip-small", action="store_true")
    parser.add_argument("--json", type=Path, default=BENCH / "data_skipping.json")
    args = parser.parse_args(argv)

    started = time.monotonic()
    load_before = os.getloadavg()
    spark = get_spark(WORK / "bench_data_skipping", app_name="bench_data_skipping",
                      extra_conf={"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": str(args.files)})
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"create database if not exists {SCHEMA}")
    results = {"date": datetime.date.today().isoformat(), "machine": machine_facts(), "spark": spark.version,
               "master": spark.sparkContext.master, "commit": git_head(), "args": {k: str(v) for k, v in vars(args).items()}}
    if not args.skip_lineitem:
        results["lineitem"] = part_lineitem(spark, args)
    if not args.skip_small:
        results["small_files"] = part_small_files(spark, args)
    results["seconds"] = round(time.monotonic() - started, 1)
    results["loadavg_before"], results["loadavg_after"] = load_before, os.getloadavg()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1, default=str))
    print(f"\n{results['date']}, {results['machine']['cores']} cores, {results['machine']['ram_gib']} GiB "
          f"({results['machine']['cpu']}), Spark {results['spark']} {results['master']}; load average before "
          f"{load_before[0]:.2f}, after {results['loadavg_after'][0]:.2f}; {results['seconds']:.0f} s; "
          f"figures in {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
