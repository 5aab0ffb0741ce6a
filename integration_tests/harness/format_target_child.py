"""A child process for test_format_targets.py: dbt creates the Spark session itself from the
target docs/table_formats.md documents (the profiles.yml in `profiles_dir`), as a user's `dbt` run
does, then builds the example project on that format, appends, builds an `auto` layout and the
audit, and prints what the test checks as one JSON line `format_target: {...}`.
Run from an empty working directory: the metastore and warehouse are Spark's defaults there.
With the mode `no-jar` (a target without the package's jar and extension), the example's models
but the incremental one are built and tested with recluster() switched off; then the incremental
model's run, whose post-hook needs the extension, is expected to fail, and its message is reported.
With the mode `curves` (a standalone cluster's test, where the other models add minutes and no
check), only the source, the Hilbert and Z-order models and the incremental one are built and
tested, then appended to and reclustered: no `auto` layout, no audit."""
from __future__ import annotations

import json
import sys

from dbt.cli.main import dbtRunner

from spark_clustering_dev.paths import INTEGRATION_TESTS

EXAMPLE_VARS = {"telemetry_rows": 48_000, "telemetry_file_rows": 3_000}
CLUSTER_BY = ["mission_id", "ts", "payload_id"]
WORKLOAD = [{"mission_id": [10, 12], "ts": ["2025-03-01 00:00:00", "2025-03-20 00:00:00"]},
            {"payload_id": ["payload-01000", "payload-01200"], "mission_id": [0, 31]}]
TABLES = ["telemetry_events", "telemetry_hilbert", "telemetry_zorder", "telemetry_linear", "telemetry_by_region",
          "telemetry_insertion_order", "telemetry_incremental", "telemetry_auto"]
CURVE_TABLES = ["telemetry_events", "telemetry_hilbert", "telemetry_zorder", "telemetry_incremental"]


def file_boxes(spark, table: str, table_format: str = "parquet") -> list[list[str]]:
    """Each file's rows and box on the example's clustering columns, read from its rows, sorted."""
    file_column = "_file" if table_format == "iceberg" else "_metadata.file_path"  # Iceberg's own metadata column
    return sorted([str(v) for v in r] for r in spark.sql(
        "select count(*), min(mission_id), max(mission_id), cast(min(ts) as string), cast(max(ts) as string), "
        f"min(payload_id), max(payload_id) from {table} group by {file_column}").collect())


def main(table_format: str, profiles_dir: str, target_path: str, mode: str = "jar", increment_recluster: str = "{}") -> int:
    """`increment_recluster`: the JSON of the `recluster` setting of the incremental model's second
    run (the var telemetry_recluster; default the package's gate)."""
    warnings: list[str] = []

    def collect(event) -> None:
        if event.info.level == "warn":
            warnings.append(f"{event.info.name}: {event.info.msg}")

    common = ["--project-dir", str(INTEGRATION_TESTS), "--profiles-dir", profiles_dir, "--target", table_format,
              "--target-path", target_path]

    def dbt(args: list[str], vars_: dict, expect_failure: bool = False) -> list[str]:
        res = dbtRunner(callbacks=[collect]).invoke([*args, *common, "--vars", json.dumps(vars_)])
        if expect_failure:
            if res.success:
                print(f"format_target_failed: dbt {' '.join(args)} succeeded", flush=True)
                sys.exit(1)
            return [str(r.message) for r in (getattr(res.result, "results", None) or [])
                    if str(r.status).lower() in {"error", "fail"}]
        if not res.success:
            failed = [f"{r.node.name}: {r.message}" for r in (getattr(res.result, "results", None) or [])
                      if str(r.status).lower() in {"error", "fail"}]
            print(f"format_target_failed: dbt {' '.join(args)}: {res.exception} {failed}", flush=True)
            sys.exit(1)

    example = {**EXAMPLE_VARS, "example_file_format": table_format}
    out = {}
    if mode == "no-jar":
        # the incremental model is clustered by its post-hook only: without it, its depth test would fail
        dbt(["build", "--full-refresh", "--select", "path:models/example", "--exclude", "telemetry_incremental"], example)
        dbt(["run", "--full-refresh", "--select", "telemetry_incremental"], {**example, "spark_clustering_recluster": False})
        out["recluster_errors"] = dbt(["run", "--select", "telemetry_incremental"], {**example, "telemetry_increment": 9},
                                      expect_failure=True)
    else:
        dbt(["build", "--full-refresh", "--select", *(CURVE_TABLES if mode == "curves" else ["path:models/example"])], example)
        dbt(["run", "--select", "telemetry_incremental"], {**example, "telemetry_increment": 9,
                                                           "telemetry_recluster": json.loads(increment_recluster)})
    if mode != "curves":
        dbt(["run", "--select", "cluster_case"], {
            "case_source": "analytics.telemetry_events", "case_alias": "telemetry_auto", "case_format": table_format,
            "case_method": "auto", "case_cluster_by": CLUSTER_BY, "case_file_rows": EXAMPLE_VARS["telemetry_file_rows"],
            "case_workload": WORKLOAD})
        dbt(["run", "--select", "spark_clustering_audit"], example)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()  # the one dbt created from the target
    out.update({"warnings": warnings, "conf": {k: spark.conf.get(k, None) for k in (
        "spark.sql.extensions", "spark.sql.catalog.spark_catalog", "spark.sql.warehouse.dir")},
        "native_functions": [r[0] for r in spark.sql("show functions like 'hilbert_key'").collect()]})
    for table in CURVE_TABLES if mode == "curves" else TABLES:
        detail = {r[0]: r[1] for r in spark.sql(f"describe table extended analytics.{table}").collect()}
        props = {r[0]: r[1] for r in spark.sql(f"show tblproperties analytics.{table}").collect()}
        out[table] = {"provider": detail.get("Provider"), "rows": spark.table(f"analytics.{table}").count(),
                      "properties": {k: v for k, v in props.items() if k.startswith("spark_clustering.")}}
    if mode != "curves":
        out["audit_rows"] = spark.sql("select count(*) from analytics.spark_clustering_audit").first()[0]
    if mode != "no-jar":
        # each file's rows and box on the clustering columns, read from its rows
        out["boxes"] = {table: file_boxes(spark, f"analytics.{table}", table_format) for table in ("telemetry_hilbert", "telemetry_zorder")}
        # the incremental model's commits, oldest first (its build, recluster()'s rewrites, the append)
        out["incremental_operations"] = (
            [r.operation for r in spark.sql("describe history analytics.telemetry_incremental").collect()][::-1]
            if table_format == "delta" else
            [r.operation for r in spark.sql("select operation from spark_catalog.analytics.telemetry_incremental.snapshots "
                                            "order by committed_at").collect()])
    print("format_target: " + json.dumps(out, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
