"""A real Spark Thrift Server (separate JVM, TCP on loopback) builds a model through `method: thrift`."""
from __future__ import annotations

import contextlib
import json
import os
import socket

import pytest

from harness.plans import skipping_summary
from spark_clustering_dev.dbt import run_dbt
from spark_clustering_dev.paths import WORK
from spark_clustering_dev.spark import formats_this_run
from spark_clustering_dev.thrift import ThriftServer, module_server, pid_alive

pytestmark = pytest.mark.thrift

SCHEMA = "it_thrift"


@pytest.fixture(scope="module")
def thrift_server(request):
    yield from module_server(ThriftServer(WORK / f"thrift-{os.getpid()}"), request)


@contextlib.contextmanager
def _cursor(server: ThriftServer):
    """A cursor on its own TCP connection to the server (not through dbt)."""
    from pyhive import hive

    conn = hive.connect(host=server.host, port=server.port, username="dbt")
    try:
        yield conn.cursor()
    finally:
        conn.close()


def _new_table(cur, name: str, select: str) -> str:
    cur.execute(f"create schema if not exists {SCHEMA}")
    cur.execute(f"drop table if exists {SCHEMA}.{name}")
    cur.execute(f"create table {SCHEMA}.{name} using parquet as {select}")
    return f"{SCHEMA}.{name}"


def test_server_listens_on_loopback_tcp(thrift_server):
    with socket.create_connection((thrift_server.host, thrift_server.port), timeout=5) as conn:
        assert conn.getpeername() == ("127.0.0.1", thrift_server.port)


def test_thrift_target_builds_and_reads_back(thrift_server):
    run = run_dbt(["run", "--select", "smoke_numbers"], target="thrift", schema=SCHEMA, env=thrift_server.dbt_env())
    assert run.node_results()["smoke_numbers"].status == "success"
    # Read back over a separate TCP connection, not through dbt.
    with _cursor(thrift_server) as cur:
        cur.execute(f"select count(*), sum(id), count(distinct id_mod_7) from {SCHEMA}.smoke_numbers")
        assert cur.fetchall() == [(100, sum(range(100)), 7)]
        # The native UDF jar was loaded into the server through --jars + spark.sql.extensions.
        cur.execute("show functions like 'hilbert_key'")
        assert [r[0] for r in cur.fetchall()] == ["hilbert_key"]


def test_queries_skip_files_over_thrift(thrift_server):
    """The server's planner prunes files by footer min/max: 8 files, each one id range; a query
    plans exactly the files whose id range meets it and answers as with skipping off."""
    with _cursor(thrift_server) as cur:
        _new_table(cur, "skipping", "select /*+ REPARTITION_BY_RANGE(8, id) */ id, id * 3 as v from range(0, 8000)")
        query = f"select count(*), sum(v) from {SCHEMA}.skipping where id >= 1000 and id < 1500"
        cur.execute(f"explain {query}")
        plan = "\n".join(r[0] for r in cur.fetchall())
        cur.execute(query)
        on = cur.fetchall()
        cur.execute("set spark.sparkclustering.skipping.enabled=false")
        cur.execute(query)
        off = cur.fetchall()
        cur.execute(f"select min(id), max(id) from {SCHEMA}.skipping group by input_file_name()")
        ranges = cur.fetchall()
    assert on == off == [(500, 3 * sum(range(1000, 1500)))]
    meeting = sum(1 for lo, hi in ranges if lo < 1500 and hi >= 1000)
    assert len(ranges) == 8 and meeting < 8
    assert skipping_summary(plan) == {"kept": meeting, "total": 8, "sidecar": 0, "footers": 8, "unknown": 0}, plan


def test_observed_workload_over_thrift(thrift_server):
    """Queries sent over Thrift are recorded by the server's planner rule, and a dbt build over
    Thrift with cluster_workload: observed lays the table out for them."""
    env = thrift_server.dbt_env()
    with _cursor(thrift_server) as cur:
        source = _new_table(cur, "observed_src", "select id, cast(pmod(xxhash64(id), 1000) as int) as v from range(0, 8000)")
        vars_ = {"case_source": source, "case_alias": "observed_auto", "case_method": "auto",
                 "case_cluster_by": ["id", "v"], "case_num_files": 8, "case_workload": "observed"}
        run_dbt(["run", "--select", "cluster_case"], target="thrift", schema=SCHEMA, vars=vars_, env=env)
        cur.execute(f"show tblproperties {SCHEMA}.observed_auto ('spark_clustering.layout_name')")
        assert cur.fetchall()[0][1] == "hilbert(id, v)"  # nothing observed yet
        ranges = [(lo, lo + 799) for lo in range(0, 7200, 700)]
        for lo, hi in ranges:
            cur.execute(f"select count(*) from {SCHEMA}.observed_auto where id between {lo} and {hi}")
            assert cur.fetchall() == [(800,)]
        cur.execute(f"select box, queries from observed_workload('{SCHEMA}.observed_auto')")
        seen = sorted(cur.fetchall())
        assert sorted(json.loads(b)["id"] for b, _ in seen) == sorted([lo, hi] for lo, hi in ranges), seen
        run_dbt(["run", "--select", "cluster_case"], target="thrift", schema=SCHEMA, vars=vars_, env=env)
        # this session listed the table's files before the rebuild swapped them (docs/concurrency.md)
        cur.execute(f"refresh table {SCHEMA}.observed_auto")
        cur.execute(f"show tblproperties {SCHEMA}.observed_auto ('spark_clustering.layout_name')")
        layout = cur.fetchall()[0][1]
        cur.execute(f"select min(id), max(id) from {SCHEMA}.observed_auto group by input_file_name()")
        files = cur.fetchall()
    # the queries' id ranges each meet at most 3 of the 8 files (a uniform 2-column curve: ~5)
    assert layout != "hilbert(id, v)", layout
    per_query = [sum(1 for a, b in files if a <= hi and b >= lo) for lo, hi in ranges]
    assert len(files) == 8 and max(per_query) <= 3, (layout, files, per_query)


