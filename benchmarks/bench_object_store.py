"""Data skipping and commits on S3: S3A against a real S3 API server on 127.0.0.1 (moto, started
here), counted with S3A's own request statistics. One Spark session, AQE off, the observed workload
not recorded (its background flush would be counted with the queries).

    .venv/bin/python benchmarks/bench_object_store.py [--sf 1] [--files 64] [--queries 60] [--seed 29]
        [--json build/bench/object_store.json]

The table: TPC-H lineitem (SF 1 = 6,001,215 rows, bench_data_skipping.py's generator and
workload), written by dbt's `clustered_table` (benchmarks/dbt_project's `skipping_table` model,
hilbert on l_shipdate, l_partkey, l_suppkey) into --files parquet files in a database located in the
bucket, so its default `cluster_swap: auto` writes it at a build location; then the statistics
sidecar by `write_file_stats`. Every run builds afresh (the server keeps nothing).

Per step, S3A's counters of the bucket's file system (the driver's; local executors share it):
  build, rebuild      `dbt run` of the model (the rebuild: the same rows again, swapped by location);
  insert, recluster   an `insert` of 2 % of the rows (unclustered), then `dbt run-operation
                      recluster` of the table: what its commit copies (on S3A its files are
                      pending uploads completed at the commit), and its commit window: a thread
                      lists the table's objects (its own S3 client, ~every 20 ms) during the
                      recluster; the window is the time between the first and the last listing
                      that shows both a replaced file and a new one.
Per query of the workload (60 seeded boxes: a quarter each of one-, two-, three-column ranges and
points; each run once untimed first, so listings and footers are cached as they are for a warm
driver), run with skipping off then on:
  requests        GET + HEAD + LIST requests of the run;
  ideal           the GETs of the same query over exactly the files whose min/max box meets it (a
                  DataFrame of those paths), plus one HEAD per such file (what Spark's reader
                  sends as it opens a file; the DataFrame's listing of its paths is left out):
                  what a perfect min/max skipper reads. The statistics' own reads happen once per table (the sidecar's
                  listing and read, step write_file_stats and the untimed first runs), not per
                  query, when nothing changed;
  seconds         wall time of the run (planning included).
Then, with --small-files (0 skips it), bench_data_skipping's part 2 over a bucket: its tiny parquet
files (a local copy, made once) uploaded to the bucket, an external table over them without any
sidecar: the first query's planning reads every footer from the store, later ones plan from the
footer cache; planning times on and off, and the requests each sent.
Goals (issue 29): requests on / ideal <= 1.02; workload seconds on / off <= 0.4; 0 object copies per
build, rebuild and recluster commit. moto answers from memory on this machine: see
docs/object_stores.md for what the times mean on S3. Not a test: asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

from common import BENCH
from common.datasets import LINEITEM_COLUMNS, generate_lineitem_parquet
from common.dbt import dbt_runner
from common.machine import git_head, machine_facts
from common.scans import run_query
from common.small_files import part_small_files, small_files_dir
from common.workloads import file_boxes, intersecting, make_workload
from spark_clustering_dev.paths import WORK
from spark_clustering_dev.s3 import S3Server, delta, s3a_counters
from spark_clustering_dev.spark import get_spark

BUCKET = "bench-object-store"
SCHEMA = "bench_s3"
REPORTED = ("object_copy_requests", "files_copied_bytes", "object_put_request", "object_list_request",
            "action_http_head_request", "action_http_get_request", "object_delete_objects")


def data_keys(server: S3Server, prefix: str) -> list[str]:
    """The table's data files as a reader's listing sees them: objects below `prefix` whose names
    Spark does not skip (none of its path parts starts with `_` or `.`)."""
    return [k for k in server.keys(BUCKET, prefix)
            if not any(part.startswith(("_", ".")) for part in k[len(prefix):].split("/"))]


def small_files_part(spark, server: S3Server, args) -> dict:
    """bench_data_skipping's part 2 with its files in the bucket (uploaded by 16 threads)."""
    from concurrent.futures import ThreadPoolExecutor

    local = small_files_dir(spark, args)
    prefix = f"small_files_{args.small_files}/"
    client = server.client()
    files = sorted(p for p in local.iterdir() if p.name.startswith("part-"))
    start = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: client.upload_file(str(p), BUCKET, prefix + p.name), files))
    print(f"\nuploaded {len(files)} files to s3a://{BUCKET}/{prefix} in {time.monotonic() - start:.0f} s")

    def requests() -> int:
        """GET + HEAD + LIST requests the bucket's S3A file system sent so far."""
        return reads(s3a_counters(spark, f"s3a://{BUCKET}/"))["requests"]

    return part_small_files(spark, args, location=f"s3a://{BUCKET}/{prefix}", requests=requests,
                            answer_checks=args.small_answer_checks)


