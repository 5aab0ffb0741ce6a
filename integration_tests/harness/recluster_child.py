"""A process of its own that runs dbt on an embedded Spark session over a given warehouse, so a test
can `kill -9` it in the middle of a recluster (harness.recluster_child is run by
tests/test_recluster_kill.py).

    python -m harness.recluster_child '<json plan>'

plan: {"work": dir, "schema": s, "steps": [step, ...]} with each step one of
    {"dbt": [args...], "vars": {...}}           run dbt in-process (the killed step pauses inside)
    {"check": {"alias": a, "batches": [[start, end], ...]}}
        print `recluster_child: {"rows_match": bool, "actual": [...], "expected": [...],
        "leftovers": [...], "files": n}` for the model's table.
Output is unbuffered so the test sees `spark_clustering: paused at <step>` as soon as it is printed.
"""
from __future__ import annotations

import json
import sys

from harness.dbt import run_dbt
from harness.recluster_case import actual, data_files, expected, leftovers
from harness.spark import get_spark


def main(plan: dict) -> None:
    spark = get_spark(plan["work"], app_name="spark_clustering_recluster_child")
    schema = plan["schema"]
    spark.sql(f"create database if not exists {schema}")
    for step in plan["steps"]:
        if "dbt" in step:
            run_dbt(step["dbt"], schema=schema, vars=step.get("vars"))
        else:
            check = step["check"]
            table = f"{schema}.{check['alias']}"
            got, want = actual(spark, table), expected(spark, check["batches"])
            print("recluster_child: " + json.dumps({
                "rows_match": got == want, "actual": got, "expected": want,
                "leftovers": leftovers(spark, schema, check["alias"]), "files": len(data_files(spark, table)),
            }), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
