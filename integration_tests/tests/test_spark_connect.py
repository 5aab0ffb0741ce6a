"""A real Spark Connect server (a separate JVM from pyspark's own jars, gRPC on loopback) with the
package's jar and extension, set up as docs/deployment.md section 5 tells a user; dbt-spark's
`method: session` reaches it from a process whose SPARK_REMOTE names it (the project's `connect`
target). A Connect client cannot share a process with an embedded session, so every client here is
a child process; this worker's own session builds the embedded reference.

The server keeps Spark's default catalog, the in-memory one, which a Connect server has unless told
otherwise (docs/deployment.md recommends Hive's; the Thrift server's tests run on Hive's)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from harness.report import clustering_report
from spark_clustering_dev.paths import INTEGRATION_TESTS, WORK
from spark_clustering_dev.thrift import ConnectServer, module_server

pytestmark = pytest.mark.thrift

ROWS, FILE_ROWS = 20_000, 1_250
# The models whose files Spark's range partitioning draws: `linear` (a global sort) and the
# partitioned model (REPARTITION_BY_RANGE within each partition). Spark samples the input to place
# the ranges with a seed made of the id of the RDD it samples, which counts every RDD the driver
# made before, so two sessions that ran other statements first write other files. Measured on the
# embedded session alone, the partitioned model after 7 more jobs: average depth of mission_id 13.7
# instead of 14.4. Their files and rows are compared exactly, their figures within SAMPLED_WITHIN;
# the other models' layouts are the package's own routing, equal in every session.
SAMPLED = {"telemetry_linear", "telemetry_by_region"}
SAMPLED_WITHIN = 0.2


@pytest.fixture(scope="module")
def connect_server(request):
    yield from module_server(ConnectServer(WORK / f"connect-{os.getpid()}"), request)


@pytest.fixture(scope="module")
def connect_server_without_the_jar(request):
    """A server that cannot load the package's jar (a managed Connect endpoint): no jar, no
    extension; Hive's catalog, as docs/deployment.md says such a server needs for partitioned
    models (dbt's rename swaps a plain table there)."""
    yield from module_server(ConnectServer(WORK / f"connect-nojar-{os.getpid()}", with_jar=False,
                                           extra_conf={"spark.sql.catalogImplementation": "hive"}), request)


def _client(code: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `code` in a child Python (a Connect client of its own) in integration_tests/, where it
    imports the harness (the virtualenv's path has dev/ and udfs/python/, as for run_child)."""
    full_env = {**os.environ, **(env or {})}
    # the worker's own dbt target/log folders are this process's: the child writes its own
    for key in ("DBT_TARGET_PATH", "DBT_LOG_PATH"):
        if key in full_env:
            full_env[key] = full_env[key].rstrip("/") + "-connect"
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=INTEGRATION_TESTS, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def _check(done: subprocess.CompletedProcess, server: ConnectServer) -> str:
    assert done.returncode == 0, (f"client exited {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n"
                                  f"{done.stderr[-4000:]}\n--- server log\n{server.tail(40)}")
    return done.stdout


def test_a_table_function_that_acts_acts_once_over_connect(connect_server):
    """Over Connect a `select * from f(...)` is analysed when sent, when its schema is asked and when
    its rows are fetched. With the call id the package's macros give every call, the lease is taken
    once: the call gets a token and the lease can be given up. Without one, the second analysis
    waits for the lease its first took, and fails naming the caller as the holder."""
    out = _check(_client(f"""
        import json
        from pyspark.sql.connect.session import SparkSession
        spark = SparkSession.builder.remote({connect_server.url!r}).getOrCreate()
        spark.sql("create schema if not exists it_connect")
        spark.sql("create table if not exists it_connect.leased using parquet as select id from range(3)")
        acquire = "select * from table_lease_acquire('it_connect.leased', 'owner-a', '2', 'table'{{}})"
        df = spark.sql(acquire.format(", 'call-1'"))
        fields = [f.name for f in df.schema.fields]
        token = df.collect()[0].lease_token
        released = spark.sql(f"select * from table_lease_release('{{token}}', 'false', 'call-2')").collect()[0].released
        try:
            spark.sql(acquire.format("")).collect()
            without = "taken"
        except Exception as e:
            without = str(e)
        print(json.dumps({{"fields": fields, "token": token, "released": released, "without": without}}))
        """), connect_server)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["fields"] == ["lease_token", "waited_ms"] and got["token"], got
    assert got["released"] == 1, got
    assert "is being written by owner-a" in got["without"], got


def test_the_example_through_connect_reports_what_the_embedded_session_reports(connect_server, spark):
    """The README's example job through the server (run_example.py --remote): builds, tests, the
    incremental model's recluster() post-hook and the audit model pass, and its clustering report is
    the embedded session's, model by model (SAMPLED: Spark's). The partitioned model's table holds every row over
    Connect: the in-memory catalog renames a table's directory but not its partitions' locations,
    which the swap moves."""
    import run_example

    run_example.build_example(ROWS, FILE_ROWS)
    embedded = {r["model"]: r for r in json.loads(json.dumps(clustering_report(spark, run_example.SCHEMA)))}
    out_json = WORK / f"connect-{os.getpid()}" / "report.json"
    _check(_client(f"""
        import sys
        import run_example
        sys.exit(run_example.main(["--remote", {connect_server.url!r}, "--rows", "{ROWS}", "--file-rows",
                                   "{FILE_ROWS}", "--report-json", {str(out_json)!r},
                                   "--picture", {str(out_json.with_suffix(".png"))!r}]))
        """), connect_server)
    remote = json.loads(out_json.read_text())
    over_connect = {r["model"]: r for r in remote["report"]}
    assert sorted(over_connect) == sorted(embedded), (sorted(over_connect), sorted(embedded))
    for model, want in embedded.items():
        got = over_connect[model]
        if model in SAMPLED:
            assert (got["method"], got["files"]) == (want["method"], want["files"]), (got, want)
            figures = [(got["average_depth"][c], d) for c, d in want["average_depth"].items()]
            figures += [(got["box_average_overlaps"], want["box_average_overlaps"]),
                        (got["workload_ratio"], want["workload_ratio"])]
            assert all(abs(g - w) <= SAMPLED_WITHIN * w for g, w in figures), (model, got, want)
        else:
            assert got == want, (model, got, want)
    want_rows = {m: spark.sql(f"select count(*) from {run_example.SCHEMA}.{m}").collect()[0][0] for m in embedded}
    assert remote["rows"] == want_rows and remote["rows"]["telemetry_by_region"] == ROWS, (remote["rows"], want_rows)


def test_the_python_udf_backend_over_connect_writes_the_native_layout(connect_server):
    """The Python UDF backend where the client is a Connect client: spark_clustering_udfs.register
    on its session ships the UDFs (the package's code by value) to the server, whose Python workers
    run them (BIGINT keys: over Connect a UDF has one return type). The example's Hilbert model built
    with them has the files of the jar's native functions, box for box."""
    out = _check(_client(f"""
        import json, os, warnings
        warnings.filterwarnings("ignore", message="Failed to set spark.sql.catalogImplementation")
        os.environ["SPARK_REMOTE"] = {connect_server.url!r}
        from pyspark.sql import SparkSession
        import spark_clustering_udfs
        from spark_clustering_dev.dbt import run_dbt
        spark = SparkSession.builder.getOrCreate()
        boxes = {{}}
        for backend in ("native", "python"):
            if backend == "python":
                registered = spark_clustering_udfs.register(spark)
            run_dbt(["run", "--select", "telemetry_events", "telemetry_hilbert"], target="connect",
                    schema=f"it_connect_{{backend}}", vars={{"telemetry_rows": {ROWS}, "telemetry_file_rows": {FILE_ROWS},
                                                          "spark_clustering_udf_backend": backend}})
            boxes[backend] = sorted(tuple(str(v) for v in r) for r in spark.sql(
                f"select count(*), min(ts), max(ts), min(mission_id), max(mission_id), min(payload_id), max(payload_id) "
                f"from it_connect_{{backend}}.telemetry_hilbert group by _metadata.file_path").collect())
        print(json.dumps({{"registered": registered, "boxes": boxes}}))
        """), connect_server)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["registered"] == {"range_id": "int", "zorder_key": "bigint", "hilbert_key": "bigint"}, got["registered"]
    native, python = got["boxes"]["native"], got["boxes"]["python"]
    assert len(native) == ROWS // FILE_ROWS and sum(int(b[0]) for b in native) == ROWS, native
    assert python == native, (python, native)


def test_without_the_jar_on_the_server_the_example_builds_with_the_sql_keys_over_connect(
        connect_server_without_the_jar, spark, dbt, dbt_schema):
    """A Connect server without the jar: the example's models and their generic tests pass through
    it with the `sql` keys, whose Hilbert model has the files of the jar's native keys (built here,
    in the worker's own session), box for box; the incremental model's recluster() post-hook stops
    naming the model, what to load on the server and how to switch it off."""
    server = connect_server_without_the_jar
    boxes_sql = ("select count(*), min(ts), max(ts), min(mission_id), max(mission_id), min(payload_id), max(payload_id) "
                 "from {}.telemetry_hilbert group by _metadata.file_path")
    example = {"telemetry_rows": ROWS, "telemetry_file_rows": FILE_ROWS}
    dbt(["run", "--select", "telemetry_events", "telemetry_hilbert"], vars={**example, "spark_clustering_udf_backend": "native"})
    native = sorted([str(v) for v in r] for r in spark.sql(boxes_sql.format(dbt_schema)).collect())
    out = _check(_client(f"""
        import json, os
        os.environ["SPARK_REMOTE"] = {server.url!r}
        from pyspark.sql import SparkSession
        from spark_clustering_dev.dbt import run_dbt
        spark = SparkSession.builder.getOrCreate()
        example = {example!r}
        schema = "it_connect_nojar"
        build = run_dbt(["build", "--full-refresh", "--select", "path:models/example", "--exclude", "telemetry_incremental"],
                        target="connect", schema=schema, vars=example)
        run_dbt(["run", "--full-refresh", "--select", "telemetry_incremental"], target="connect", schema=schema,
                vars={{**example, "spark_clustering_recluster": False}})
        failed = run_dbt(["run", "--select", "telemetry_incremental"], target="connect", schema=schema,
                         vars={{**example, "telemetry_increment": 9}}, expect_success=False)
        print(json.dumps({{
            "functions": [r[0] for r in spark.sql("show functions like 'hilbert_key'").collect()],
            "results": {{name: str(r.status) for name, r in build.node_results().items()}},
            "rows": {{m: spark.sql(f"select count(*) from {{schema}}.{{m}}").collect()[0][0]
                     for m in ["telemetry_events", "telemetry_hilbert", "telemetry_by_region", "telemetry_incremental"]}},
            "boxes": sorted([str(v) for v in r] for r in spark.sql({boxes_sql!r}.format(schema)).collect()),
            "error": " ".join(failed.messages)}}))
        """), server)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["functions"] == [], got["functions"]
    tests = {name: status for name, status in got["results"].items() if name.startswith("spark_clustering_")}
    assert tests and set(tests.values()) == {"pass"}, got["results"]
    assert all(n == ROWS for n in got["rows"].values()), got["rows"]
    assert len(native) == ROWS // FILE_ROWS and got["boxes"] == native, (got["boxes"], native)
    error = got["error"]
    assert "telemetry_incremental" in error and "the spark_clustering Spark extension is not loaded" in error, error
    assert "skip_recluster" in error, error
