"""The smoke suite every Spark line of spark_lines/lines.json runs besides the default one (whose
full suite is integration_tests/tests): one embedded session of the line's pyspark with the jar
built for it, dbt in-process. scripts/test runs it once per line, with the line's own virtualenv:

    PYTHONPATH=dev:udfs/python <line venv>/bin/python -m pytest integration_tests/lines
"""
from __future__ import annotations

import os
import shutil

import pytest

from spark_clustering_dev.paths import JAR, SPARK_LINE, WORK
from spark_clustering_dev.spark import get_spark

# the line's session and its child processes (recluster kills) are short-lived JVMs
# (spark_clustering_dev.spark.jvm_options): the suite's session lives about a minute, and with C1 and
# the serial GC it took 74-75 CPU-s for the suite on Spark 4.0 instead of 81-92 with C2 and the
# parallel GC (CPU it takes from the full suite running beside it)
os.environ.setdefault("SPARK_CLUSTERING_TEST_JVM", "1")
LINE_WORK = WORK / f"line-{SPARK_LINE}-{os.getpid()}"
if os.environ.get("DBT_TARGET_PATH") is None:
    os.environ["DBT_TARGET_PATH"] = str(LINE_WORK / "dbt_target")
    os.environ["DBT_LOG_PATH"] = str(LINE_WORK / "dbt_logs")


@pytest.fixture(scope="session")
def session_work():
    """The warehouse and metastore the suite's session opens (test_spark_line's recluster kill
    leaves a killed process's table there before the session starts, which recovers it)."""
    return LINE_WORK / "session"


@pytest.fixture(scope="session")
def spark(session_work):
    assert JAR.exists(), f"{JAR} is missing: scripts/setup --all-lines builds it"
    session = get_spark(session_work, app_name=f"spark_clustering_line_{SPARK_LINE}")
    yield session
    session.stop()
    shutil.rmtree(LINE_WORK, ignore_errors=True)


@pytest.fixture(scope="session")
def schema(spark) -> str:
    name = "it_line_" + SPARK_LINE.replace(".", "_")
    spark.sql(f"create database if not exists {name}")
    return name
