"""A real Spark Thrift Server (separate JVM, TCP on loopback) builds a model through `method: thrift`."""
from __future__ import annotations

import os
import shutil
import socket

import pytest

from harness.dbt import run_dbt
from harness.paths import WORK
from harness.thrift import ThriftServer, pid_alive

pytestmark = pytest.mark.thrift

SCHEMA = "it_thrift"


@pytest.fixture(scope="module")
def thrift_server(request):
    work = WORK / f"thrift-{os.getpid()}"
    server = ThriftServer(work).start()
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled():
        print(f"\n[thrift] server pid {server.pid} listening on {server.host}:{server.port}")
    yield server
    server.stop()
    shutil.rmtree(work, ignore_errors=True)


def _env(server: ThriftServer) -> dict[str, str]:
    return {"SPARK_CLUSTERING_THRIFT_HOST": server.host, "SPARK_CLUSTERING_THRIFT_PORT": str(server.port)}


def test_server_listens_on_loopback_tcp(thrift_server):
    with socket.create_connection((thrift_server.host, thrift_server.port), timeout=5) as conn:
        assert conn.getpeername() == ("127.0.0.1", thrift_server.port)


def test_thrift_target_builds_and_reads_back(thrift_server):
    from pyhive import hive

    run = run_dbt(["run", "--select", "smoke_numbers"], target="thrift", schema=SCHEMA, env=_env(thrift_server))
    assert run.node_results()["smoke_numbers"].status == "success"
    # Read back over a separate TCP connection, not through dbt.
    conn = hive.connect(host=thrift_server.host, port=thrift_server.port, username="dbt")
    try:
        cur = conn.cursor()
        cur.execute(f"select count(*), sum(id), count(distinct id_mod_7) from {SCHEMA}.smoke_numbers")
        assert cur.fetchall() == [(100, sum(range(100)), 7)]
        # The native UDF jar was loaded into the server through --jars + spark.sql.extensions.
        cur.execute("show functions like 'hilbert_key'")
        assert [r[0] for r in cur.fetchall()] == ["hilbert_key"]
    finally:
        conn.close()


def test_server_process_is_gone_after_stop(thrift_server):
    pid = thrift_server.pid
    assert pid_alive(pid)
    thrift_server.stop()
    assert not pid_alive(pid), f"thrift server pid {pid} still alive after stop()"
