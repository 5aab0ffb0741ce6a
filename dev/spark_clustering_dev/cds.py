"""The class data archive of the test JVMs (JDK AppCDS): the classes a Spark JVM of this line loads to
start a session and run a query, archived once, so each of the tests' JVMs maps them instead of
loading, parsing and verifying them again (spark_clustering_dev.spark.jvm_options passes it to every
JVM the tests start). A JVM whose class path or JDK differs from the archive's ignores it.

    python -m spark_clustering_dev.cds      make it (scripts/test, beside the lint), unless it exists

A small session of plain tables, started and used in a new process, took 7.7-8.9 s with the archive
make_archive makes and 12.4-15.9 s without (3 runs each, alternating; 2026-11-28, the 2-core machine,
another job beside it)."""
from __future__ import annotations

import os
import shutil
import sys
from importlib.metadata import version
from pathlib import Path

from spark_clustering_dev.paths import BUILD, WORK


def archive_path() -> Path:
    """Per pyspark release (its jars are the JVM's class path); the JDK is checked by the JVM itself."""
    return BUILD / "cds" / f"spark-{version('pyspark')}.jsa"


def make_archive() -> Path:
    """Runs a session of plain tables in a JVM that archives the classes it loaded when it exits,
    then moves the archive into place (a JVM never sees half of one)."""
    from pyspark import SparkContext

    from spark_clustering_dev.spark import get_spark

    final = archive_path()
    if final.exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = final.with_suffix(f".{os.getpid()}.partial")
    work = WORK / f"cds-{os.getpid()}"
    os.environ["SPARK_CLUSTERING_CDS_DUMP"] = str(partial)
    try:
        spark = get_spark(work, app_name="spark_clustering_cds")
        spark.sql("create database if not exists cds").collect()
        spark.sql("create table cds.t using parquet as select id, id % 7 as b from range(1000)")
        spark.sql("select b, count(*) from cds.t group by b").collect()
        spark.stop()
        gateway = SparkContext._gateway
        gateway.shutdown()
        gateway.proc.stdin.close()  # the JVM exits when its stdin closes, and writes the archive then
        gateway.proc.wait(timeout=300)
        if partial.exists():
            os.replace(partial, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        partial.unlink(missing_ok=True)
    return final


if __name__ == "__main__":
    os.environ.setdefault("SPARK_CLUSTERING_TEST_JVM", "1")
    made = make_archive()
    print(f"cds: {made} ({made.stat().st_size:,} bytes)" if made.exists() else "cds: no archive made", file=sys.stderr)
