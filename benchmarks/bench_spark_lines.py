"""The extension on every Spark line it is built for (spark_lines/lines.json), on the same data: key
throughput against a plain scan, and a clustered build against a plain `CREATE TABLE AS ... ORDER
BY`. Goal (issue 30): no line more than 10 % worse than the default line on either ratio.

    .venv/bin/python benchmarks/bench_spark_lines.py [--rows 40000000] [--build-rows 8000000] [--files 16]

One child process per line, run by that line's own virtualenv with the jar built for it (scripts/setup
--all-lines), one after another on the same machine. Each child, in a fresh embedded session
(local[2]):
  * writes the same rows (ids a, b, c of 10 bits each, from hashes of `range(rows)`) as parquet;
  * key / plain scan: the best of 5 timed runs (after a warm-up) of
      select sum(xxhash64(hilbert_key(10, a, b, c))) from t      (and zorder_key)
    against the plain scan `select sum(xxhash64(a, b, c)) from t`; the ratio is the plain scan's time
    over the key's (a throughput ratio: 1.0 = the key costs nothing over reading the rows);
  * build / ORDER BY: the best of 3 builds of --build-rows rows into --files files by
    `clustered_table` (hilbert on a, b, c, through dbt: benchmarks/dbt_project's clustered_build) over the best of 3
    `create table .. as select * .. order by a, b, c` (spark.sql.shuffle.partitions = --files).
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "dev"))
from spark_clustering_dev import lines  # noqa: E402

SCHEMA = "bench_spark_lines"
DBT_PROJECT = REPO / "benchmarks" / "dbt_project"


def best(spark, sql: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.monotonic()
        spark.sql(sql).collect()
        times.append(time.monotonic() - start)
    return min(times)


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
    spark.sql(f"""create table {SCHEMA}.ids using parquet as select /*+ REPARTITION(8) */ id, {ids.format(1)} as a,
        {ids.format(2)} as b, {ids.format(3)} as c from range({args.rows})""")
    plain = f"select sum(xxhash64(a, b, c)) from {SCHEMA}.ids"
    keys = {f: f"select sum(xxhash64({f}(10, a, b, c))) from {SCHEMA}.ids" for f in ("hilbert_key", "zorder_key")}
    for sql in [plain, *keys.values()]:
        spark.sql(sql).collect()  # warm-up: JIT, file listing
    plain_s = best(spark, plain, 5)
    key_s = {f: best(spark, sql, 5) for f, sql in keys.items()}

    spark.sql(f"create table {SCHEMA}.source using parquet as select * from {SCHEMA}.ids where id < {args.build_rows}")
    order_by = []
    for i in range(3):
        spark.sql(f"drop table if exists {SCHEMA}.ordered")
        start = time.monotonic()
        spark.sql(f"create table {SCHEMA}.ordered using parquet as select * from {SCHEMA}.source order by a, b, c")
        order_by.append(time.monotonic() - start)
    clustered = []
    for i in range(3):
        start = time.monotonic()
        run_dbt(["run", "--select", "clustered_build"], schema=SCHEMA, project_dir=DBT_PROJECT, env=dbt_env,
                vars={"source": f"{SCHEMA}.source", "build_alias": "clustered", "num_files": args.files,
                      "cluster_by": ["a", "b", "c"], "method": "hilbert"})
        clustered.append(time.monotonic() - start)
    files = spark.sql(f"select count(distinct _metadata.file_path) from {SCHEMA}.clustered").first()[0]
    spark.sql(f"drop database if exists {SCHEMA} cascade")
    return {"line": SPARK_LINE, "spark": spark.version, "rows": args.rows, "build_rows": args.build_rows,
            "plain_scan_s": round(plain_s, 3), "key_s": {f: round(t, 3) for f, t in key_s.items()},
            "key_over_plain": {f: round(plain_s / t, 3) for f, t in key_s.items()},
            "order_by_s": round(min(order_by), 2), "clustered_s": round(min(clustered), 2), "clustered_files": files,
            "build_over_order_by": round(min(clustered) / min(order_by), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=40_000_000)
    parser.add_argument("--build-rows", type=int, default=8_000_000)
    parser.add_argument("--files", type=int, default=16)
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
               "--build-rows", str(args.build_rows), "--files", str(args.files)]
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
