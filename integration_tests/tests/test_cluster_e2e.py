"""The example project on a real standalone cluster: master + 2 workers (separate JVMs), a Spark
Thrift Server attached to it as the driver, dbt `method: thrift`.

Proves the native key functions ran on the executors: the driver's REST API (its UI is switched on
for this server) links every SQL execution whose physical plan calls `hilbert_key(` / `zorder_key(` to
its jobs, stages and tasks; every such task ran on an executor (never "driver"), and executors of
BOTH workers (each worker's `/json/` lists the executor it launched for the app) ran some of them.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import time

import pytest

from harness.plans import skipping_summary
from spark_clustering_dev.cluster import StandaloneCluster, driver_conf, get_json, key_write_tasks, wait_for_executors
from spark_clustering_dev.dbt import run_dbt, run_operation_json
from spark_clustering_dev.paths import JAR, WORK
from spark_clustering_dev.s3 import s3a_conf
from spark_clustering_dev.thrift import ThriftServer, free_port, pid_alive

pytestmark = pytest.mark.cluster

SCHEMA = "it_cluster_e2e"
ROWS, FILE_ROWS = 50_000, 5_000
CLUSTERED = ["telemetry_hilbert", "telemetry_zorder", "telemetry_linear", "telemetry_by_region"]
EXAMPLE = ["telemetry_insertion_order", *CLUSTERED]
COLUMNS = "event_id, mission_id, ts, payload_id, sensor_kind, region, quality_flag, reading_value"


def _say(request, text: str) -> None:
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled():
        print(text, flush=True)


class Stack:
    def __init__(self, cluster: StandaloneCluster, server: ThriftServer, ui_port: int):
        self.cluster, self.server, self.ui_port = cluster, server, ui_port
        self.api = f"http://127.0.0.1:{ui_port}/api/v1"
        self.app_id = get_json(f"{self.api}/applications")[0]["id"]
        self.pids = {**cluster.pids, "thrift": server.pid}

    def executors(self) -> list[dict]:
        return [e for e in get_json(f"{self.api}/applications/{self.app_id}/executors") if e["id"] != "driver"]

    def query(self, sql: str) -> list[tuple]:
        return self.session([sql])[0]

    def session(self, statements: list[str]) -> list[list[tuple]]:
        """The statements in one Thrift session (so a SET holds for the ones after it)."""
        from pyhive import hive

        conn = hive.connect(host=self.server.host, port=self.server.port, username="dbt")
        try:
            cur = conn.cursor()
            results = []
            for sql in statements:
                cur.execute(sql)
                results.append(cur.fetchall() if cur.description else [])
            return results
        finally:
            conn.close()


@pytest.fixture(scope="module")
def stack(request, s3):
    started = time.monotonic()
    work = WORK / f"cluster-{os.getpid()}"
    cluster = StandaloneCluster(work).start()
    ui_port = free_port()
    # S3A on the driver and on every executor (the jars are on this machine's disk, where each
    # worker starts its executor), against the test process's S3 server
    reach_s3 = s3a_conf(s3.endpoint)
    reach_s3["spark.executor.extraClassPath"] = reach_s3["spark.driver.extraClassPath"]
    server = ThriftServer(work / "thrift", master=cluster.url, extra_conf={
        **reach_s3, **driver_conf(ui_port)})
    try:
        server.start()
        s = Stack(cluster, server, ui_port)
        wait_for_executors(s.executors)
    except BaseException:
        server.stop()
        cluster.stop()
        raise
    _say(request, f"\n[cluster] master {cluster.url} (pid {cluster.pids['master']}, ui {cluster.ui_port}); "
                  f"workers pids {cluster.pids['worker1']}, {cluster.pids['worker2']} "
                  f"(ui {cluster.worker_ui_ports}); thrift pid {server.pid} on {server.host}:{server.port}, "
                  f"driver ui {ui_port}, app {s.app_id}; up in {time.monotonic() - started:.0f}s")
    yield s
    server.stop()
    cluster.stop()
    shutil.rmtree(work, ignore_errors=True)
    _say(request, f"\n[cluster] module finished in {time.monotonic() - started:.0f}s")


@contextlib.contextmanager
def fast_poll():
    """dbt-spark's thrift method sleeps poll_interval (dbt-spark's default 5 s, the project's profile 1 s)
    after every statement that is not done at once; this module's many statements on the cluster wait
    0.2 s instead (client side only: it changes nothing the server runs)."""
    from dbt.adapters.spark.connections import PyhiveConnectionWrapper

    init = PyhiveConnectionWrapper.__init__

    def shortened(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.poll_interval = 0.2

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(PyhiveConnectionWrapper, "__init__", shortened)
        yield


@pytest.fixture(scope="module")
def built(request, stack):
    kw = dict(target="thrift", schema=SCHEMA, env=stack.server.dbt_env(), vars={"telemetry_rows": ROWS, "telemetry_file_rows": FILE_ROWS})
    started = time.monotonic()
    with fast_poll():
        build = run_dbt(["build", "--select", "path:models/example"], **kw)
        # The incremental model's second run appends the last tenth; its recluster() post-hook
        # (gate at depth 6, so it fires) rewrites through the Thrift server's table functions.
        increment = run_dbt(["run", "--select", "telemetry_incremental"], **{**kw, "vars": {
            **kw["vars"], "telemetry_increment": 9, "telemetry_recluster": {"max_average_depth": 6}}})
        audit = run_dbt(["run", "--select", "spark_clustering_audit"], **kw)
    results = {**build.node_results(), **audit.node_results(),
               "telemetry_incremental (2nd run)": increment.node_results()["telemetry_incremental"]}
    _say(request, f"\n[cluster] dbt build + audit in {time.monotonic() - started:.0f}s: "
                  + ", ".join(f"{n} {r.execution_time:.1f}s" for n, r in results.items()))
    results["dbt warnings"] = build.warnings + increment.warnings + audit.warnings
    return results


def test_dbt_build_succeeds(built):
    for name in ["telemetry_events", *EXAMPLE, "telemetry_incremental", "telemetry_incremental (2nd run)",
                 "spark_clustering_audit"]:
        assert str(built[name].status) == "success", (name, built[name].status, built[name].message)


def test_the_example_makes_dbt_warn_about_nothing(built):
    """The example sets cluster_workload under meta, as dbt >= 1.10 wants custom keys: reading it must
    not make dbt warn (a config.get of a key found only under meta does, on every model)."""
    assert built["dbt warnings"] == [], built["dbt warnings"]


def test_every_model_holds_exactly_the_source_rows(stack, built):
    fingerprint = f"count(*), sum(cast(hash({COLUMNS}) as bigint)), bit_xor(xxhash64({COLUMNS}))"
    [source] = stack.query(f"select {fingerprint} from {SCHEMA}.telemetry_events")
    assert source[0] == ROWS
    for name in EXAMPLE:
        assert stack.query(f"select {fingerprint} from {SCHEMA}.{name}") == [source], name


def test_incremental_model_was_reclustered_over_thrift(stack, built):
    fingerprint = f"count(*), sum(cast(hash({COLUMNS}) as bigint)), bit_xor(xxhash64({COLUMNS}))"
    [source] = stack.query(f"select {fingerprint} from {SCHEMA}.telemetry_events")
    assert stack.query(f"select {fingerprint} from {SCHEMA}.telemetry_incremental") == [source]
    names = [path.rsplit("/", 1)[-1] for path, in stack.query(
        f"select file_path from table_data_files('{SCHEMA}.telemetry_incremental')")]
    # every file was written by a recluster commit (named sc-l<level>-<run>-n), none is left unclustered
    assert names and all(n.startswith("sc-l") for n in names), names
    props = dict(stack.query(f"show tblproperties {SCHEMA}.telemetry_incremental"))
    # a JSON list (older versions wrote "mission_id,ts,payload_id")
    stored = props.get("spark_clustering.cluster_by") or ""
    assert (json.loads(stored) if stored.startswith("[") else stored.split(",")) == ["mission_id", "ts", "payload_id"], props


def test_the_one_pass_kdtree_fit_runs_in_the_thrift_server(stack, built):
    """cluster_method auto's k-d trees fit by the server's kdtree_fit (over the session's own view)
    and by the SQL fit, through dbt's thrift target: the same cuts, on an int, a timestamp and a
    string column."""
    workload = [{"mission_id": [2, 5]}, {"ts": ["2025-03-01", None], "sensor_kind": [None, "m"]},
                {"mission_id": [1, 1], "ts": [None, "2025-02-01"]}]
    with fast_poll():
        out = run_operation_json("kdtree_fits", {"relation": f"{SCHEMA}.telemetry_events", "files": 8, "workload": workload,
                                                 "columns": ["mission_id", "ts", "sensor_kind"]},
                                 target="thrift", schema=SCHEMA, env=stack.server.dbt_env())
    assert [len(tree["cuts"]) for tree in out["native"]] == [7, 7], out
    assert out["native"] == out["sql"], out


def test_file_counts_as_configured(stack, built):
    expected = ROWS // FILE_ROWS
    for name in CLUSTERED:
        props = dict(stack.query(f"show tblproperties {SCHEMA}.{name}"))
        assert props["spark_clustering.num_files"] == str(expected), name
        assert props["spark_clustering.validated"] == "true", name
    for name in ["telemetry_hilbert", "telemetry_zorder", "telemetry_linear"]:
        [(files,)] = stack.query(f"select count(distinct f) from (select input_file_name() as f from {SCHEMA}.{name})")
        assert files == expected, name
    # Partitioned: no file spans two regions (a range task crossing a region writes one file per region).
    per_file = stack.query(f"select input_file_name(), count(distinct region) from {SCHEMA}.telemetry_by_region "
                           "group by 1")
    assert len(per_file) >= expected and {n for _, n in per_file} == {1}


def test_hilbert_scans_fewer_files_than_insertion_order(request, stack, built):
    rows = stack.query(f"""
        select split(relation_name, '[.]')[size(split(relation_name, '[.]')) - 1], max(workload_mean_ratio)
        from {SCHEMA}.spark_clustering_audit
        where run_id = (select max_by(run_id, run_started_at) from {SCHEMA}.spark_clustering_audit)
        group by 1""")
    ratio = dict(rows)
    _say(request, f"\n[cluster] workload ratios (files scanned / files): {ratio}")
    assert ratio["telemetry_hilbert"] < ratio["telemetry_insertion_order"], ratio
    assert ratio["telemetry_zorder"] < ratio["telemetry_insertion_order"], ratio


def test_the_audit_carries_each_tables_last_recluster_decision(stack, built):
    """From the table's maintenance record, which the Thrift server's extension keeps: the
    incremental model's second run reclustered (its gate fired); the clustered_table models were
    never reclustered."""
    rows = stack.query(f"""
        select distinct split(relation_name, '[.]')[size(split(relation_name, '[.]')) - 1], last_recluster_decision,
               last_recluster_reason, last_recluster_bytes_rewritten, last_recluster_at
        from {SCHEMA}.spark_clustering_audit
        where run_id = (select max_by(run_id, run_started_at) from {SCHEMA}.spark_clustering_audit)""")
    last = {r[0]: r[1:] for r in rows}
    assert len(last) == len(rows), rows  # one decision per table and run
    decision, reason, rewritten, at = last["telemetry_incremental"]
    assert decision == "reclustered" and "average depth" in reason and rewritten > 0 and at, last
    assert last["telemetry_hilbert"] == (None, None, None, None), last


def test_queries_skip_files_on_the_cluster(request, stack, built):
    """A box query on the hilbert table reads fewer files, planned from the sidecar clustered_table
    wrote, and returns what the same query returns with data skipping off (one Thrift session)."""
    table = f"{SCHEMA}.telemetry_hilbert"
    query = f"select count(*), sum(reading_value) from {table} where mission_id between 10 and 17"
    outcome = stack.session([f"explain {query}", query, "set spark.sparkclustering.skipping.enabled=false", query,
                             f"explain {query}"])
    plan_on, on, off, plan_off = ("\n".join(str(r[0]) for r in outcome[0]), outcome[1], outcome[3],
                                  "\n".join(str(r[0]) for r in outcome[4]))
    kept = skipping_summary(plan_on)
    _say(request, f"\n[cluster] data skipping: {kept}")
    assert on == off and on[0][0] > 0, (on, off)
    assert kept["kept"] < kept["total"] and kept["sidecar"] == kept["total"], plan_on
    assert "DataSkipping: kept" not in plan_off, plan_off
    # the driver's planner rule recorded the queries' box for cluster_workload: observed (with
    # skipping off too; an EXPLAIN is planned, so it counts as well)
    seen = {b: q for b, q in stack.query(f"select box, queries from observed_workload('{table}')")}
    assert seen.get('{"mission_id":[10,17]}', 0) >= 2, seen


def test_keys_were_computed_on_both_workers_executors(request, stack, built):
    keyed, job_ids, tasks_per_executor = key_write_tasks(stack.api, stack.app_id)
    # One clustered write per hilbert/zorder model (by_region is hilbert too), native backend used.
    assert len(keyed) >= 3, [e["description"][:120] for e in keyed]
    assert job_ids and not any(e["failedJobIds"] for e in keyed)
    # Which executor each worker launched for this application, from the workers themselves.
    worker_executors = {}
    for i, port in enumerate(stack.cluster.worker_ui_ports):
        state = get_json(f"http://127.0.0.1:{port}/json/")
        worker_executors[f"worker{i + 1}"] = sorted(str(e["id"]) for e in state["executors"]
                                                    if e["appid"] == stack.app_id)
    totals = {e["id"]: e["totalTasks"] for e in stack.executors()}
    _say(request, f"\n[cluster] key-computing SQL executions {[e['id'] for e in keyed]}, jobs {job_ids}; "
                  f"their successful tasks per executor {tasks_per_executor}; workers' executors "
                  f"{worker_executors}; all tasks per executor {totals}")
    assert "driver" not in tasks_per_executor
    assert all(len(ids) == 1 for ids in worker_executors.values()), worker_executors
    for worker, [executor_id] in worker_executors.items():
        assert tasks_per_executor.get(executor_id, 0) > 0, (worker, executor_id, tasks_per_executor)
    # The jar reached each executor through --jars (fetched from the driver, added to its class loader).
    for i in range(len(stack.cluster.worker_ui_ports)):
        logs = list((stack.cluster.work_dir / f"worker{i + 1}" / "work" / stack.app_id).glob("*/stderr"))
        assert logs and any(JAR.name in p.read_text(errors="replace") for p in logs), logs


BUCKET = "it-cluster-e2e"


def test_a_model_in_a_bucket_is_built_and_reclustered_on_the_cluster(request, stack, built, s3):
    """The cluster's warehouse in a bucket: a database located there, the example's source, a
    clustered model and the incremental model built, appended to and reclustered by the executors
    through S3A. The tables hold exactly the local source's rows, every file lies in the bucket, the
    clustered table holds its configured files, and a box query skips files with the answer of a
    full scan."""
    s3.create_bucket(BUCKET)
    schema = f"{SCHEMA}_s3"
    stack.query(f"create database if not exists {schema} location 's3a://{BUCKET}/{schema}.db'")
    kw = dict(target="thrift", schema=schema, env=stack.server.dbt_env(), vars={"telemetry_rows": ROWS, "telemetry_file_rows": FILE_ROWS})
    started = time.monotonic()
    with fast_poll():
        run_dbt(["run", "--select", "telemetry_events", "telemetry_hilbert", "telemetry_incremental"], **kw)
        run_dbt(["run", "--select", "telemetry_incremental"], **{**kw, "vars": {
            **kw["vars"], "telemetry_increment": 9, "telemetry_recluster": {"max_average_depth": 6}}})
    fingerprint = f"count(*), sum(cast(hash({COLUMNS}) as bigint)), bit_xor(xxhash64({COLUMNS}))"
    [source] = stack.query(f"select {fingerprint} from {SCHEMA}.telemetry_events")
    for name in ("telemetry_events", "telemetry_hilbert", "telemetry_incremental"):
        assert stack.query(f"select {fingerprint} from {schema}.{name}") == [source], name
        files = [f for f, in stack.query(f"select distinct _metadata.file_path from {schema}.{name}")]
        assert files and all(f.startswith(f"s3a://{BUCKET}/{schema}.db/") for f in files), (name, files[:3])
    assert len(stack.query(f"select distinct _metadata.file_path from {schema}.telemetry_hilbert")) == ROWS // FILE_ROWS
    names = [p.rsplit("/", 1)[-1] for p, in stack.query(f"select file_path from table_data_files('{schema}.telemetry_incremental')")]
    assert any(n.startswith("sc-l") for n in names), names
    query = f"select count(*), sum(reading_value) from {schema}.telemetry_hilbert where mission_id between 10 and 17"
    outcome = stack.session([f"explain {query}", query, "set spark.sparkclustering.skipping.enabled=false", query])
    kept = skipping_summary("\n".join(str(r[0]) for r in outcome[0]))
    assert outcome[1] == outcome[3] and kept["kept"] < kept["total"], (outcome[1], outcome[3], kept)
    assert s3.uploads(BUCKET) == [] and not [k for k in s3.keys(BUCKET) if "_sc_recluster_" in k or "__magic_job-" in k]
    _say(request, f"\n[cluster] a bucket: built, appended and reclustered in {time.monotonic() - started:.0f}s; "
                  f"skipping {kept}")


def test_everything_stops(request, stack, built):
    pids = stack.pids
    assert all(pid_alive(p) for p in pids.values()), pids
    stack.server.stop()
    stack.cluster.stop()
    gone = {name: not pid_alive(pid) for name, pid in pids.items()}
    _say(request, f"\n[cluster] stopped {pids}: gone {gone}")
    assert all(gone.values()), f"still alive after stop: {gone}"
