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
answers. Goal: overhead per query after the first <= 50 ms.

Prints markdown tables and writes every figure, per query, to --json. Not a test: asserts nothing.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

import report_datasets
from spark_clustering_dev.dbt import run_dbt
from spark_clustering_dev.paths import BUILD, REPO, WORK, local
from spark_clustering_dev.spark import get_spark

BENCH = BUILD / "bench"
SCHEMA = "bench_skipping"
SKIPPING = "spark.sparkclustering.skipping.enabled"
COLUMNS = report_datasets.LINEITEM_COLUMNS
KINDS = ["1 column", "2 columns", "3 columns", "point"]
# the benchmarks' own dbt project (model skipping_table), not the integration tests' cases
DBT_PROJECT = Path(__file__).resolve().parent / "dbt_project"


# ----------------------------------------------------------------------------------------------
# plumbing

def dbt_run(args: list[str], schema: str, vars: dict):
    """run_dbt with this benchmark's own target/log folders (tests may run dbt at the same time)."""
    env = {"DBT_TARGET_PATH": str(BENCH / "dbt-target-skipping"), "DBT_LOG_PATH": str(BENCH / "dbt-logs-skipping")}
    return run_dbt(args, schema=schema, vars=vars, project_dir=DBT_PROJECT, env=env)


def set_skipping(spark, on: bool) -> None:
    spark.conf.set(SKIPPING, "true" if on else "false")


def plan_nodes(plan):
    """Every node of a physical plan (AdaptiveSparkPlanExec unwrapped to its final plan)."""
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
            node = node.executedPlan()
        yield node
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))


def scan_nodes(plan) -> list:
    """Nodes carrying the file scan's numFiles metric (FileSourceScanExec and subclasses)."""
    return [n for n in plan_nodes(plan) if n.metrics().get("numFiles").isDefined()]


def files_read(scans) -> int:
    return int(sum(n.metrics().get("numFiles").get().value() for n in scans))


SKIPPING_METRICS = ["filesBeforeSkipping", "filesSkippedByStats", "statsTime"]  # the rule's scan node adds them


def skipping_metrics(scans) -> dict:
    """The rule's own scan metrics summed over the scans (statsTime in ms); {} without the rule."""
    out = {}
    for n in scans:
        for name in SKIPPING_METRICS:
            m = n.metrics().get(name)
            if m.isDefined():
                out[name] = out.get(name, 0) + int(m.get().value())
    return out


def scan_classes(scans) -> list[str]:
    return sorted({n.getClass().getName() for n in scans})


def scan_paths(scans) -> list[str]:
    """The files the scans' RDDs read (FileScanRDD partitions); [] when a scan has no such RDD."""
    paths = []
    for n in scans:
        try:
            parts = n.inputRDD().filePartitions()
            for i in range(parts.size()):
                paths.extend(str(f.filePath().toString()) for f in parts.apply(i).files())
        except Exception:  # noqa: BLE001 - a scan that is not file-based: nothing to list
            pass
    return paths


def run_query(spark, sql: str, on: bool, want_paths: bool = False) -> dict:
    """One run of `sql`: its answer, wall time (planning included) and the files its scans read."""
    set_skipping(spark, on)
    start = time.perf_counter()
    df = spark.sql(sql)
    rows = df.collect()
    seconds = time.perf_counter() - start
    scans = scan_nodes(df._jdf.queryExecution().executedPlan())
    out = {"answer": [tuple(r) for r in rows], "seconds": seconds, "files": files_read(scans),
           "scan_classes": scan_classes(scans), "skipping_metrics": skipping_metrics(scans)}
    if want_paths:
        out["paths"] = sorted(str(local(p)) for p in scan_paths(scans))
    return out


def machine() -> dict:
    cpu = "?"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    ram = 0.0
    try:
        ram = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal")) / 2**20
    except (OSError, StopIteration):
        pass
    return {"cores": os.cpu_count(), "ram_gib": round(ram, 1), "cpu": cpu, "python": platform.python_version()}


def git_head() -> str:
    try:
        import subprocess

        return subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %s"], capture_output=True,
                              text=True, check=True).stdout.strip()[:120]
    except Exception:  # noqa: BLE001
        return "?"


# ----------------------------------------------------------------------------------------------
# part 1: TPC-H lineitem, clustered

def table_exists(spark, table: str) -> bool:
    return spark.catalog.tableExists(table)


