"""Shared fixtures: ONE embedded SparkSession for the whole pytest process (each pytest-xdist worker
is a process of its own), dbt in-process.

Starting Spark costs ~30 s, so every module shares the session; modules isolate themselves by
using their own dbt schema (`dbt_schema`).
"""
from __future__ import annotations

import atexit
import os
import shutil

import pytest

from harness.stalling_fs import stalling_fs_jar
from spark_clustering_dev.dbt import run_dbt
from spark_clustering_dev.paths import BUILD, INTEGRATION_TESTS, WORK
from spark_clustering_dev.spark import get_spark
from spark_clustering_dev.test_cpu import ENV as TEST_CPU_ENV, TestCpu

# The short-lived JVMs the tests start (child processes, a cluster's daemons and executors) compile
# with C1 only (spark_clustering_dev.spark.TEST_JVM_ENV); child processes inherit it. The worker's
# own session runs for the whole run and keeps C2 (long_lived below).
os.environ.setdefault("SPARK_CLUSTERING_TEST_JVM", "1")

# Per process, so two pytest runs on one machine never share (or wipe) a warehouse.
PYTEST_WORK = WORK / f"pytest-{os.getpid()}"

# Under pytest-xdist (scripts/test runs 2 workers) each worker is a process of its own: its dbt
# writes its own target/ (partial parse file, compiled SQL) and logs/ (kept after the run, as
# integration_tests/logs/ is without workers); child processes inherit both.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("DBT_TARGET_PATH", str(PYTEST_WORK / "dbt_target"))
    os.environ.setdefault("DBT_LOG_PATH", str(INTEGRATION_TESTS / "logs" / os.environ["PYTEST_XDIST_WORKER"]))


# The running session and the table format it serves (TABLE_FORMATS of spark_clustering_dev.spark).
_session = {"format": None, "spark": None}
_s3 = {"server": None}


def s3_server():
    """The process's S3 API server on 127.0.0.1 (moto), started with its first session: every
    session of the process reaches it through S3A (the S3A jars must be on the classpath of the
    first session a JVM starts: the embedded Hive metastore keeps the class loader it started
    with). A module's child processes reach it when the module passes SPARK_CLUSTERING_S3_ENDPOINT
    in their environment."""
    if _s3["server"] is None:
        from spark_clustering_dev.s3 import S3Server

        _s3["server"] = S3Server(PYTEST_WORK / "s3").start()
        # at exit, after the JVM (registered later, so stopped first): a session's last writes at
        # shutdown (the observed workload) still reach the bucket
        atexit.register(_s3["server"].stop)
    return _s3["server"]


def _session_for(table_format: str):
    """The process's one SparkSession, for `table_format` tables: a module of another format than the
    running session's stops it and starts one for that format (same warehouse + metastore), because
    Delta and Iceberg each take the session catalog. Format modules run last (see
    pytest_collection_modifyitems), so a worker switches at most once per format."""
    if _session["format"] == table_format:
        return _session["spark"]
    if _session["spark"] is not None:
        _session["spark"].stop()
    # One warehouse + metastore for every session of the process: Hive's metastore code keeps some
    # state per JVM (e.g. TxnHandler's connection pool, bound to the metastore of its first use).
    session = get_spark(PYTEST_WORK / "session", app_name="spark_clustering_tests", table_format=table_format,
                        s3_endpoint=s3_server().endpoint, long_lived=True,
                        extra_classpath=(str(stalling_fs_jar(PYTEST_WORK)),))
    try:
        import spark_clustering_udfs
    except ImportError:  # the Python UDF package is optional for modules that do not use it
        spark_clustering_udfs = None
    if spark_clustering_udfs is not None:
        # Same functions, `py_` prefix, so native and Python can be compared in one session.
        spark_clustering_udfs.register(session, prefix="py_")
    _session.update(format=table_format, spark=session)
    return session


@pytest.fixture(scope="session", autouse=True)
def _stop_spark():
    # A clean warehouse + metastore per pytest run: no table survives from an earlier run.
    yield
    if _session["spark"] is not None:
        _session["spark"].stop()
    shutil.rmtree(PYTEST_WORK, ignore_errors=True)


@pytest.fixture(scope="module")
def spark(request):
    """The embedded session, for the module's `TABLE_FORMAT` (default `hive`: plain parquet/orc); it
    reaches the process's S3 server through S3A too (s3a:// paths, fixture `s3`)."""
    return _session_for(getattr(request.module, "TABLE_FORMAT", "hive"))


