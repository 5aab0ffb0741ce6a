"""Two real `dbt` processes on one table at once, through a real Spark Thrift Server (one metastore,
as a team's scheduler and a developer share it): no row is lost or duplicated, and the second
writer either waits for the first (the table's lease) or stops with a message naming the holder.

The first process is held inside its recluster (test hook recluster.after_validate: {pause: s},
var spark_clustering_test_hooks) so the second one is sure to start while the first holds the lease.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from spark_clustering_dev.dbt import run_dbt
from spark_clustering_dev.paths import INTEGRATION_TESTS, REPO, WORK
from spark_clustering_dev.recluster_case import DATA_COLUMNS, ROW_SQL, MODEL
from spark_clustering_dev.thrift import ThriftServer

pytestmark = pytest.mark.thrift

SCHEMA = "it_concurrent"
GATE = {"max_average_depth": 1.5}  # every multi-file layout fails: each run rewrites something
DBT = REPO / ".venv" / "bin" / "dbt"


@pytest.fixture(scope="module")
def server():
    work = WORK / f"concurrent-{os.getpid()}"
    srv = ThriftServer(work).start()
    yield srv
    srv.stop()
    shutil.rmtree(work, ignore_errors=True)


class DbtProcess:
    """`dbt <args>` in a process of its own (own target and log paths: two run at once)."""

    def __init__(self, server, name: str, args: list[str], vars_: dict):
        self.name = name
        out = WORK / f"concurrent-{os.getpid()}" / name
        out.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "SPARK_CLUSTERING_TARGET": "thrift", "SPARK_CLUSTERING_SCHEMA": SCHEMA, **server.dbt_env(),
               "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "PYTHONUNBUFFERED": "1"}
        cmd = [str(DBT), *args, "--project-dir", str(INTEGRATION_TESTS), "--profiles-dir", str(INTEGRATION_TESTS),
               "--target-path", str(out / "target"), "--log-path", str(out / "logs"), "--vars", json.dumps(vars_)]
        self.proc = subprocess.Popen(cmd, cwd=INTEGRATION_TESTS, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self.pump = threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True)
        self.pump.start()

    def wait_for(self, text: str, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        pytest.fail(f"{self.name} never printed {text!r}:\n{self.output[-4000:]}")

    def finish(self, timeout: float = 600) -> int:
        code = self.proc.wait(timeout=timeout)
        self.pump.join(timeout=10)
        return code

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def errors(self) -> str:
        """dbt's own lines (errors first), without the Java stack frames it echoes."""
        lines = [x for x in self.lines if not x.lstrip().startswith("at ")]
        return "".join([x for x in lines if "rror" in x][:10] + ["...\n"] + lines[-30:])


def model_vars(alias, start, end, **extra):
    return {"rc_alias": alias, "rc_start": start, "rc_end": end, "rc_file_rows": 2000, "rc_recluster": GATE, **extra}


def rows_of(server, table) -> tuple[int, int, int]:
    from pyhive import hive

    cols = ", ".join(DATA_COLUMNS)
    conn = hive.connect(host=server.host, port=server.port, username="dbt")
    try:
        cur = conn.cursor()
        cur.execute(f"refresh table {table}")
        cur.execute(f"select count(*), coalesce(sum(cast(hash({cols}) as bigint)), 0), "
                    f"coalesce(bit_xor(xxhash64({cols})), 0) from {table}")
        return tuple(int(x) for x in cur.fetchall()[0])
    finally:
        conn.close()


def expected_rows(server, ranges) -> tuple[int, int, int]:
    from pyhive import hive

    union = " union all ".join(f"{ROW_SQL} from range({a}, {b})" for a, b in ranges)
    cols = ", ".join(DATA_COLUMNS)
    conn = hive.connect(host=server.host, port=server.port, username="dbt")
    try:
        cur = conn.cursor()
        cur.execute(f"select count(*), coalesce(sum(cast(hash({cols}) as bigint)), 0), "
                    f"coalesce(bit_xor(xxhash64({cols})), 0) from ({union})")
        return tuple(int(x) for x in cur.fetchall()[0])
    finally:
        conn.close()


