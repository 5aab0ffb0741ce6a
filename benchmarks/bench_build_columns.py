"""What a clustered build costs on clustering columns of every type, stage by stage, against the
format's CTAS ORDER BY in the same process (issue 52: 1.5-1.8x was seen on columns other than the
other benchmarks' (l_shipdate, l_partkey, l_suppkey)).

    .venv/bin/python benchmarks/bench_build_columns.py --format delta|iceberg|parquet [--dataset lineitem|store_sales]
        [--sf 1] [--files 64] [--rounds 3] [--sets name,...] [--methods hilbert,auto] [--order-by all|first]
        [--parquet-timestamps int96|micros] [--json build/bench/X.json]

Rows: TPC-H lineitem or TPC-DS store_sales (common.datasets), read through a view that adds the
types the TPC tables lack: an int, a timestamp, a double and a string whose values share a long
prefix. Column sets (SETS below) cover a date, a timestamp, an int, a bigint, a decimal, a double and
a string; each dataset's first set is the other benchmarks' columns. Per set, rounds taking turns:
the package's `clustered_table` (the benchmarks' format_table model, --methods; `auto` with a
declared workload of 20 boxes drawn from sampled values of the set's columns) and `CREATE TABLE ...
AS SELECT ... ORDER BY` the set's columns (--order-by first: its first column only), each a new
table of the format with --files files (shuffle partitions), and the same rows written with no order
(`/*+ REPARTITION(files) */`, no sort): what any layout that does not follow the table's own order
costs at least, without a key or a fixed stage. Reported per build: the bytes of its data files (a write costs what it writes: which rows share a
file decides how well its columns compress), wall seconds and the Spark JVM's CPU seconds (utime +
stime of the driver JVM, where local mode runs every task), the fastest round of each; and per
stage of the package's build, every statement Spark ran for it (the benchmark wraps SparkSession.sql
in its own process; dbt-spark's session connection calls it) classified by its SQL (STAGES), wall
and JVM CPU summed (each statement charged until the next one starts), from the round of the
fastest build. Ratios are to the CTAS of the same set
and round kind. --parquet-timestamps micros: the session writes parquet timestamps as
TIMESTAMP_MICROS (docs/deployment.md recommends it for plain parquet tables: INT96, Spark's default,
has no footer statistics, so a plain build's statistics read the timestamp column's rows), for the
CTAS and the package alike. Prints markdown tables; asserts only that every build holds the
source's rows.
"""
from __future__ import annotations

import argparse
import datetime
import decimal
import os
import random
import re
import time
from pathlib import Path

from common import BENCH
from common.datasets import lineitem_source
from common.dbt import dbt_runner
from common.formats import drop_table, format_session, table_bytes
from common.machine import write_results
from common.timing import JvmCpu, timed, with_cpu

dbt_run = dbt_runner("build_columns")

# The view over the source that adds the types the TPC tables lack (named <dataset>_typed).
TYPED = {
    "lineitem": """select *, cast(l_suppkey as int) as l_suppkey_int,
        timestamp_seconds(unix_date(l_shipdate) * 86400L + l_orderkey % 86400) as l_ship_ts,
        cast(l_extendedprice as double) * (1 - cast(l_discount as double)) as l_charge,
        concat('s3://warehouse/tpch/lineitem/part-key=', lpad(cast(l_partkey as string), 9, '0')) as l_part_path""",
    "store_sales": """select *, cast(ss_item_sk as int) as ss_item_int,
        timestamp_seconds((ss_sold_date_sk - 2440588) * 86400L + ss_sold_time_sk) as ss_sold_ts,
        cast(ss_net_paid as double) as ss_net_paid_double,
        concat('customers/loyalty-program/account-number/', lpad(cast(ss_customer_sk as string), 10, '0')) as ss_customer_path""",
}
# The reference write with no order (see where it is built)
UNORDERED = "CTAS REPARTITION, no order"
# Clustering column sets per dataset: the types each covers
SETS = {
    "lineitem": {
        "benchmark": ["l_shipdate", "l_partkey", "l_suppkey"],  # date, bigint, bigint
        "receipt_supp_price": ["l_receiptdate", "l_suppkey", "l_extendedprice"],  # date, bigint, decimal(15,2): issue 52's
        "ts_int_double": ["l_ship_ts", "l_suppkey_int", "l_charge"],  # timestamp, int, double
        "path_commit_qty": ["l_part_path", "l_commitdate", "l_quantity"],  # string (long prefix), date, decimal(15,2)
    },
    "store_sales": {
        "benchmark": ["ss_sold_date_sk", "ss_item_sk", "ss_customer_sk"],  # bigints
        "ts_int_decimal": ["ss_sold_ts", "ss_item_int", "ss_net_paid"],  # timestamp, int, decimal(7,2)
        "double_path_date": ["ss_net_paid_double", "ss_customer_path", "ss_sold_date_sk"],  # double, string, bigint
    },
}
# A statement's stage, by the first pattern its SQL matches (the file cuts and the search read the
# sample's view too: they come first)
STAGES = [
    ("file cuts", r"sort_array\(collect_list\(k\)\)|pmod\(hash\(i\)"),
    ("layout search", r"_search\b|__sc_candidate|__sc_fit"),
    ("sample + quantiles", r"_sample\b|_sample_pass|percentile|approx_percentile|__sc_sampled|cache lazy table"),
    ("count", r"^\s*select count\(\*\) from"),
    ("write", r"REPARTITION|create (or replace )?table .* as\s+select|insert "),
    ("statistics", r"_sc_file_stats|file_stats|input_file_name|_metadata\.file_path"),
    ("check", r"observed_row_checksum|row_checksum|xxhash64|count\(\*\)"),
    ("metadata", r"^\s*(describe|show|explain|alter|drop|create (database|schema))|tblproperties"),
]


