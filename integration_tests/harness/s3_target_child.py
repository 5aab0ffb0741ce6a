"""The example project on dbt's `s3` target (integration_tests/profiles.yml), in a process of its own:
dbt-spark creates the session from the target's parameters (the jar and its extension, S3A's jars,
the warehouse in the bucket; nothing else starts one here), builds the source and a clustered model
with their tests, loads the incremental model and appends its last tenth (its recluster() post-hook
rewrites in the bucket), then prints what the parent checks as one JSON line after `s3_target: `.

    python -m harness.s3_target_child '<json plan>'
plan: {"schema": s, "rows": n, "file_rows": m}; the S3 endpoint, bucket and credentials come from
the environment the parent sets (SPARK_CLUSTERING_S3_ENDPOINT, SPARK_CLUSTERING_S3_BUCKET, ...).
"""
from __future__ import annotations

import json
import sys

COLUMNS = ["event_id", "mission_id", "ts", "payload_id", "sensor_kind", "region", "quality_flag", "reading_value"]


def main(plan: dict) -> None:
    from pyspark.sql import SparkSession

    from spark_clustering_dev.dbt import run_dbt
    from spark_clustering_dev.layout import fingerprint

    schema = plan["schema"]
    vars_ = {"telemetry_rows": plan["rows"], "telemetry_file_rows": plan["file_rows"]}
    run_dbt(["build", "--select", "telemetry_events", "telemetry_hilbert", "telemetry_incremental"],
            target="s3", schema=schema, vars=vars_)
    run_dbt(["run", "--select", "telemetry_incremental"], target="s3", schema=schema,
            vars={**vars_, "telemetry_increment": 9, "telemetry_recluster": {"max_average_depth": 1.5}})
    spark = SparkSession.builder.getOrCreate()  # the session dbt-spark created (in its own thread)
    conf = spark.sparkContext.getConf()
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    out = {"conf": {k: conf.get(k, "") for k in ("spark.sql.warehouse.dir", "spark.sql.extensions")},
           "hadoop": {k: hadoop.get(k) for k in ("fs.s3a.committer.abort.pending.uploads",)}, "tables": {}}
    for name in ("telemetry_events", "telemetry_hilbert", "telemetry_incremental"):
        table = f"{schema}.{name}"
        info = {r[0]: r[1] for r in spark.sql(f"describe table extended {table}").collect()}
        out["tables"][name] = {
            "fingerprint": fingerprint(spark, table, COLUMNS),
            "location": info.get("Location", ""),
            "files": sorted(r[0] for r in spark.sql(f"select distinct _metadata.file_path from {table}").collect()),
        }
    print("s3_target: " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
