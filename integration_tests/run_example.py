"""The README's main job: build the example project on the embedded Spark session and print its
clustering report (per model: method, rows, files, per-column average depth, workload ratio)."""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from harness.picture import plot_file_boxes
from harness.report import clustering_report, format_report
from spark_clustering_dev.dbt import run_dbt
from spark_clustering_dev.paths import BUILD
from spark_clustering_dev.spark import get_spark

EXAMPLE_SELECT = ["path:models/example"]
SCHEMA = "spark_clustering_example"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000, help="telemetry rows to generate")
    parser.add_argument("--file-rows", type=int, default=12_500, help="target rows per clustered file")
    args = parser.parse_args(argv)

    started = time.monotonic()
    # The driver JVM compiles with C1 only: for this job of a minute or two, C2's compiler threads
    # cost more CPU than they gain back (spark_clustering_dev.spark.jvm_options says the same of the
    # tests' short-lived JVMs). The report is the same.
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(filter(None, [os.environ.get("SPARK_SUBMIT_OPTS"),
                                                               "-XX:TieredStopAtLevel=1"]))
    spark = get_spark(app_name="spark_clustering_example")
    spark.sparkContext.setLogLevel("ERROR")
    # The session's first metastore call starts Hive's client (class loading, the Derby metastore):
    # made in a thread of its own while dbt parses the project in this one (py4j waits without the
    # GIL), instead of by dbt's first query after the parse.
    metastore = threading.Thread(target=lambda: spark.sql("show databases").collect(), daemon=True)
    metastore.start()
    example_vars = {"telemetry_rows": args.rows, "telemetry_file_rows": args.file_rows}
    # --full-refresh: a second run of the job rebuilds the incremental model instead of appending
    # to the first run's table, so it prints the same report (the audit keeps its history).
    run = run_dbt(["build", "--full-refresh", "--select", *EXAMPLE_SELECT], schema=SCHEMA, vars=example_vars)
    metastore.join()
    # The incremental model's next run: the last tenth of the events arrives, the recluster()
    # post-hook measures and decides what to rewrite.
    increment = run_dbt(["run", "--select", "telemetry_incremental"], schema=SCHEMA,
                        vars={**example_vars, "telemetry_increment": 9})
    # The audit model measures what was just built; it runs after the models, in its own invocation.
    audit = run_dbt(["run", "--select", "spark_clustering_audit"], schema=SCHEMA)
    print("\nBuilt:")
    increment_result = increment.node_results()["telemetry_incremental"]
    for name, result in sorted({**run.node_results(), **audit.node_results()}.items()):
        print(f"  {result.node.resource_type:<6} {name:<45} {str(result.status):<8} {result.execution_time:6.1f}s")
    print(f"  {'model':<6} {'telemetry_incremental (+10 % rows, recluster post-hook)':<45} "
          f"{str(increment_result.status):<8} {increment_result.execution_time:6.1f}s")
    print()
    print(format_report(clustering_report(spark, SCHEMA)))
    picture = BUILD / "example_file_boxes.png"
    plot_file_boxes(spark, [f"{SCHEMA}.telemetry_{m}" for m in ("hilbert", "zorder", "insertion_order")],
                    x="ts", y="mission_id", out=picture)
    print(f"\nper-file boxes (ts x mission_id) drawn to {picture.relative_to(BUILD.parent)}")
    print(f"\nexample job finished in {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