def build_lineitem(spark, args) -> dict:
    parquet = report_datasets.generate_lineitem_parquet(args.sf, BENCH / "tpch")
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


def file_boxes(spark, table: str) -> list[dict]:
    set_skipping(spark, False)
    aggs = ", ".join(f"min({c}) as {c}_lo, max({c}) as {c}_hi" for c in COLUMNS)
    rows = spark.sql(f"select _metadata.file_path as path, count(*) as n, {aggs} from {table} "
                     "group by _metadata.file_path").collect()
    return [{**r.asDict(), "path": str(local(r["path"]))} for r in rows]


def literal(value) -> str:
    if isinstance(value, datetime.date):
        return f"date'{value.isoformat()}'"
    return str(int(value))


def box_where(box: dict) -> str:
    parts = []
    for c, (lo, hi) in box.items():
        parts.append(f"{c} = {literal(lo)}" if lo == hi else f"{c} between {literal(lo)} and {literal(hi)}")
    return " and ".join(parts)


def make_workload(spark, table: str, boxes: list[dict], n: int, seed: int, rows: int, columns: list[str] = COLUMNS,
                  order_column: str = "l_insert_order", measure: str = "l_extendedprice", find_rows=None) -> list[dict]:
    """`n` box queries over `columns` (lineitem's by default) within the bounds of `boxes`, a quarter
    of each kind: one-, two- and three-column ranges of log-uniform widths (0.5 % to 20 % of the
    column's span) and points (a row's values, the row picked by its `order_column` id 1..rows;
    a null value leaves its column out of the point's box). Each query counts and sums `measure`.
    `find_rows(ids)`, when given, returns those rows (mappings by column name) instead of a query
    of `table` through `spark`."""
    rng = random.Random(seed)
    # a file whose column is all null has no bound on it
    lo = {c: min(f[f"{c}_lo"] for f in boxes if f[f"{c}_lo"] is not None) for c in columns}
    hi = {c: max(f[f"{c}_hi"] for f in boxes if f[f"{c}_hi"] is not None) for c in columns}
    kinds = [KINDS[i % len(KINDS)] for i in range(n)]
    point_ids = sorted(rng.randint(1, rows) for _ in range(kinds.count("point")))
    points = []
    if point_ids:
        found = find_rows(point_ids) if find_rows else spark.sql(
            f"select {order_column}, {', '.join(columns)} from {table} "
            f"where {order_column} in ({', '.join(map(str, point_ids))})").collect()
        by_id = {r[order_column]: r for r in found}
        points = [by_id[i] for i in point_ids]
        rng.shuffle(points)
    queries = []
    for kind in kinds:
        if kind == "point":
            r = points.pop()
            box = {c: (r[c], r[c]) for c in columns if r[c] is not None}
        else:
            box = {}
            for c in sorted(rng.sample(columns, int(kind[0])), key=columns.index):
                if isinstance(lo[c], datetime.date):
                    span = (hi[c] - lo[c]).days
                    width = max(0, round(span * math.exp(rng.uniform(math.log(0.005), math.log(0.2)))))
                    start = lo[c] + datetime.timedelta(days=rng.randint(0, span - width))
                    box[c] = (start, start + datetime.timedelta(days=width))
                else:
                    span = hi[c] - lo[c]
                    width = max(0, round(span * math.exp(rng.uniform(math.log(0.005), math.log(0.2)))))
                    start = lo[c] + rng.randint(0, span - width)
                    box[c] = (start, start + width)
        where = box_where(box)
        queries.append({"kind": kind, "box": box, "where": where,
                        "sql": f"select count(*), sum({measure}) from {table} where {where}"})
    return queries


def intersecting(boxes: list[dict], box: dict) -> list[dict]:
    """The files whose min/max box meets `box` (a file whose column is all null meets no range of it)."""
    return [f for f in boxes if all(f[f"{c}_lo"] is not None and f[f"{c}_lo"] <= hi and f[f"{c}_hi"] >= lo
                                    for c, (lo, hi) in box.items())]


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
# part 2: many small files, planning time

