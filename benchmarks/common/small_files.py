"""Planning time of the data-skipping rule on a table of many tiny parquet files (bench_data_skipping's
part 2; bench_object_store runs it on a copy of the files in a bucket): see bench_data_skipping.py's
docstring for what is measured."""
from __future__ import annotations

import random
import shutil
import statistics
import time
from pathlib import Path

from common import BENCH
from common.scans import files_read, run_query, scan_nodes, set_skipping, skipping_metrics

SCHEMA = "bench_skipping"  # the database of the small-files table (and of bench_data_skipping's lineitem)


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
    spark.sql(f"create database if not exists {SCHEMA}")
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