def without_comment(sql: str) -> str:
    """The statement without the comment dbt puts first (its app, version and node)."""
    return re.sub(r"^\s*/\*.*?\*/\s*", "", sql, flags=re.DOTALL)


def stage_of(sql: str) -> str:
    sql = without_comment(sql)
    for name, pattern in STAGES:
        if re.search(pattern, sql, re.IGNORECASE | re.DOTALL):
            return name
    return "other"


class StatementLog:
    """Every SparkSession.sql call of this process while recording: (SQL, wall seconds, JVM CPU
    seconds), each statement charged from its call to the next statement's (or the end of the
    build): a query's work runs when dbt-spark collects the DataFrame that sql() returns, after the
    call; the dbt work between two statements is charged to the first."""

    def __init__(self, cpu: JvmCpu):
        from pyspark.sql import SparkSession

        self.cpu, self.calls, self.recording = cpu, [], False
        original = SparkSession.sql
        log = self

        def sql(session, query, *args, **kwargs):
            if log.recording:
                log.calls.append((str(query), time.monotonic(), log.cpu.seconds() or 0.0))
            return original(session, query, *args, **kwargs)
        SparkSession.sql = sql

    def record(self, fn) -> list[tuple[str, float, float]]:
        self.calls, self.recording = [], True
        try:
            fn()
        finally:
            self.recording = False
        ends = [(t, c) for _, t, c in self.calls[1:]] + [(time.monotonic(), self.cpu.seconds() or 0.0)]
        return [(q, end[0] - t, end[1] - c) for (q, t, c), end in zip(self.calls, ends)]


