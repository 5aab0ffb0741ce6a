"""The embedded SparkSession used by the example job, the tests and the benchmarks.

dbt-spark's `session` method calls `SparkSession.builder.getOrCreate()`, so the session built here
(with the UDF jar, the extension and an isolated warehouse + Derby metastore) is the one dbt uses.
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from spark_clustering_dev.lines import compile_jars, default_line
from spark_clustering_dev.paths import EXTENSION_CLASS, FORMAT_JARS, JAR, SPARK_LINE, WORK

# The table formats a session is set up for: `hive` (plain parquet/orc tables only), `delta` or
# `iceberg`. Each of Delta and Iceberg wants the session catalog (`spark_catalog`) for itself, so a
# session serves one of them (and plain tables, which both catalogs hand to Spark's own).
TABLE_FORMATS = ("hive", "delta", "iceberg")

# The tests that repeat a whole set-up per format (a documented target building the example, a
# Thrift server of the format, a rebuild and a recluster killed at random, another Spark line's
# build of the format) run for the formats SPARK_CLUSTERING_TEST_FORMATS names: both by default,
# one per run under scripts/test (drawn at random and printed), for CI's time. Each format's own
# suite (test_delta_tables.py, test_iceberg_tables.py) runs on every run.
TEST_FORMATS_ENV = "SPARK_CLUSTERING_TEST_FORMATS"


def formats_this_run() -> list[str]:
    """Delta and/or Iceberg, as SPARK_CLUSTERING_TEST_FORMATS names them (default: both)."""
    named = [f.strip() for f in (os.environ.get(TEST_FORMATS_ENV) or "delta,iceberg").split(",") if f.strip()]
    unknown = sorted(set(named) - {"delta", "iceberg"})
    if unknown or not named:
        raise ValueError(f"{TEST_FORMATS_ENV}={os.environ.get(TEST_FORMATS_ENV)!r}: name delta, iceberg or both (comma-separated)")
    return named

# Set by the tests (integration_tests/tests/conftest.py; their child processes inherit it), never by
# the benchmarks, which run the JVM as users do. Under the tests:
# - the short-lived JVMs (the child processes' sessions, a cluster's daemons and executors) compile
#   with C1 only and collect with the serial GC: C2's compiler threads and G1's concurrent work cost
#   more CPU than such a JVM gains back, on cores shared with the other test worker (two recluster
#   children side by side: 36 s instead of 59 s with C1; the seven kill points of
#   test_recluster_kill: 177 CPU-s instead of 196 with the serial GC as well);
# - the long-lived ones (a test worker's session, a Thrift server) keep C2, which they gain from
#   (test_recluster.py in 137 s with it, 154 s without), and collect with the parallel GC
#   (test_recluster.py: 212-214 CPU-s instead of 231-237 with G1). Behaviour is the same.
# A child process whose session dbt creates from a target (a documented target under test) gets the
# short-lived options through its environment (jvm_options_env): test_format_targets.py took 235
# CPU-s instead of 306, the s3 target's test 82 instead of 130 (2026-11-28, alone on the machine).
TEST_JVM_ENV = "SPARK_CLUSTERING_TEST_JVM"


def jvm_options(long_lived: bool = False) -> str:
    """JVM options for a Spark JVM the tests start (none outside the tests): the compilers and the
    collector above, and the class data archive of spark_clustering_dev.cds when it exists (its own
    JVM writes it instead)."""
    if os.environ.get(TEST_JVM_ENV) != "1":
        return ""
    from spark_clustering_dev.cds import archive_path

    options = ["-XX:+UseParallelGC"] if long_lived else ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    dump, archive = os.environ.get("SPARK_CLUSTERING_CDS_DUMP"), archive_path()
    if dump:
        options.append(f"-XX:ArchiveClassesAtExit={dump}")
    elif archive.exists():
        # a JVM of another class path or JDK maps nothing from it, silently
        options += [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    return " ".join(options)


def jvm_options_env() -> dict[str, str]:
    """The environment that gives jvm_options to the JVMs of a child process whose Spark session dbt
    creates from a target (a test of a documented target must not add confs to it): JDK_JAVA_OPTIONS,
    which every `java` launch reads (and notes on stderr). Empty outside the tests."""
    options = jvm_options()
    return {"JDK_JAVA_OPTIONS": options} if options else {}


def table_format_conf(table_format: str) -> dict[str, str]:
    """The confs that make `spark_catalog` serve `table_format` tables as well as plain ones
    (docs/table_formats.md shows the same for a user's own session or Thrift server)."""
    if table_format == "delta":
        return {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
                # a table's state is rebuilt from its log by a job of this many tasks (Delta's
                # default 50): on 2 cores and small tables, 2 (test_delta_tables: 111 s, not 242 s)
                "spark.databricks.delta.snapshotPartitions": "2"}
    if table_format == "iceberg":
        return {"spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
                "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
                # Iceberg tables are tables of the Hive metastore Spark uses
                "spark.sql.catalog.spark_catalog.type": "hive",
                # commits by the metastore's check of the table's metadata location (HIVE-26882, in
                # Spark's Hive 2.3.10), not its lock tables, which an embedded Derby metastore lacks
                "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
                # the embedded metastore's connection pool when Iceberg opens it (BoneCP is not in pyspark)
                "spark.hadoop.datanucleus.connectionPoolingType": "DBCP"}
    if table_format == "hive":
        return {}
    raise ValueError(f"table_format {table_format!r}: use one of {', '.join(TABLE_FORMATS)}")


def session_conf(work_dir: Path, with_jar: bool = True, table_format: str = "hive",
                 s3_endpoint: str | None = None, long_lived: bool = False,
                 extra_classpath: tuple[str, ...] = ()) -> dict[str, str]:
    """Spark confs for an isolated local warehouse + metastore under `work_dir`, for `table_format`
    tables (TABLE_FORMATS); with `s3_endpoint`, S3A too (s3a:// paths on that S3 server).
    `long_lived`: the JVM keeps C2 under the tests (jvm_options). `extra_classpath`: jars put on
    the driver's classpath too (the tests' own classes)."""
    work_dir = Path(work_dir).resolve()
    conf = {
        "spark.master": os.environ.get("SPARK_CLUSTERING_MASTER", "local[2]"),
        "spark.sql.warehouse.dir": str(work_dir / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={work_dir / 'metastore_db'};create=true"
        ),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={work_dir} {jvm_options(long_lived)}".strip(),
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # dbt-spark forces this too; set it up front so every statement sees one mode.
        "spark.sql.ansi.enabled": "false",
        # Python UDF workers run this interpreter (the venv's numpy + pyarrow), not the system one.
        "spark.pyspark.python": sys.executable,
    }
    # Every session has the format jars on its classpath (a JVM's driver classpath is fixed when it
    # starts, and a test process may start a session of another format later).
    # Another line's session loads its format's jars only for a table of that format (its smoke
    # suite's plain session checks that a format without its jars is refused by name).
    if SPARK_LINE == default_line():
        jars = sorted(str(p) for p in FORMAT_JARS.glob("*.jar"))
    else:
        jars = [str(p) for p in compile_jars(SPARK_LINE) if table_format != "hive" and p.name.startswith(f"{table_format}-")]
    if not jars and (SPARK_LINE == default_line() or table_format != "hive"):
        what = "Delta / Iceberg" if table_format == "hive" else table_format
        raise FileNotFoundError(f"no {what} jars for Spark {SPARK_LINE}: run scripts/setup (--all-lines for the other lines)")
    extensions = []
    format_conf = table_format_conf(table_format)
    if with_jar:
        if not JAR.exists():
            raise FileNotFoundError(f"{JAR} is missing: run scripts/setup (it builds the UDF jar)")
        jars.insert(0, str(JAR))
        # First: Spark asks the extensions' planner strategies in this order, and Delta's plans
        # every file-source scan (plain parquet too) itself, so after it the skipping rule never ran.
        extensions.append(EXTENSION_CLASS)
    if "spark.sql.extensions" in format_conf:
        extensions.append(format_conf.pop("spark.sql.extensions"))
    if s3_endpoint:
        from spark_clustering_dev.s3 import s3a_conf

        conf.update(s3a_conf(s3_endpoint))
    if extra_classpath:
        conf["spark.driver.extraClassPath"] = ":".join(
            [p for p in conf.get("spark.driver.extraClassPath", "").split(":") if p] + list(extra_classpath))
    conf["spark.jars"] = ",".join(jars)
    if extensions:
        conf["spark.sql.extensions"] = ",".join(extensions)
    conf.update(format_conf)
    return conf


def get_spark(work_dir: Path | None = None, app_name: str = "spark_clustering", with_jar: bool = True,
              extra_conf: dict[str, str] | None = None, table_format: str = "hive", s3_endpoint: str | None = None,
              long_lived: bool = False, extra_classpath: tuple[str, ...] = ()):
    """Start (or return the running) embedded SparkSession with Hive support; with `s3_endpoint`
    (default: the harness's SPARK_CLUSTERING_S3_ENDPOINT, for child processes) S3A reaches that S3
    server."""
    from pyspark.sql import SparkSession

    from spark_clustering_dev.s3 import endpoint_from_env

    s3_endpoint = s3_endpoint or endpoint_from_env()

    work_dir = Path(work_dir or WORK / "session")
    work_dir.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.appName(app_name).enableHiveSupport()
    for key, value in {**session_conf(work_dir, with_jar, table_format, s3_endpoint, long_lived, extra_classpath),
                       **(extra_conf or {})}.items():
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