@pytest.fixture(scope="module")
def s3(spark):
    """The process's S3 API server (spark_clustering_dev.s3.S3Server), which `spark` reaches."""
    return s3_server()


@pytest.fixture(scope="module")
def dbt_schema(request) -> str:
    """A schema of the module's own, e.g. `it_test_smoke`."""
    return "it_" + request.module.__name__.rsplit(".", 1)[-1]


@pytest.fixture(scope="module")
def dbt(spark, dbt_schema):
    """`dbt(args, **kw)` runs dbt in-process on the shared session in the module's schema."""

    def _run(args, **kw):
        kw.setdefault("schema", dbt_schema)
        return run_dbt(args, **kw)

    spark.sql(f"create database if not exists {dbt_schema}")
    return _run


# The order pytest-xdist hands modules to scripts/test's 2 workers (--dist loadfile: the next module
# in this order goes to the first worker with (nearly) nothing left): longest first, so neither
# worker is left running a long module alone at the end. Seconds per module on a CI worker (the
# "seconds per module, per worker" this file prints), the modules not named here (under a minute
# each) after them in name order. Then the format modules, last on their worker (see rank), and
# last of all the modules that use no session of the worker's (their child processes and servers
# have their own): either worker can take them after its format module, which fills the end.
MODULE_SECONDS = {
    "test_recluster_kill": 760, "test_data_skipping": 530, "test_format_tables_killed": 390,
    "test_object_store": 287, "test_thrift_server": 275, "test_skipping_read_settings": 267,
    "test_recluster": 650, "test_clustered_table_edges": 232, "test_cluster_e2e": 225, "test_commit_races": 158,
    "test_skipping_three_valued": 100, "test_spark_connect": 330,
}
SESSIONLESS_LAST = ["test_concurrent_dbt", "test_format_targets"]


def pytest_collection_modifyitems(items):
    def rank(item):
        name = item.module.__name__.rsplit(".", 1)[-1]
        table_format = getattr(item.module, "TABLE_FORMAT", "hive")
        if name in SESSIONLESS_LAST:
            return (3, SESSIONLESS_LAST.index(name), "")
        # After every plain module: a plain module never runs after a format session in the same
        # process (in an Iceberg session, DROP TABLE of a plain table drops it from the metastore
        # but leaves its files, so a module's drop-and-create of its own tables would fail with
        # LOCATION_ALREADY_EXISTS). Delta's (the longer) first.
        if table_format != "hive":
            return (2, 0 if table_format == "delta" else 1, "")
        if name in MODULE_SECONDS:
            return (0, -MODULE_SECONDS[name], name)
        return (1, 0, name)

    items.sort(key=rank)  # stable: the order inside a module is kept


# Seconds per module and per worker (setup + call + teardown of its tests, in the order the worker
# ran them), printed at the end: the profile for keeping scripts/test's two workers balanced.
_module_seconds: dict[tuple[str, str], float] = {}


def pytest_runtest_logreport(report):
    node = getattr(report, "node", None)  # under pytest-xdist: the worker that ran it
    worker = node.gateway.id if node is not None else "main"
    key = (worker, report.nodeid.split("::", 1)[0].rsplit("/", 1)[-1])
    _module_seconds[key] = _module_seconds.get(key, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if not _module_seconds:
        return
    terminalreporter.section("seconds per module, per worker")
    for worker in sorted({w for w, _ in _module_seconds}):
        modules = [(m, s) for (w, m), s in _module_seconds.items() if w == worker]
        total = sum(s for _, s in modules)
        terminalreporter.write_line(f"{worker} ({total:.0f} s): " + ", ".join(f"{m} {s:.0f}" for m, s in modules))


# CPU per test, child processes included (spark_clustering_dev.test_cpu): with SPARK_CLUSTERING_TEST_CPU=1
# each process that runs tests writes build/test-cpu-<worker>.tsv; scripts/test prints the costliest.
_test_cpu = {"sampler": None}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _test_cpu["sampler"] is None and os.environ.get(TEST_CPU_ENV) == "1":
        _test_cpu["sampler"] = TestCpu(BUILD / f"test-cpu-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.tsv")
    sampler = _test_cpu["sampler"]
    if sampler is not None:
        sampler.start(item.nodeid)
    yield
    if sampler is not None:
        sampler.finish(item.nodeid)


def pytest_sessionfinish(session):
    if _test_cpu["sampler"] is not None:
        _test_cpu["sampler"].write()