def reads(counted: dict) -> dict:
    get, head, listed = (counted.get(k, 0) for k in ("action_http_get_request", "action_http_head_request",
                                                      "object_list_request"))
    return {"get": get, "head": head, "list": listed, "requests": get + head + listed}


def dbt_run(args: list[str], vars: dict | None = None):
    return dbt_runner("object-store")(args, SCHEMA, vars or {})


def counted_step(spark, name: str, action) -> dict:
    before = s3a_counters(spark, f"s3a://{BUCKET}/")
    start = time.monotonic()
    action()
    seconds = time.monotonic() - start
    c = delta(before, s3a_counters(spark, f"s3a://{BUCKET}/"))
    out = {"seconds": round(seconds, 1), **{k: c.get(k, 0) for k in REPORTED}}
    print(f"{name}: {json.dumps(out)}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--small-files", type=int, default=10_000, help="files of the planning part; 0 skips it")
    ap.add_argument("--small-rows", type=int, default=1_000_000)
    ap.add_argument("--small-queries", type=int, default=10)
    ap.add_argument("--small-answer-checks", type=int, default=3,
                    help="queries of the planning part also run on and off (off opens every file)")
    ap.add_argument("--plan-repeat", type=int, default=5)
    ap.add_argument("--json", type=Path, default=BENCH / "object_store.json")
    args = ap.parse_args()

    server = S3Server(BENCH / "s3-server").start()
    try:
        server.create_bucket(BUCKET)
        # the observed workload off: its flush (a HEAD, a GET and a PUT of the table's slot every 2 s
        # while queries arrive, from a background thread) would land in the queries' request counts
        spark = get_spark(WORK / "bench_object_store", app_name="bench_object_store", s3_endpoint=server.endpoint,
                          extra_conf={"spark.sparkclustering.workload.record": "false"})
        spark.sql(f"drop database if exists {SCHEMA} cascade")
        spark.sql(f"create database {SCHEMA} location 's3a://{BUCKET}/{SCHEMA}.db'")
        parquet = generate_lineitem_parquet(args.sf, BENCH / "tpch")
        source = f"parquet.`{parquet}`"
        alias = f"lineitem_hilbert_{args.files}"
        table = f"{SCHEMA}.{alias}"
        model_vars = {"source": source, "skipping_alias": alias, "method": "hilbert",
                      "cluster_by": LINEITEM_COLUMNS, "num_files": args.files}
        result = {"args": vars(args) | {"json": str(args.json)}, "machine": machine_facts(),
                  "git": git_head(), "steps": {}}
        steps = result["steps"]
        steps["build"] = counted_step(spark, "build", lambda: dbt_run(["run", "--select", "skipping_table"], model_vars))
        steps["rebuild"] = counted_step(spark, "rebuild", lambda: dbt_run(["run", "--select", "skipping_table"], model_vars))
        location = next(r[1] for r in spark.sql(f"describe table extended {table}").collect() if r[0] == "Location")
        result["location"] = location
        steps["write_file_stats"] = counted_step(
            spark, "write_file_stats", lambda: spark.sql(f"select * from write_file_stats('{table}', false)").collect())

        spark.conf.set("spark.sql.adaptive.enabled", "false")
        boxes = file_boxes(spark, table)
        rows = int(sum(f["n"] for f in boxes))
        queries = make_workload(spark, table, boxes, args.queries, args.seed, rows)
        print(f"\n{len(queries)} queries: each once untimed (listing, footers), then off and on")
        for q in queries:
            run_query(spark, q["sql"], False)
            run_query(spark, q["sql"], True)
        for q in queries:
            for on in (False, True):
                before = s3a_counters(spark, f"s3a://{BUCKET}/")
                run = run_query(spark, q["sql"], on)
                q["on" if on else "off"] = {"files": run["files"], "seconds": run["seconds"], "answer": run["answer"],
                                            **reads(delta(before, s3a_counters(spark, f"s3a://{BUCKET}/")))}
            ideal = intersecting(boxes, q["box"])
            q["ideal_files"] = len(ideal)
            q["answers_equal"] = q["on"]["answer"] == q["off"]["answer"]
            # the same query over exactly the files a perfect min/max skipper reads: a DataFrame
            # of those paths, listed when it is created, then run (counted) as the others
            q["ideal"] = {"requests": 0, "get": 0, "head": 0, "list": 0}
            if ideal:
                spark.read.schema(spark.table(table).schema).parquet(
                    *[f"s3a://{BUCKET}{f['path']}" for f in ideal]).createOrReplaceTempView("ideal_files")
                ideal_sql = q["sql"].replace(f" from {table} ", " from ideal_files ")
                spark.sql(ideal_sql).collect()  # untimed, as the others' first run
                before = s3a_counters(spark, f"s3a://{BUCKET}/")
                q["ideal_answer_equal"] = [tuple(r) for r in spark.sql(ideal_sql).collect()] == q["off"]["answer"]
                q["ideal"] = reads(delta(before, s3a_counters(spark, f"s3a://{BUCKET}/")))
        files_off = sum(q["off"]["files"] for q in queries)
        for q in queries:
            # its GETs, and the one HEAD per file Spark's reader sends when it opens a file (the
            # on / off runs show HEAD = files read); not the DataFrame's listing of its paths
            q["ideal_requests"] = q["ideal"]["get"] + q["ideal_files"]
        summary = {
            "queries": len(queries),
            "answers_equal": all(q["answers_equal"] for q in queries),
            "files_on": sum(q["on"]["files"] for q in queries), "files_off": files_off,
            "files_ideal": sum(q["ideal_files"] for q in queries),
            "requests_on": sum(q["on"]["requests"] for q in queries),
            "requests_off": sum(q["off"]["requests"] for q in queries),
            "requests_ideal": round(sum(q["ideal_requests"] for q in queries), 1),
            "ideal_answers_equal": all(q.get("ideal_answer_equal", True) for q in queries),
            "lists_on": sum(q["on"]["list"] for q in queries), "lists_off": sum(q["off"]["list"] for q in queries),
            "seconds_on": round(sum(q["on"]["seconds"] for q in queries), 2),
            "seconds_off": round(sum(q["off"]["seconds"] for q in queries), 2),
        }
        summary["requests_on_over_ideal"] = round(summary["requests_on"] / summary["requests_ideal"], 3)
        summary["requests_on_over_off"] = round(summary["requests_on"] / summary["requests_off"], 3)
        summary["seconds_on_over_off"] = round(summary["seconds_on"] / summary["seconds_off"], 3)
        result["workload"] = summary

        steps["insert 2 %"] = counted_step(
            spark, "insert 2 %", lambda: spark.sql(f"insert into {table} select * from {source} where l_orderkey % 50 = 0"))
        prefix = location.split(f"s3a://{BUCKET}/", 1)[1] + "/"
        before_files = set(data_keys(server, prefix))
        listings: list[tuple[float, set[str]]] = []
        stop = threading.Event()

        def poll():
            while not stop.is_set():
                listings.append((time.monotonic(), set(data_keys(server, prefix))))
                time.sleep(0.02)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        try:
            steps["recluster"] = counted_step(spark, "recluster", lambda: dbt_run(
                ["run-operation", "spark_clustering.recluster", "--args", json.dumps({"relation": table})]))
        finally:
            stop.set()
            poller.join()
        after_files = set(data_keys(server, prefix))
        replaced, added = before_files - after_files, after_files - before_files
        both = [t for t, keys in listings if keys & replaced and keys & added]
        result["commit_window"] = {
            "listings": len(listings), "listings_with_both": len(both),
            "seconds": round(both[-1] - both[0], 3) if both else 0.0,
            "files_replaced": len(replaced), "files_added": len(added),
            "rows_after": spark.table(table).count(),
        }
        whole = spark.read.parquet(str(parquet))
        result["commit_window"]["rows_exact"] = (
            result["commit_window"]["rows_after"] == whole.count() + whole.where("l_orderkey % 50 = 0").count())
        print("commit window: " + json.dumps(result["commit_window"]))
        result["queries"] = [{k: v for k, v in q.items() if k not in ("box",)} for q in queries]

        print("\n| step | seconds | object copies | bytes copied | PUT | LIST | HEAD | GET | objects deleted |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, s in steps.items():
            print(f"| {name} | {s['seconds']} | {s['object_copy_requests']} | {s['files_copied_bytes']:,} | "
                  f"{s['object_put_request']} | {s['object_list_request']} | {s['action_http_head_request']} | "
                  f"{s['action_http_get_request']} | {s['object_delete_objects']} |")
        print("\nworkload: " + json.dumps(summary))
        per_kind = {}
        for q in queries:
            k = per_kind.setdefault(q["kind"], {"n": 0, "on": 0, "off": 0, "ideal": 0.0, "s_on": 0.0, "s_off": 0.0})
            k["n"] += 1
            k["on"] += q["on"]["requests"]
            k["off"] += q["off"]["requests"]
            k["ideal"] += q["ideal_requests"]
            k["s_on"] += q["on"]["seconds"]
            k["s_off"] += q["off"]["seconds"]
        print("\n| queries | n | requests on | off | ideal | on / ideal | seconds on / off |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for kind, k in per_kind.items():
            print(f"| {kind} | {k['n']} | {k['on']} | {k['off']} | {k['ideal']:.0f} | {k['on'] / k['ideal']:.3f} | "
                  f"{k['s_on'] / k['s_off']:.3f} |")
        if args.small_files:
            result["small_files"] = small_files_part(spark, server, args)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1, default=str))
        print(f"\nwrote {args.json}")
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
