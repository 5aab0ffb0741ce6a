"""The extension on every Spark line it is built for (spark_lines/lines.json), on the same data: key
throughput against a plain scan, and a clustered build against a plain `CREATE TABLE AS ... ORDER
BY`. Goal (issue 30): no line more than 10 % worse than the default line on either ratio.

    .venv/bin/python benchmarks/bench_spark_lines.py [--rows 200000000] [--build-rows 8000000] [--files 16] [--build-runs 5]

One child process per line, run by that line's own virtualenv with the jar built for it (scripts/setup
--all-lines), one after another on the same machine. Each child, in a fresh embedded session
(local[2]):
  * the same rows on every line: ids a, b, c of 10 bits each, from hashes of `range(rows)`;
  * key / plain scan: the best of --key-runs timed rounds (after --key-warmups untimed ones; the
    three queries alternate within a round) of
      select sum(xxhash64(hilbert_key(10, a, b, c))) from t      (and zorder_key)
    against the plain scan `select sum(xxhash64(a, b, c)) from t`, t the --rows rows generated in
    the query (no IO: 3-4.5 s a query at 200M rows, within ~3 % between rounds); the ratio is the plain
    scan's time over the key's (a throughput ratio: 1.0 = the key costs nothing over making the rows);
  * build / ORDER BY: the first --build-rows of those rows, written as parquet; the best of
    --build-runs builds of them into --files files by
    `clustered_table` (hilbert on a, b, c, through dbt: benchmarks/dbt_project's clustered_build; the
    model's execution time, as the other benchmarks take it; the whole dbt invocation is reported too)
    over the best of as many `create table .. as select * .. order by a, b, c`
    (spark.sql.shuffle.partitions = --files), the two kinds alternating.
Prints a markdown table and writes build/bench/spark_lines.json. Not a test: asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from common.dbt import PROJECT as DBT_PROJECT
from spark_clustering_dev import lines
from spark_clustering_dev.paths import REPO

SCHEMA = "bench_spark_lines"


def child(args) -> dict:
    from spark_clustering_dev.dbt import run_dbt
    from spark_clustering_dev.paths import SPARK_LINE, WORK
    from spark_clustering_dev.spark import get_spark

    # each line's dbt writes its own target/ and logs (its dbt version may differ from the default's)
    dbt_env = {"DBT_TARGET_PATH": str(WORK / f"dbt-target-lines-{SPARK_LINE}"),
               "DBT_LOG_PATH": str(WORK / f"dbt-logs-lines-{SPARK_LINE}")}
    spark = get_spark(WORK / f"bench-spark-lines-{SPARK_LINE}", app_name=f"bench_spark_lines_{SPARK_LINE}",
                      extra_conf={"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": str(args.files)})
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"drop database if exists {SCHEMA} cascade")
    spark.sql(f"create database {SCHEMA}")
    ids = "cast(pmod(xxhash64(id, {0}), 1024) as int)"
    rows_of = ("(select id, " + ", ".join(f"{ids.format(i + 1)} as {c}" for i, c in enumerate("abc"))
               + " from range({0})) as ids")
    # the keys' rows are generated, not read: with no IO in the query the key's own cost is what the
    # ratio sees (a scan of 40M parquet rows took 0.4 s, and moved by +-20 % between rounds)
    generated = rows_of.format(args.rows)
    plain = f"select sum(xxhash64(a, b, c)) from {generated}"
    keys = {f: f"select sum(xxhash64({f}(10, a, b, c))) from {generated}" for f in ("hilbert_key", "zorder_key")}
    # warm-up rounds (JIT), then timed rounds in which the three queries alternate, so a
    # slow spell of the machine weighs on each alike; the best round of each counts
    queries = {"plain": plain, **keys}
    seconds = {name: [] for name in queries}
    for round_ in range(args.key_warmups + args.key_runs):
        for name, sql in queries.items():
            start = time.monotonic()
            spark.sql(sql).collect()
            if round_ >= args.key_warmups:
                seconds[name].append(time.monotonic() - start)
    plain_s = min(seconds["plain"])
    key_s = {f: min(seconds[f]) for f in keys}

    spark.sql(f"create table {SCHEMA}.source using parquet as select /*+ REPARTITION(8) */ * from {rows_of.format(args.build_rows)}")
    # ORDER BY and clustered build alternate, so a slow spell of the machine weighs on both alike
    order_by, clustered, invocation = [], [], []
    for i in range(args.build_runs):
        spark.sql(f"drop table if exists {SCHEMA}.ordered")
        start = time.monotonic()
        spark.sql(f"create table {SCHEMA}.ordered using parquet as select * from {SCHEMA}.source order by a, b, c")
        order_by.append(time.monotonic() - start)
        start = time.monotonic()
        run = run_dbt(["run", "--select", "clustered_build"], schema=SCHEMA, project_dir=DBT_PROJECT, env=dbt_env,
                      vars={"source": f"{SCHEMA}.source", "build_alias": "clustered", "num_files": args.files,
                            "cluster_by": ["a", "b", "c"], "method": "hilbert"})
        invocation.append(time.monotonic() - start)
        clustered.append(run.node_results()["clustered_build"].execution_time)
    files = spark.sql(f"select count(distinct _metadata.file_path) from {SCHEMA}.clustered").first()[0]
    spark.sql(f"drop database if exists {SCHEMA} cascade")
    return {"line": SPARK_LINE, "spark": spark.version, "rows": args.rows, "build_rows": args.build_rows,
            "plain_scan_s": round(plain_s, 3), "key_s": {f: round(t, 3) for f, t in key_s.items()},
            "key_runs_s": {name: [round(t, 3) for t in ts] for name, ts in seconds.items()},
            "key_over_plain": {f: round(plain_s / t, 3) for f, t in key_s.items()},
            "order_by_s": round(min(order_by), 2), "order_by_runs_s": [round(t, 2) for t in order_by],
            "clustered_runs_s": [round(t, 2) for t in clustered], "clustered_s": round(min(clustered), 2),
            "dbt_invocation_s": round(min(invocation), 2), "clustered_files": files,
            "build_over_order_by": round(min(clustered) / min(order_by), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000_000)
    parser.add_argument("--build-rows", type=int, default=8_000_000)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--key-runs", type=int, default=5, help="timed rounds of the key queries; the best counts")
    parser.add_argument("--key-warmups", type=int, default=1)
    parser.add_argument("--build-runs", type=int, default=5, help="builds of each kind, alternating; the best counts")
    parser.add_argument("--lines", nargs="*", default=None, help="default: every line of spark_lines/lines.json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, default=REPO / "build" / "bench" / "spark_lines.json")
    args = parser.parse_args()
    if args.child:
        print("bench_spark_lines: " + json.dumps(child(args)), flush=True)
        return 0

    results = []
    for line in args.lines or lines.lines():
        env = {**os.environ, "PYTHONPATH": f"{REPO / 'dev'}:{REPO / 'udfs' / 'python'}", "PYTHONUNBUFFERED": "1"}
        env.pop("SPARK_CLUSTERING_TEST_JVM", None)  # the JVM as users run it (C2)
        cmd = [str(lines.python(line)), str(Path(__file__).resolve()), "--child", "--rows", str(args.rows),
               "--build-rows", str(args.build_rows), "--files", str(args.files), "--build-runs", str(args.build_runs),
               "--key-runs", str(args.key_runs), "--key-warmups", str(args.key_warmups)]
        print(f"bench_spark_lines: Spark {line} ...", flush=True)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO)
        found = [x for x in proc.stdout.splitlines() if x.startswith("bench_spark_lines: {")]
        if proc.returncode or not found:
            print(proc.stdout[-3000:] + proc.stderr[-3000:], file=sys.stderr)
            return 1
        results.append(json.loads(found[-1].split(": ", 1)[1]))
    default = next(r for r in results if r["line"] == lines.default_line())
    print(f"\n{args.rows:,} rows (keys), {args.build_rows:,} rows into {args.files} files (builds); "
          f"relative: the line's ratio over the default line's ({default['line']})\n")
    print("| Spark | hilbert_key / plain scan | zorder_key / plain scan | build / ORDER BY (s) | relative key (hilbert, zorder) | relative build |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        rel_keys = [r["key_over_plain"][f] / default["key_over_plain"][f] for f in ("hilbert_key", "zorder_key")]
        r["relative_key"] = [round(x, 3) for x in rel_keys]
        r["relative_build"] = round(r["build_over_order_by"] / default["build_over_order_by"], 3)
        print(f"| {r['spark']} | {r['key_over_plain']['hilbert_key']} | {r['key_over_plain']['zorder_key']} | "
              f"{r['build_over_order_by']} ({r['clustered_s']} / {r['order_by_s']}) | "
              f"{r['relative_key'][0]}, {r['relative_key'][1]} | {r['relative_build']} |")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "command": " ".join([".venv/bin/python", "benchmarks/bench_spark_lines.py", *sys.argv[1:]]),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cpus": os.cpu_count(),
        "results": results}, indent=1))
    print(f"\nwritten to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
