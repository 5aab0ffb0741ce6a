"""The embedded SparkSession used by the example job, the tests and the benchmarks.

dbt-spark's `session` method calls `SparkSession.builder.getOrCreate()`, so the session built here
(with the UDF jar, the extension and an isolated warehouse + Derby metastore) is the one dbt uses.
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from spark_clustering_dev.paths import EXTENSION_CLASS, JAR, WORK


def session_conf(work_dir: Path, with_jar: bool = True) -> dict[str, str]:
    """Spark confs for an isolated local warehouse + metastore under `work_dir`."""
    work_dir = Path(work_dir).resolve()
    conf = {
        "spark.master": os.environ.get("SPARK_CLUSTERING_MASTER", "local[2]"),
        "spark.sql.warehouse.dir": str(work_dir / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={work_dir / 'metastore_db'};create=true"
        ),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={work_dir}",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # dbt-spark forces this too; set it up front so every statement sees one mode.
        "spark.sql.ansi.enabled": "false",
        # Python UDF workers run this interpreter (the venv's numpy + pyarrow), not the system one.
        "spark.pyspark.python": sys.executable,
    }
    if with_jar:
        if not JAR.exists():
            raise FileNotFoundError(f"{JAR} is missing: run scripts/setup (it builds the UDF jar)")
        conf["spark.jars"] = str(JAR)
        conf["spark.sql.extensions"] = EXTENSION_CLASS
    return conf


def get_spark(work_dir: Path | None = None, app_name: str = "spark_clustering", with_jar: bool = True,
              extra_conf: dict[str, str] | None = None):
    """Start (or return the running) embedded SparkSession with Hive support."""
    from pyspark.sql import SparkSession

    work_dir = Path(work_dir or WORK / "session")
    work_dir.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.appName(app_name).enableHiveSupport()
    for key, value in {**session_conf(work_dir, with_jar), **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@contextlib.contextmanager
def confs(spark, values: dict[str, str]):
    """Session confs `values` set for the `with` block; then each is put back as it was (unset when
    it was not set)."""
    saved = {key: spark.conf.get(key, None) for key in values}
    try:
        for key, value in values.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
