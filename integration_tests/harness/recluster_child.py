"""A process of its own that runs dbt on an embedded Spark session over a given warehouse, so a test
can `kill -9` it in the middle of a recluster (harness.recluster_child is run by
tests/test_recluster_kill.py).

    python -m harness.recluster_child '<json plan>'

plan: {"work": dir, "schema": s, "schema_location": uri (optional: the database's location, e.g. in
a bucket; the child reaches S3 through SPARK_CLUSTERING_S3_ENDPOINT), "with_jar": true, "table_format": "hive" (the session's, as
spark_clustering_dev.spark.TABLE_FORMATS), "conf": {...} (optional: more Spark confs), "steps": [step, ...]} with each step one of
    {"dbt": [args...], "vars": {...}}           run dbt in-process (the killed step pauses inside)
    {"dbt": [...], "vars": {...}, "expect_failure": true}
        run dbt expecting it to fail; print `recluster_child_error: <json list of dbt's messages>`
    {"sql": "..."}                               run a statement
    {"tables": true}                             print `recluster_child_tables: <json list of the schema's tables>`
    {"say": text}                                print `recluster_child_say: <text>` (a marker the test waits for)
    {"fingerprints": [table, ...]}               print `recluster_child_fingerprints: <json list>` (rows, sum and
                                                 xor of row hashes, spark_clustering_dev.layout.fingerprint)
    {"check": {"alias": a, "batches": [[start, end], ...]}}
        print `recluster_child: {"rows_match": bool, "actual": [...], "expected": [...],
        "leftovers": [...], "files": n}` for the model's table.
Output is unbuffered so the test sees `spark_clustering: paused at <step>` as soon as it is printed.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

from spark_clustering_dev.dbt import run_dbt
from spark_clustering_dev.layout import fingerprint
from spark_clustering_dev.recluster_case import actual, expected, leftovers
from spark_clustering_dev.spark import get_spark


# The steps of a recluster a test can hold a child at: the macro's (its test hook var), then the jar's
# (the Spark conf spark.sparkclustering.test.pauseAt, inside table_rewrite_commit).
MACRO_STEPS = {"after_plan", "after_staging_write", "after_validate"}


def kill_seed() -> int:
    """The seed of a kill test's random draw (steps, moments): SPARK_CLUSTERING_KILL_SEED repeats a
    run's draw, printed by the test; otherwise a new one each run."""
    return int(os.environ.get("SPARK_CLUSTERING_KILL_SEED", time.time_ns() % 100_000))


def pause_at(step: str) -> tuple[list[dict], dict, str]:
    """Plan entries + dbt vars + the pause marker that hold a child's recluster at `step`."""
    if step in MACRO_STEPS:
        return [], {"spark_clustering_test_hooks": {f"recluster.{step}": {"pause": 600}}}, f"recluster.{step}"
    return [{"sql": f"set spark.sparkclustering.test.pauseAt={step}"}], {}, step


def source_tables(schema: str, tables: list[tuple[str, int, int]]) -> list[dict]:
    """Plan entries that create `schema` and, per (name, start, end), a parquet table of ids start..end
    with a column `a` spread over 0..99999 by their hash (the format tests' `cluster_case` source)."""
    return [{"sql": f"create database if not exists {schema}"}] + [
        {"sql": f"""create table {schema}.{name} using parquet as select id, cast(abs(xxhash64(id, 1)) % 100000 as int) as a
                    from range({lo}, {hi})"""} for name, lo, hi in tables]


def fingerprints_printed(output: str) -> list[list[int]]:
    """What a child's `fingerprints` steps printed, in order."""
    found = [line for line in output.splitlines() if line.startswith("recluster_child_fingerprints: ")]
    assert found, output[-4000:]
    return [json.loads(line.split(": ", 1)[1]) for line in found]


def run_child(plan: dict, kill_at: str | None, env: dict | None = None, timeout: float = 900) -> tuple[int, str]:
    """The parent's side: run this module with `plan` in a process group of its own; with `kill_at`,
    SIGKILL the group (Python + its Spark JVM) once the child reports pausing there. (exit code, output).
    `timeout` bounds a hang, not the work: a child's first build took 104 s on a loaded 2-core machine
    and 300 s ran out before a later step (2026-12-02)."""
    from spark_clustering_dev.paths import INTEGRATION_TESTS

    env = {**os.environ, "PYTHONUNBUFFERED": "1", "SPARK_CLUSTERING_TARGET": "session", **(env or {})}
    proc = subprocess.Popen([sys.executable, "-m", "harness.recluster_child", json.dumps(plan)],
                            cwd=INTEGRATION_TESTS, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    lines: list[str] = []
    paused = threading.Event()

    def pump():
        for line in proc.stdout:
            lines.append(line)
            if kill_at and f"spark_clustering: paused at {kill_at}" in line:
                paused.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    if kill_at:
        deadline = time.monotonic() + timeout
        while not paused.is_set() and proc.poll() is None and time.monotonic() < deadline:
            paused.wait(0.5)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if not paused.is_set():
            proc.wait()
            raise AssertionError(f"child never paused at {kill_at}:\n" + "".join(lines[-60:]))
    code = proc.wait(timeout=timeout)
    reader.join(timeout=10)
    return code, "".join(lines)


def main(plan: dict) -> None:
    spark = get_spark(plan["work"], app_name="spark_clustering_recluster_child", with_jar=plan.get("with_jar", True),
                      table_format=plan.get("table_format", "hive"), extra_conf=plan.get("conf"))
    schema = plan["schema"]
    location = f" location '{plan['schema_location']}'" if plan.get("schema_location") else ""
    spark.sql(f"create database if not exists {schema}{location}")
    for step in plan["steps"]:
        if "dbt" in step and step.get("expect_failure"):
            run = run_dbt(step["dbt"], schema=schema, vars=step.get("vars"), expect_success=False)
            print("recluster_child_error: " + json.dumps(run.messages), flush=True)
        elif "dbt" in step:
            run_dbt(step["dbt"], schema=schema, vars=step.get("vars"))
        elif "sql" in step:
            spark.sql(step["sql"])
        elif "say" in step:
            print("recluster_child_say: " + step["say"], flush=True)
        elif "fingerprints" in step:
            print("recluster_child_fingerprints: " + json.dumps([fingerprint(spark, t) for t in step["fingerprints"]]),
                  flush=True)
        elif "tables" in step:
            names = sorted(r.tableName for r in spark.sql(f"show tables in {schema}").collect())
            print("recluster_child_tables: " + json.dumps(names), flush=True)
        else:
            check = step["check"]
            table = f"{schema}.{check['alias']}"
            got, want = actual(spark, table), expected(spark, check["batches"])
            print("recluster_child: " + json.dumps({
                "rows_match": got == want, "actual": got, "expected": want,
                "leftovers": leftovers(spark, schema, check["alias"]),
                "files": spark.sql(f"select count(distinct _metadata.file_path) from {table}").first()[0],
            }), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
