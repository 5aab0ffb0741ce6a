"""One of the writers racing for a table's lease on S3 (tests/test_object_store.py): a process of its
own with its own Spark and Derby metastore, whose database lies in the shared bucket, so both
writers' leases are the same objects `<database location>/_sc_leases/<table>/lease.<n>`.

    python -m harness.s3_lease_child '<json plan>'

plan: {"work": dir, "name": writer name, "database": db, "location": "s3a://...", "table": t,
"rounds": n, "seed": s, "ready": file, "go": file, "out": file}. The child creates `ready` once its
session is up, waits for `go`, then per round: a random pause, take the lease (waiting), note the
time, a random pause while holding it, check it is still held, note the time, give it up. It appends
`[taken, checked]` (time.time() seconds) per round to `out`: two holders at once would show as
overlapping intervals. The S3 endpoint comes from SPARK_CLUSTERING_S3_ENDPOINT.
"""
from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from spark_clustering_dev.spark import get_spark


def main(plan: dict) -> None:
    spark = get_spark(plan["work"], app_name=f"s3_lease_child_{plan['name']}")
    spark.sql(f"create database if not exists {plan['database']} location '{plan['location']}'")
    table = f"{plan['database']}.{plan['table']}"
    Path(plan["ready"]).touch()
    while not Path(plan["go"]).exists():
        time.sleep(0.02)
    rng = random.Random(plan["seed"])
    with open(plan["out"], "a") as out:
        for i in range(plan["rounds"]):
            time.sleep(rng.uniform(0, 0.03))
            token = spark.sql(f"select lease_token from table_lease_acquire('{table}', 'lease race {plan['name']} {i}', "
                              "'120', 'name')").first()[0]
            taken = time.time()
            time.sleep(rng.uniform(0, 0.02))
            spark.sql(f"select * from table_lease_check('{token}', 'lease race')").collect()
            checked = time.time()
            spark.sql(f"select * from table_lease_release('{token}', 'false')").collect()
            out.write(json.dumps([taken, checked]) + "\n")
            out.flush()
    print(f"s3_lease_child {plan['name']}: {plan['rounds']} rounds", flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