def typed_value(value):
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def sampled_workload(spark, view: str, columns: list[str], boxes: int, seed: int) -> list[dict]:
    """`boxes` boxes on 1-3 of `columns`, each a range of ~10 % of a column's sampled values."""
    rows = spark.sql(f"select {', '.join(columns)} from {view} where rand({seed}) < 0.002").collect()
    values = {c: sorted(r[c] for r in rows if r[c] is not None) for c in columns}
    rng = random.Random(seed)
    out = []
    for _ in range(boxes):
        box = {}
        for c in rng.sample(columns, rng.randint(1, len(columns))):
            v = values[c]
            i = rng.randrange(0, max(1, len(v) - len(v) // 10))
            box[c] = [typed_value(v[i]), typed_value(v[min(len(v) - 1, i + len(v) // 10)])]
        out.append(box)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--format", choices=["delta", "iceberg", "parquet"], required=True)
    parser.add_argument("--dataset", choices=sorted(SETS), default="lineitem")
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sets", type=lambda s: [x for x in s.split(",") if x], default=None)
    parser.add_argument("--methods", type=lambda s: [x for x in s.split(",") if x], default=["hilbert", "auto"])
    parser.add_argument("--order-by", choices=["all", "first"], default="all",
                        help="the CTAS orders by every column of the set (default) or by its first only")
    parser.add_argument("--parquet-timestamps", choices=["int96", "micros"], default="int96",
                        help="spark.sql.parquet.outputTimestampType of the session: INT96 (Spark's default) or TIMESTAMP_MICROS")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    started, load_before = time.monotonic(), os.getloadavg()
    fmt, schema = args.format, f"bench_build_columns_{args.format}"
    spark = format_session(fmt, "bench_build_columns", args.files, {
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS" if args.parquet_timestamps == "micros" else "INT96"})
    cpu = JvmCpu(spark)
    statements = StatementLog(cpu)
    source, rows = lineitem_source(spark, schema, args.sf, args.dataset)
    view = f"{schema}.{args.dataset}_typed"
    spark.sql(f"create or replace view {view} as {TYPED[args.dataset]} from {source}")
    sets = {name: cols for name, cols in SETS[args.dataset].items() if not args.sets or name in args.sets}
    dbt_run(["parse"], schema=schema, vars={})
    # one untimed small build warms the JVM up for the package's code paths, as for the CTAS after it
    drop_table(spark, fmt, f"{schema}.warmup")
    dbt_run(["run", "--select", "format_table"], schema=schema, vars={
        "source": f"(select * from {view} limit 20000) s", "alias": "warmup", "format": fmt, "method": "hilbert",
        "num_files": 2, "cluster_by": next(iter(sets.values()))})

    results = {}
    for set_name, columns in sets.items():
        workload = sampled_workload(spark, view, columns, 20, seed=len(results) + 1)
        builds = {}

        def reference(name: str, table: str, select: str) -> None:
            """One timed `CREATE TABLE ... AS <select>` of the format, a build of `builds[name]`."""
            drop_table(spark, fmt, f"{schema}.{table}")
            wall, used = with_cpu(cpu, lambda: timed(lambda: spark.sql(f"create table {schema}.{table} using {fmt} as {select}")))
            assert spark.sql(f"select count(*) from {schema}.{table}").first()[0] == rows, (set_name, name)
            builds.setdefault(name, []).append({"wall": wall, "cpu": used or 0.0, "statements": [],
                                                "bytes": table_bytes(spark, fmt, f"{schema}.{table}")})
        for _ in range(args.rounds):
            for method in args.methods:
                table = f"{schema}.package_{method}"
                drop_table(spark, fmt, table)

                def build():
                    run = dbt_run(["run", "--select", "format_table"], schema=schema, vars={
                        "source": view, "alias": f"package_{method}", "format": fmt, "method": method,
                        "num_files": args.files, "cluster_by": columns, "workload": workload if method == "auto" else None})
                    assert run.node_results()["format_table"].status == "success"
                log = []
                wall, used = with_cpu(cpu, lambda: timed(lambda: log.extend(statements.record(build))))
                assert spark.sql(f"select count(*) from {table}").first()[0] == rows, (set_name, method)
                builds.setdefault(f"package {method}", []).append({"wall": wall, "cpu": used or 0.0, "statements": log,
                                                                   "bytes": table_bytes(spark, fmt, table)})
            order = columns if args.order_by == "all" else columns[:1]
            reference("CTAS ORDER BY", "ctas_order_by", f"select * from {view} order by {', '.join(order)}")
            # The floor of a layout that does not follow the table's own order: the same rows in
            # --files files, shuffled, no order, no key, no fixed stages.
            reference(UNORDERED, "ctas_no_order", f"select /*+ REPARTITION({args.files}) */ * from {view}")
        summary = {}
        for name, runs in builds.items():
            best = min(runs, key=lambda r: r["wall"])
            stages = {}
            for sql, wall, used in best["statements"]:
                s = stages.setdefault(stage_of(sql), {"statements": 0, "wall": 0.0, "cpu": 0.0})
                s["statements"] += 1
                s["wall"] += wall
                s["cpu"] += used
            slowest = sorted(best["statements"], key=lambda e: -e[1])[:5]
            summary[name] = {"wall": round(best["wall"], 2), "cpu": round(min(r["cpu"] for r in runs), 2), "bytes": best["bytes"],
                             "walls": [round(r["wall"], 2) for r in runs], "cpus": [round(r["cpu"], 2) for r in runs],
                             "stages": {k: {"statements": v["statements"], "wall": round(v["wall"], 2), "cpu": round(v["cpu"], 2)}
                                        for k, v in stages.items()},
                             "slowest_statements": [[round(w, 2), round(c, 2), re.sub(r"\s+", " ", without_comment(q))[:300]] for q, w, c in slowest]}
        results[set_name] = {"columns": columns, "builds": summary}
        print_set(set_name, columns, summary)
    if args.json is None:
        args.json = BENCH / f"build_columns_{fmt}_{args.dataset}.json"
    write_results(args.json, spark, args, started, load_before, rows=rows, sets=results)
    return 0


def print_set(name: str, columns: list[str], summary: dict) -> None:
    ctas = summary["CTAS ORDER BY"]
    print(f"\n### {name}: ({', '.join(columns)})\n")
    print("| build | wall s | / CTAS | JVM CPU s | / CTAS | MB written | / CTAS | rounds (wall) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for build, s in summary.items():
        print(f"| {build} | {s['wall']:.1f} | {s['wall'] / ctas['wall']:.2f}x | {s['cpu']:.1f} | "
              f"{(s['cpu'] / ctas['cpu']) if ctas['cpu'] else 0:.2f}x | {s['bytes'] / 1e6:.1f} | {s['bytes'] / ctas['bytes']:.2f}x | "
              f"{', '.join(f'{w:.1f}' for w in s['walls'])} |")
    stage_names = [n for n, _ in STAGES] + ["other"]
    print("\n| build | " + " | ".join(stage_names) + " |")
    print("| --- |" + " ---: |" * len(stage_names))
    for build, s in summary.items():
        if build in ("CTAS ORDER BY", UNORDERED):
            continue
        cells = []
        for n in stage_names:
            st = s["stages"].get(n)
            cells.append(f"{st['wall']:.1f} / {st['cpu']:.1f} ({st['statements']})" if st else "-")
        print(f"| {build} (wall / CPU s (statements)) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
