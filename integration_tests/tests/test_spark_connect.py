"""A real Spark Connect server (a separate JVM from pyspark's own jars, gRPC on loopback) with the
package's jar and extension, set up as docs/deployment.md section 5 tells a user; dbt-spark's
`method: session` reaches it from a process whose SPARK_REMOTE names it (the project's `connect`
target). A Connect client cannot share a process with an embedded session, so every client here is
a child process; this worker's own session builds the embedded reference.

The server keeps Spark's default catalog, the in-memory one, which a Connect server has unless told
otherwise (docs/deployment.md recommends Hive's; the Thrift server's tests run on Hive's). One
server more serves Delta or Iceberg on Hive's catalog, the driver of a standalone cluster (master +
2 workers), set up with the settings of the documented format target (docs/table_formats.md)."""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

import pytest
import yaml

from harness.format_target_child import CURVE_TABLES, EXAMPLE_VARS, file_boxes
from harness.format_targets import assert_every_model_built, documented_targets, run_target_child
from harness.report import clustering_report
from spark_clustering_dev.cluster import StandaloneCluster, driver_conf, get_json, key_write_tasks, wait_for_executors
from spark_clustering_dev.paths import INTEGRATION_TESTS, REPO, WORK
from spark_clustering_dev.spark import formats_this_run
from spark_clustering_dev.thrift import ConnectServer, free_port, module_server

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


def documented_connect_target() -> dict:
    """The dbt target of docs/deployment.md section 5 (the yaml block after its `connect-target` marker)."""
    text = (REPO / "docs" / "deployment.md").read_text()
    found = re.search(r"<!-- connect-target[^>]*-->\s*```yaml\n(.*?)```", text, re.S)
    assert found, "docs/deployment.md: no yaml block after a connect-target marker"
    return yaml.safe_load(textwrap.dedent(found.group(1)))["connect"]


def server_conf(target: dict) -> dict[str, str]:
    """A documented format target's server_side_parameters as a Connect server's settings (a Connect
    client can set none of them): the jars (the root rendered, the globs expanded) in spark.jars
    and, as docs/deployment.md section 5 says, on the driver's classpath too."""
    params = {k: str(v).replace("{{ env_var('SPARK_CLUSTERING_ROOT') }}", str(REPO))
              for k, v in target["server_side_parameters"].items()}
    patterns = params.pop("spark.jars").split(",")
    jars = {p: sorted(glob.glob(p)) for p in patterns}
    assert all(jars.values()), f"a documented jar is missing (scripts/setup builds them): {jars}"
    every = [j for p in patterns for j in jars[p]]
    return {**params, "spark.jars": ",".join(every), "spark.driver.extraClassPath": ":".join(every)}


class ConnectOnCluster:
    """A standalone cluster and a Connect server that is its driver (its UI on, for the REST API)."""

    def __init__(self, table_format: str, work, cluster: StandaloneCluster, server: ConnectServer, ui_port: int):
        self.table_format, self.work, self.cluster, self.server = table_format, work, cluster, server
        self.api = f"http://127.0.0.1:{ui_port}/api/v1"
        self.app_id = get_json(f"{self.api}/applications")[0]["id"]

    def executors(self) -> list[dict]:
        return [e for e in get_json(f"{self.api}/applications/{self.app_id}/executors") if e["id"] != "driver"]


@pytest.fixture(scope="module", params=formats_this_run())  # one per run of scripts/test
def format_connect_server_on_a_cluster(request):
    """A Connect server serving Delta (or Iceberg) with the settings of the documented target of
    docs/table_formats.md (the package's jar and extension, then the format's; its catalog; no jar
    downloaded), on Hive's catalog, its master a standalone cluster of 2 one-core workers, started
    once both executors are up."""
    table_format = request.param
    started = time.monotonic()
    work = WORK / f"connect-cluster-{table_format}-{os.getpid()}"
    cluster = StandaloneCluster(work).start()
    ui_port = free_port()
    # with_jar=False: the server loads the jars and extensions the documented target names, not its own
    server = ConnectServer(work / "connect", master=cluster.url, with_jar=False, extra_conf={
        **server_conf(documented_targets()[table_format]),
        "spark.sql.catalogImplementation": "hive", **driver_conf(ui_port)})
    try:
        server.start()
        stack = ConnectOnCluster(table_format, work, cluster, server, ui_port)
        wait_for_executors(stack.executors, tail=lambda: server.tail(40))
    except BaseException:
        server.stop()
        cluster.stop()
        raise
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled():
        print(f"\n[connect on a cluster] {table_format}: master {cluster.url}, workers {cluster.pids}, Connect server pid "
              f"{server.pid} on {server.url}, app {stack.app_id}; up in {time.monotonic() - started:.0f}s", flush=True)
    yield stack
    server.stop()
    cluster.stop()
    shutil.rmtree(work, ignore_errors=True)


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


def _key_tasks_per_executor(stack: ConnectOnCluster) -> tuple[list[str], dict[str, int]]:
    """The SQL executions that computed a curve key for a write, and their successful tasks per executor."""
    keyed, _, tasks = key_write_tasks(stack.api, stack.app_id)
    assert not any(e["failedJobIds"] for e in keyed), keyed
    return [e["description"][:100] for e in keyed], tasks


BOXED = ("telemetry_hilbert", "telemetry_zorder")


