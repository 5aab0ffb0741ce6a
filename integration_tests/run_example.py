"""The README's main job: build the example project on the embedded Spark session and print its
clustering report (per model: method, rows, files, per-column average depth, workload ratio). With
--remote sc://host:port the same through a Spark Connect server (docs/deployment.md, section 5)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import warnings
from pathlib import Path

from harness.picture import plot_file_boxes
from harness.report import clustering_report, format_report
from spark_clustering_dev.dbt import run_dbt
from spark_clustering_dev.paths import BUILD
from spark_clustering_dev.spark import get_spark

EXAMPLE_SELECT = ["path:models/example"]
SCHEMA = "spark_clustering_example"


def build_example(rows: int, file_rows: int, target: str = "session", env: dict[str, str] | None = None,
                  before_dbt=None) -> list[str]:
    """Build the example on `target` as the job does: the models and their tests, the incremental
    model's next run (the last tenth of the events arrives, the recluster() post-hook measures and
    decides what to rewrite), then the audit model, which measures what was just built. Returns the
    lines saying what ran. `before_dbt`: started before dbt parses the project, joined after its first
    invocation."""
    example_vars = {"telemetry_rows": rows, "telemetry_file_rows": file_rows}
    common = {"schema": SCHEMA, "target": target, "env": env}
    # --full-refresh: a second run of the job rebuilds the incremental model instead of appending
    # to the first run's table, so it prints the same report (the audit keeps its history).
    run = run_dbt(["build", "--full-refresh", "--select", *EXAMPLE_SELECT], vars=example_vars, **common)
    if before_dbt is not None:
        before_dbt.join()
    increment = run_dbt(["run", "--select", "telemetry_incremental"], vars={**example_vars, "telemetry_increment": 9},
                        **common)
    audit = run_dbt(["run", "--select", "spark_clustering_audit"], **common)
    increment_result = increment.node_results()["telemetry_incremental"]
    lines = [f"  {result.node.resource_type:<6} {name:<45} {str(result.status):<8} {result.execution_time:6.1f}s"
             for name, result in sorted({**run.node_results(), **audit.node_results()}.items())]
    return lines + [f"  {'model':<6} {'telemetry_incremental (+10 % rows, recluster post-hook)':<45} "
                    f"{str(increment_result.status):<8} {increment_result.execution_time:6.1f}s"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000, help="telemetry rows to generate")
    parser.add_argument("--file-rows", type=int, default=12_500, help="target rows per clustered file")
    parser.add_argument("--remote", metavar="sc://HOST:PORT", help="build through a Spark Connect server (the "
                        "project's `connect` target; the server set up as docs/deployment.md section 5 says) "
                        "instead of the embedded session")
    parser.add_argument("--report-json", type=Path, help="also write the report, and each model's rows, as JSON")
    parser.add_argument("--picture", type=Path, default=BUILD / "example_file_boxes.png",
                        help="where to draw the files' boxes (default build/example_file_boxes.png)")
    args = parser.parse_args(argv)

    started = time.monotonic()
    metastore = None
    if args.remote:
        from pyspark.sql import SparkSession

        # dbt-spark's session method asks the session it gets for Hive support; a Connect server
        # whose catalog is not Hive's refuses that static setting with a warning per connection
        warnings.filterwarnings("ignore", message="Failed to set spark.sql.catalogImplementation")
        os.environ["SPARK_REMOTE"] = args.remote
        spark = SparkSession.builder.remote(args.remote).getOrCreate()
        target = "connect"
    else:
        # The driver JVM compiles with C1 only: for this job of a minute or two, C2's compiler
        # threads cost more CPU than they gain back (spark_clustering_dev.spark.jvm_options says the
        # same of the tests' short-lived JVMs). The report is the same.
        os.environ["SPARK_SUBMIT_OPTS"] = " ".join(filter(None, [os.environ.get("SPARK_SUBMIT_OPTS"),
                                                                   "-XX:TieredStopAtLevel=1"]))
        spark = get_spark(app_name="spark_clustering_example")
        spark.sparkContext.setLogLevel("ERROR")
        # The session's first metastore call starts Hive's client (class loading, the Derby
        # metastore): made in a thread of its own while dbt parses the project in this one (py4j
        # waits without the GIL), instead of by dbt's first query after the parse.
        metastore = threading.Thread(target=lambda: spark.sql("show databases").collect(), daemon=True)
        metastore.start()
        target = "session"
    built = build_example(args.rows, args.file_rows, target=target, before_dbt=metastore)
    print("\nBuilt:")
    print("\n".join(built))
    print()
    report = clustering_report(spark, SCHEMA)
    print(format_report(report))
    if args.report_json:
        rows = {r["model"]: spark.sql(f"select count(*) from {SCHEMA}.{r['model']}").collect()[0][0] for r in report}
        args.report_json.write_text(json.dumps({"report": report, "rows": rows}, indent=1, default=str))
    plot_file_boxes(spark, [f"{SCHEMA}.telemetry_{m}" for m in ("hilbert", "zorder", "insertion_order")],
                    x="ts", y="mission_id", out=args.picture)
    print(f"\nper-file boxes (ts x mission_id) drawn to {args.picture}")
    print(f"\nexample job finished in {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