def staging_left(server, table) -> list[str]:
    from pyhive import hive

    conn = hive.connect(host=server.host, port=server.port, username="dbt")
    try:
        cur = conn.cursor()
        cur.execute(f"describe table extended {table}")
        loc = next(r[1] for r in cur.fetchall() if r[0] == "Location")
        cur.execute(f"show tables in {SCHEMA}")
        tables = [r[1] for r in cur.fetchall() if "__sc_" in r[1]]
    finally:
        conn.close()
    root = Path(re.sub(r"^file:", "", loc))
    return sorted(p.name for p in root.iterdir() if p.name.startswith(("_sc_recluster_", "_sc_damaged_"))) + tables


def paused_writer(server, name, args, vars_, seconds) -> DbtProcess:
    """A dbt process held inside its recluster, after validation, for `seconds`: it holds the lease."""
    p = DbtProcess(server, name, args, {**vars_, "spark_clustering_test_hooks": {"recluster.after_validate": {"pause": seconds}}})
    p.wait_for("spark_clustering: paused at recluster.after_validate")
    return p


def in_process(server, args, vars_) -> None:
    """`dbt <args>` in this process, alone on the table (no other writer yet): the table's setup
    before the two processes race. A dbt process of its own parses the whole project first (a
    changed --vars rules out partial parsing: 8-14 s of CPU on a busy machine); here dbt's
    per-process parse caches apply."""
    run_dbt(args, target="thrift", schema=SCHEMA, vars=vars_, env=server.dbt_env())


def seeded(server, alias, rows) -> str:
    """The model built as `alias` with ids [0, rows); returns its table."""
    in_process(server, ["run", "--select", MODEL], model_vars(alias, 0, rows))
    return f"{SCHEMA}.{alias}"


def assert_table(server, table, ranges):
    """Exactly the rows of the id `ranges`, and no staging left behind."""
    assert rows_of(server, table) == expected_rows(server, ranges)
    assert staging_left(server, table) == []


def test_two_runs_of_one_recluster_model_second_waits_and_no_row_is_lost(server):
    alias = "cc_twice"
    table = seeded(server, alias, 8000)
    first = paused_writer(server, "first", ["run", "--select", MODEL], model_vars(alias, 8000, 10000), 12)
    # the second run appends (no lease needed: appends never conflict) and its recluster waits
    second = DbtProcess(server, "second", ["run", "--select", MODEL], model_vars(alias, 10000, 11000))
    assert first.finish() == 0, first.errors()
    assert second.finish() == 0, second.errors()
    assert "waited" in second.output and "for the lease of" in second.output, second.output[-3000:]
    assert_table(server, table, [(0, 11000)])


def test_recluster_and_a_clustered_table_rebuild_of_the_same_table(server):
    alias = "cc_rebuild"
    table = seeded(server, alias, 6000)
    in_process(server, ["run", "--select", MODEL], model_vars(alias, 6000, 8000, spark_clustering_recluster=False))
    recluster = paused_writer(server, "recluster", ["run-operation", "recluster", "--args",
                                                    json.dumps({"relation": table})], model_vars(alias, 0, 0), 12)
    rebuild = DbtProcess(server, "rebuild", ["run", "--select", MODEL],
                         model_vars(alias, 0, 5000, rc_materialized="clustered_table", spark_clustering_recluster=False))
    assert recluster.finish() == 0, recluster.errors()
    assert rebuild.finish() == 0, rebuild.errors()
    assert "waited" in rebuild.output, rebuild.output[-3000:]
    # the rebuild came last: exactly its rows
    assert_table(server, table, [(0, 5000)])


def test_second_writer_that_will_not_wait_stops_naming_the_holder(server):
    alias = "cc_nowait"
    table = seeded(server, alias, 6000)
    first = paused_writer(server, "first", ["run", "--select", MODEL], model_vars(alias, 6000, 8000), 10)
    second = DbtProcess(server, "second", ["run-operation", "recluster", "--args", json.dumps({"relation": table})],
                        model_vars(alias, 0, 0, spark_clustering_lease_wait_seconds=1))
    assert second.finish() != 0
    assert first.finish() == 0, first.errors()
    text = second.output
    assert f"table {table} is being written by dbt" in text and "recluster" in text, text[-3000:]
    assert "waited 1." in text and "cluster_lease_wait_seconds" in text, text[-3000:]
    assert_table(server, table, [(0, 8000)])