def small_files_dir(spark, args) -> Path:
    path = BENCH / f"small_files_{args.small_files}x{args.small_rows}"
    done = path / "_SUCCESS"
    if done.exists() and len(list(path.glob("part-*.parquet"))) == args.small_files:
        return path
    shutil.rmtree(path, ignore_errors=True)
    start = time.monotonic()
    (spark.range(0, args.small_rows, 1, args.small_files)
     .selectExpr("id", "cast(id % 97 as int) as g", "cast(id as double) * 0.5 as v", "concat('s', id % 1000) as s")
     .write.parquet(str(path)))
    print(f"wrote {args.small_files} files to {path} in {time.monotonic() - start:.0f} s")
    return path


def plan_once(spark, sql: str, on: bool, metrics: dict | None = None) -> tuple[float, int]:
    """Planning time of `sql` (parse, analyze, optimize, physical plan, the scans' file listing),
    no Spark job; and the files the scans will read (the rule's own scan metrics into `metrics`)."""
    set_skipping(spark, on)
    start = time.perf_counter()
    df = spark.sql(sql)
    plan = df._jdf.queryExecution().executedPlan()
    scans = scan_nodes(plan)
    for n in scans:
        n.inputRDD()
    seconds = time.perf_counter() - start
    if metrics is not None:
        metrics.update(skipping_metrics(scans))
    return seconds, files_read(scans)