def _embedded_boxes(table_format: str, dbt, dbt_schema: str, spark) -> dict[str, list[list[str]]]:
    """The file boxes of the Hilbert and Z-order models built with harness.format_target_child's
    vars in an embedded session. A key's cuts come from a seeded `rand()` sample of the source, drawn per
    read task: a Delta source is read in the tasks of a plain table's (Spark's file source, the same
    splits), so the worker's own session builds plain tables; an Iceberg source in the tasks of
    Iceberg's own split planning, so a child process's embedded Iceberg session builds Iceberg ones."""
    models = ["telemetry_events", *BOXED]
    if table_format == "delta":
        dbt(["run", "--select", *models], vars=EXAMPLE_VARS)
        return {m: file_boxes(spark, f"{dbt_schema}.{m}") for m in BOXED}
    work = WORK / f"connect-embedded-{table_format}-{os.getpid()}"
    try:
        out = _client(f"""
            import json
            from harness.format_target_child import file_boxes
            from spark_clustering_dev.dbt import run_dbt
            from spark_clustering_dev.spark import get_spark
            spark = get_spark({str(work)!r}, table_format={table_format!r})
            run_dbt(["run", "--select", *{models!r}], schema="it_connect_embedded",
                    vars={{**{EXAMPLE_VARS!r}, "example_file_format": {table_format!r}}})
            print(json.dumps({{m: file_boxes(spark, f"it_connect_embedded.{{m}}", {table_format!r}) for m in {BOXED!r}}}))
            """, env={"DBT_TARGET_PATH": str(work / "dbt_target")})
        assert out.returncode == 0, f"--- stdout\n{out.stdout[-4000:]}\n--- stderr\n{out.stderr[-4000:]}"
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_the_documented_format_target_builds_and_reclusters_through_connect_on_a_standalone_cluster(
        request, format_connect_server_on_a_cluster, dbt, dbt_schema, spark, tmp_path):
    """Delta (or Iceberg) through a Connect server that is a standalone cluster's driver: the
    documented `connect` target (docs/deployment.md section 5) runs the documented format target's
    example job in its `curves` mode (harness.format_target_child: the source, the Hilbert, Z-order
    and incremental models built and tested, the incremental model's appended tenth and its
    recluster() post-hook; the other models, the `auto` layout and the audit are the documented
    target's own test, test_format_targets). Every model built is a table of the format with every
    source row; recluster() committed the format's rewrite after the append;
    the Hilbert and Z-order models' files are an embedded session's (_embedded_boxes), box for box;
    the keys were computed by tasks on both workers' executors, none on the driver."""
    stack = format_connect_server_on_a_cluster
    table_format = stack.table_format
    started = time.monotonic()
    # the incremental model's second run: a gate its appended tenth fails, so recluster() rewrites
    got, out = run_target_child(table_format, documented_connect_target(), tmp_path, env={"SPARK_REMOTE": stack.server.url},
                                mode="curves", increment_recluster={"max_average_depth": 1.5})
    took = time.monotonic() - started

    assert got["conf"]["spark.sql.extensions"] == documented_targets()[table_format]["server_side_parameters"][
        "spark.sql.extensions"], got["conf"]
    assert got["native_functions"] == ["hilbert_key"], got["native_functions"]
    assert_every_model_built(got, table_format, CURVE_TABLES)
    assert got["warnings"] == [], got["warnings"]
    assert "CATALOG_NOT_FOUND" not in out
    # the incremental model's commits: its build, the rewrite of recluster() (its post-hook) on the
    # first run, the append of the second, then recluster()'s rewrite of it (on Delta also the
    # commits of the table properties it records)
    build, append, rewrite = {"delta": ("CREATE OR REPLACE TABLE AS SELECT", "WRITE", "OPTIMIZE"),
                              "iceberg": ("overwrite", "append", "replace")}[table_format]
    ops = got["incremental_operations"]
    assert ops[0] == build and ops.count(append) == 1 and rewrite in ops[1:ops.index(append)], ops
    assert rewrite in ops[ops.index(append):] and set(ops[1:]) <= {rewrite, append, "SET TBLPROPERTIES"}, ops

    # the same models built in an embedded session: the same files, box for box
    embedded = _embedded_boxes(table_format, dbt, dbt_schema, spark)
    files = EXAMPLE_VARS["telemetry_rows"] // EXAMPLE_VARS["telemetry_file_rows"]
    for model in BOXED:
        assert len(embedded[model]) == files and got["boxes"][model] == embedded[model], (
            model, got["boxes"][model], embedded[model])

    # the standalone cluster served the work: the server is its application, and the key-computing
    # writes ran on both workers' executors
    assert [a["id"] for a in get_json(stack.cluster.master_json_url)["activeapps"]] == [stack.app_id]
    keyed, tasks = _key_tasks_per_executor(stack)
    worker_executors = {}
    for i, port in enumerate(stack.cluster.worker_ui_ports):
        state = get_json(f"http://127.0.0.1:{port}/json/")
        worker_executors[f"worker{i + 1}"] = sorted(str(e["id"]) for e in state["executors"] if e["appid"] == stack.app_id)
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled():
        print(f"\n[connect on a cluster] {table_format}: the example job in {took:.0f}s; {len(keyed)} key-computing "
              f"writes, their tasks per executor {tasks}; workers' executors {worker_executors}", flush=True)
    # one keyed write per clustered write at least: hilbert, zorder, the incremental model's two reclusters
    assert len(keyed) >= 4, keyed
    assert "driver" not in tasks, tasks
    assert all(len(ids) == 1 for ids in worker_executors.values()), worker_executors
    for worker, [executor_id] in worker_executors.items():
        assert tasks.get(executor_id, 0) > 0, (worker, executor_id, tasks)