def test_server_process_is_gone_after_stop(thrift_server):
    pid = thrift_server.pid
    assert pid_alive(pid)
    thrift_server.stop()
    assert not pid_alive(pid), f"thrift server pid {pid} still alive after stop()"


@pytest.fixture(scope="module", params=formats_this_run())  # one per run of scripts/test
def format_thrift_server(request):
    """A server whose spark_catalog serves Delta (or Iceberg) tables, set up as docs/table_formats.md
    says (the package's extension first, then the format's; DeltaCatalog / SparkSessionCatalog; the
    format's jars)."""
    yield from module_server(ThriftServer(WORK / f"thrift-{request.param}-{os.getpid()}", table_format=request.param),
                             request)


def test_a_format_model_builds_and_reclusters_over_thrift(format_thrift_server):
    """The same models over a Thrift server serving Delta / Iceberg: a clustered_table build is one
    table of the format with the rows of its source, and after an unclustered append, recluster
    (final) commits the format's rewrite (Delta OPTIMIZE, Iceberg replace) with every row kept."""
    from spark_clustering_dev.dbt import run_operation_json

    server = format_thrift_server
    fmt = server.table_format
    env = server.dbt_env()
    with _cursor(server) as cur:
        source = _new_table(cur, f"{fmt}_src", "select id, cast(pmod(xxhash64(id), 997) as int) as a, "
                                               "cast(pmod(xxhash64(id, 7), 991) as int) as b from range(0, 9000)")
        table = f"{SCHEMA}.{fmt}_clustered"
        vars_ = {"case_source": source, "case_alias": f"{fmt}_clustered", "case_format": fmt,
                 "case_cluster_by": ["a", "b"], "case_num_files": 4}
        run_dbt(["run", "--select", "cluster_case"], target="thrift", schema=SCHEMA, vars=vars_, env=env)
        cur.execute(f"insert into {table} select /*+ repartition(2) */ id, cast(pmod(xxhash64(id), 997) as int), "
                    f"cast(pmod(xxhash64(id, 7), 991) as int) from range(9000, 10000)")
        outcome = run_operation_json("spark_clustering.recluster", {"relation": table, "final": True}, prefix="recluster",
                                     target="thrift", schema=SCHEMA, vars=vars_, env=env)
        # this cursor's session cached the table when it appended (Iceberg's catalog cache, 30 s by
        # default): the recluster committed in dbt's session since
        cur.execute(f"refresh table {table}")
        cur.execute(f"describe table extended {table}")
        provider = [r[1] for r in cur.fetchall() if r[0] == "Provider"]
        cur.execute(f"select count(*), sum(hash(id, a, b)) from {table}")
        got = cur.fetchall()
        cur.execute(f"select count(*), sum(hash(id, cast(pmod(xxhash64(id), 997) as int), "
                    f"cast(pmod(xxhash64(id, 7), 991) as int))) from range(0, 10000)")
        want = cur.fetchall()
        if fmt == "delta":
            cur.execute(f"describe history {table}")
            operations = [r[4] for r in cur.fetchall()][::-1]  # version, timestamp, user id, user name, operation
        else:
            cur.execute(f"select operation from {table}.snapshots order by committed_at")
            operations = [r[0] for r in cur.fetchall()]
    assert provider == [fmt], provider
    assert got == want and got[0][0] == 10000, (got, want)
    assert outcome["decision"] == "reclustered" and all(r["status"] == "committed" for r in outcome["rounds"]), outcome
    # the build, the append, then the recluster's rewrite commit(s) of the format (on Delta also the
    # commit of the table properties it records, which Iceberg keeps without a snapshot)
    build, append, rewrite = {"delta": ("CREATE OR REPLACE TABLE AS SELECT", "WRITE", "OPTIMIZE"),
                              "iceberg": ("overwrite", "append", "replace")}[fmt]
    assert operations[:2] == [build, append] and rewrite in operations[2:], operations
    assert set(operations[2:]) <= {rewrite, "SET TBLPROPERTIES"}, operations