def part_small_files(spark, args, location: str | None = None, requests=None, answer_checks: int | None = None) -> dict:
    """Part 2 over the files of small_files_dir, or over a copy of them at `location` (e.g. in a
    bucket: bench_object_store.py); `requests()`, when given, returns the store's request count,
    and the summary says how many the first query's planning and the later ones' sent.
    `answer_checks`: run only the first that many queries on and off (a run with skipping off
    opens every file: on a bucket, minutes per query)."""
    path = small_files_dir(spark, args)
    table = f"{SCHEMA}.small_files_{args.small_files}"
    spark.sql(f"drop table if exists {table}")  # external: the files stay
    spark.sql(f"create table {table} using parquet location '{location or path}'")
    counts = {}
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    rng = random.Random(args.seed + 1)
    queries = []
    for _ in range(args.small_queries):
        a = rng.randint(0, args.small_rows - 600)
        w = rng.randint(10, 500)
        queries.append({"where": f"id between {a} and {a + w}",
                        "sql": f"select count(*), sum(v) from {table} where id between {a} and {a + w}"})
    rows_per_file = args.small_rows / args.small_files
    for q in queries:
        a, b = (int(x) for x in q["where"].replace("id between ", "").split(" and "))
        q["ideal"] = int(b // rows_per_file - a // rows_per_file + 1)  # contiguous id blocks per file

    first = queries[0]
    counted = requests() if requests else 0
    cold_off, first["files_off"] = plan_once(spark, first["sql"], False)
    counts["first_plan_off_cold"], counted = (requests() - counted, requests()) if requests else (None, 0)
    first["skipping_metrics_on"] = {}
    first_on, first["files_on"] = plan_once(spark, first["sql"], True, first["skipping_metrics_on"])
    counts["first_plan_on"], counted = (requests() - counted, requests()) if requests else (None, 0)
    warm_off, _ = plan_once(spark, first["sql"], False)
    first.update(plan_off_cold_ms=cold_off * 1e3, plan_on_first_ms=first_on * 1e3, plan_off_warm_ms=warm_off * 1e3)
    print(f"\nfirst query: planning rule off (cold listing) {cold_off * 1e3:.0f} ms; rule on (first look) "
          f"{first_on * 1e3:.0f} ms; rule off again {warm_off * 1e3:.0f} ms; files on {first['files_on']} / "
          f"off {first['files_off']} / ideal {first['ideal']}; the rule's scan metrics {first['skipping_metrics_on']}")

    later_on = 0
    for i, q in enumerate(queries[1:]):
        on_s, off_s, stats_ms = [], [], []
        for r in range(args.plan_repeat):
            for on in ([True, False] if (i + r) % 2 == 0 else [False, True]):
                metrics = {}
                counted = requests() if requests else 0
                seconds, files = plan_once(spark, q["sql"], on, metrics)
                if requests and on:
                    later_on += requests() - counted
                (on_s if on else off_s).append(seconds)
                q["files_on" if on else "files_off"] = files
                if on and "statsTime" in metrics:
                    stats_ms.append(metrics["statsTime"])
        q.update(plan_on_ms=statistics.median(on_s) * 1e3, plan_off_ms=statistics.median(off_s) * 1e3,
                 stats_ms=statistics.median(stats_ms) if stats_ms else None)
        q["overhead_ms"] = q["plan_on_ms"] - q["plan_off_ms"]

    answers_equal = True
    checked = queries[:answer_checks] if answer_checks is not None else queries
    for q in checked:
        on = run_query(spark, q["sql"], True)
        off = run_query(spark, q["sql"], False)
        q.update(answer=[[str(v) for v in row] for row in off["answer"]], answers_equal=on["answer"] == off["answer"],
                 run_on_s=on["seconds"], run_off_s=off["seconds"])
        answers_equal &= q["answers_equal"]
    set_skipping(spark, True)

    rest = queries[1:]
    summary = {
        "files": args.small_files, "rows": args.small_rows, "table": table, "path": str(path),
        "first_plan_off_cold_ms": cold_off * 1e3, "first_plan_on_ms": first_on * 1e3,
        "first_plan_off_warm_ms": warm_off * 1e3, "first_overhead_ms": (first_on - warm_off) * 1e3,
        "median_overhead_ms": statistics.median(q["overhead_ms"] for q in rest) if rest else None,
        "max_overhead_ms": max(q["overhead_ms"] for q in rest) if rest else None,
        "median_plan_on_ms": statistics.median(q["plan_on_ms"] for q in rest) if rest else None,
        "median_plan_off_ms": statistics.median(q["plan_off_ms"] for q in rest) if rest else None,
        "median_stats_ms": (statistics.median(q["stats_ms"] for q in rest)
                            if rest and all(q["stats_ms"] is not None for q in rest) else None),
        "files_on": sum(q["files_on"] for q in queries), "files_off": sum(q["files_off"] for q in queries),
        "ideal": sum(q["ideal"] for q in queries), "answers_equal": answers_equal,
        "run_on_s": sum(q["run_on_s"] for q in checked), "run_off_s": sum(q["run_off_s"] for q in checked),
        "queries_run": len(checked),
    }
    if requests:
        summary["requests"] = {"first_plan_off_cold": counts["first_plan_off_cold"],
                               "first_plan_on": counts["first_plan_on"],
                               "later_plans_on": later_on, "later_plans_on_count": len(rest) * args.plan_repeat}
    print(f"\n## {args.small_files:,} small files ({args.small_rows:,} rows), {len(queries)} selective queries\n")
    print("| figure | value |")
    print("|---|---:|")
    print(f"| first query planning, rule off, cold listing | {summary['first_plan_off_cold_ms']:.0f} ms |")
    print(f"| first query planning, rule on (footers read) | {summary['first_plan_on_ms']:.0f} ms |")
    print(f"| same query planning, rule off, warm | {summary['first_plan_off_warm_ms']:.0f} ms |")
    if "statsTime" in first["skipping_metrics_on"]:
        print(f"| first query, the rule's statsTime metric | {first['skipping_metrics_on']['statsTime']} ms |")
    if rest:
        print(f"| queries 2..{len(queries)}: median planning on / off | {summary['median_plan_on_ms']:.1f} / "
              f"{summary['median_plan_off_ms']:.1f} ms |")
        print(f"| **queries 2..{len(queries)}: median overhead (on - off)** | **{summary['median_overhead_ms']:.1f} ms** |")
        if summary["median_stats_ms"] is not None:
            print(f"| queries 2..{len(queries)}: median of the rule's statsTime metric | {summary['median_stats_ms']:.0f} ms |")
        print(f"| queries 2..{len(queries)}: max overhead | {summary['max_overhead_ms']:.1f} ms |")
    print(f"| files read on / off / ideal (all queries) | {summary['files_on']} / {summary['files_off']} / "
          f"{summary['ideal']} |")
    print(f"| run time on / off ({len(checked)} queries, one run each) | {summary['run_on_s']:.2f} / "
          f"{summary['run_off_s']:.2f} s |")
    print(f"| answers identical on and off ({len(checked)} queries) | {answers_equal} |")
    if requests:
        r = summary["requests"]
        print(f"| store requests: first planning off (cold listing) / on (footers) | {r['first_plan_off_cold']} / "
              f"{r['first_plan_on']} |")
        print(f"| store requests: {r['later_plans_on_count']} later plannings with the rule on | {r['later_plans_on']} |")
    return {"summary": summary, "queries": queries}


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
    results = {"date": datetime.date.today().isoformat(), "machine": machine(), "spark": spark.version,
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
