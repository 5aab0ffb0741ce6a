"""`kill -9` of dbt + its Spark JVM at a random moment of a Delta / Iceberg rebuild or recluster, one
round per format per run (a new moment every run; SPARK_CLUSTERING_KILL_SEED repeats one).

Everything runs in child processes (harness.recluster_child, each with its own embedded Spark of the
format over its own warehouse), so this module starts no session of its own: it is scheduled with
the slow plain modules (conftest), not in the format modules' tail."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from harness.format_table_cases import ROWS
from harness.recluster_child import fingerprints_printed, kill_seed, source_tables
from spark_clustering_dev.paths import INTEGRATION_TESTS
from spark_clustering_dev.spark import formats_this_run

# the recluster round's table (the rebuild round's is `killed`, in the same schema)
RECLUSTERED = "rkilled"


def _child(plan: dict, kill_after_marker: str | None = None, fraction: float = 0.0) -> str:
    """Run harness.recluster_child with `plan`; with kill_after_marker, SIGKILL its process group
    (Python + its Spark JVM) after it prints that marker, `fraction` times the time between its
    first marker and that one later (the plan times a first build with the two markers: the kill
    lands before or after the rebuild's commit whatever the machine's speed). Returns its output."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "SPARK_CLUSTERING_TARGET": "session"}
    proc = subprocess.Popen([sys.executable, "-m", "harness.recluster_child", json.dumps(plan)], cwd=INTEGRATION_TESTS,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines, marked, said = [], threading.Event(), []

    def pump():
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("recluster_child_say: "):
                said.append(time.monotonic())
            if kill_after_marker and f"recluster_child_say: {kill_after_marker}" in line:
                marked.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    if kill_after_marker:
        deadline = time.monotonic() + 600
        while not marked.is_set() and proc.poll() is None and time.monotonic() < deadline:
            marked.wait(0.2)
        assert marked.is_set(), "".join(lines[-60:])
        time.sleep(fraction * (said[-1] - said[0]))
        os.killpg(proc.pid, signal.SIGKILL)
    code = proc.wait(timeout=600)
    reader.join(timeout=10)
    out = "".join(lines)
    # a kill that came after the child had finished (a late fraction on a fast rebuild) is a round too
    assert code in ((-signal.SIGKILL, 0) if kill_after_marker else (0,)), (code, out[-4000:])
    return out


@pytest.fixture(scope="module", params=formats_this_run())  # one per run of scripts/test
def table_format(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def rounds(table_format, tmp_path_factory) -> dict:
    """Both kill rounds of a format in three child processes over one warehouse, not four: the
    process that recovers the killed rebuild (and rebuilds) then sets up the recluster round and is
    killed in it, and a third recovers that. A child's start and its first dbt parse are most of a
    round's time. Returns each round's seed, kill fraction and the outputs the tests check."""
    work = tmp_path_factory.mktemp(f"killed-{table_format}") / "work"
    schema = f"it_kill_{table_format}"
    base = {"work": str(work), "schema": schema, "table_format": table_format}

    # the rebuild round
    rebuild_seed = kill_seed()
    rebuild_fraction = random.Random(rebuild_seed).uniform(0.0, 1.0)  # of the first build's time

    def run_model(source):
        return {"dbt": ["run", "--select", "cluster_case"],
                "vars": {"case_source": f"{schema}.{source}", "case_alias": "killed", "case_format": table_format,
                         "case_num_files": 4, "case_cluster_by": ["a"]}}

    _child({**base, "steps": [
        *source_tables(schema, [("uniform", 0, ROWS), ("shifted", 7 * ROWS, 8 * ROWS)]), {"say": "building"},
        run_model("uniform"), {"say": "rebuilding"}, run_model("shifted")]},
        kill_after_marker="rebuilding", fraction=rebuild_fraction)
    tables = [f"{schema}.killed", f"{schema}.uniform", f"{schema}.shifted"]
    rebuild_recovery = [{"fingerprints": tables}, run_model("shifted"), {"fingerprints": tables}]

    # the recluster round (tables of its own beside the rebuild round's), set up and killed by the
    # process that recovered the rebuild round
    recluster_seed = kill_seed()
    recluster_fraction = random.Random(recluster_seed).uniform(0.0, 0.8)  # of a build's time: a recluster takes a little less
    table = f"{schema}.{RECLUSTERED}"
    case = {"case_source": f"{schema}.r_uniform", "case_alias": RECLUSTERED, "case_format": table_format,
            "case_file_rows": ROWS // 4, "case_cluster_by": ["a"]}
    recluster_steps = [
        *source_tables(schema, [("r_uniform", 0, ROWS), ("r_more", ROWS, ROWS + ROWS // 5)]),
        {"say": "building"}, {"dbt": ["run", "--select", "cluster_case"], "vars": case},
        {"sql": f"insert into {table} select /*+ repartition(4) */ id, a from {schema}.r_more"},
        {"say": "reclustering"},
        {"dbt": ["run-operation", "spark_clustering.recluster", "--args", json.dumps({"relation": table})],
         "vars": case}]
    both = _child({**base, "steps": rebuild_recovery + recluster_steps},
                  kill_after_marker="reclustering", fraction=recluster_fraction)
    rebuilt, killed = both.split("recluster_child_say: building\n", 1)
    expected = f"{schema}.r_expected"
    recovered = _child({**base, "steps": [
        {"sql": f"create or replace view {expected} as select * from {schema}.r_uniform union all select * from {schema}.r_more"},
        {"fingerprints": [table, expected]},
        {"dbt": ["run-operation", "spark_clustering.recluster", "--args",
                 json.dumps({"relation": table, "final": True})], "vars": case},
        {"fingerprints": [table, expected]},
        {"sql": f"show tables in {schema}"}]})
    return {"work": work, "rebuild": (rebuild_seed, rebuild_fraction, rebuilt),
            "recluster": (recluster_seed, recluster_fraction, killed, recovered)}


def test_a_rebuild_killed_at_a_random_moment_leaves_a_whole_version(table_format, rounds):
    """`kill -9` of the process (dbt + its Spark JVM) at a random moment of a rebuild: a new process
    reads exactly the old build's rows or the new one's, and its own rebuild goes through (no lock,
    staging or log entry of the killed run stands in its way). One round per run (rounds), a new
    moment every run: SPARK_CLUSTERING_KILL_SEED repeats one."""
    seed, fraction, out = rounds["rebuild"]
    (table, uniform, shifted), (after, _, shifted_again) = fingerprints_printed(out)
    assert table in (uniform, shifted), \
        f"seed {seed}, killed {fraction:.2f} of a build in: {table} is neither {uniform} nor {shifted}"
    assert after == shifted == shifted_again
    print(f"{table_format}: seed {seed}, killed {fraction:.2f} of a build's time into the rebuild; the table then held the "
          f"{'old' if table == uniform else 'new'} build")


def test_a_recluster_killed_at_a_random_moment_leaves_the_rows_and_the_next_one_goes_through(table_format, rounds):
    """`kill -9` of dbt + its JVM at a random moment of a recluster (from planning to after its
    commit): a new process reads exactly the table's rows, and its recluster (recovering what the
    killed one left) commits; no staging table or staging metadata is left. SPARK_CLUSTERING_KILL_SEED
    repeats one moment."""
    seed, fraction, killed, out = rounds["recluster"]
    schema = f"it_kill_{table_format}"
    last = [x for x in killed.splitlines() if "spark_clustering: recluster" in x][-1:]
    (table, want), (after, want_again) = fingerprints_printed(out)
    assert table == want and after == want_again == want, f"seed {seed}, fraction {fraction:.2f}: {out[-3000:]}"
    assert "recluster_child" in out
    root = next(p for p in rounds["work"].rglob(RECLUSTERED) if f"{schema}.db" in str(p))
    meta = "sc-l*/_delta_log" if table_format == "delta" else "data/sc-l*/metadata"
    assert not list(root.glob(meta)), (seed, list(root.glob(meta)))
    print(f"{table_format}: seed {seed}, killed {fraction:.2f} of a build's time into the recluster; "
          f"its last word {last}; recovered: {[x for x in out.splitlines() if 'interrupted run' in x][:2]}")
