"""`kill -9` at the steps of a recluster: the next run finishes or rolls back, no row is lost or
duplicated and nothing staged is left behind. Each run kills at two of the seven steps, drawn at
random (one before the journal is published: rolled back, or after_plan's nothing to undo; and one
after it, rolled forward; the seed is printed and SPARK_CLUSTERING_KILL_SEED repeats it;
SPARK_CLUSTERING_KILL_STEPS=all kills at every step), so every step is killed in turn: a kill costs
a child process (Python, dbt's parse, a Spark JVM, ~60 s of a core in CI), and all seven, or four,
no longer fit CI's time.

Each step runs in a child process (harness.recluster_child) with its own embedded Spark and Derby
metastore over one warehouse: the child runs dbt, pauses at the step (the macro's steps through the
test hook var spark_clustering_test_hooks, the jar's through the Spark conf
spark.sparkclustering.test.pauseAt: a sleep inside Spark, printed as `spark_clustering: paused at <step>`) and this test kills its whole
process group (Python + the Spark JVM) with SIGKILL. The next child starts with the incremental
model's next run (reclustering switched off by the project var: recovery still runs), then checks
rows and leftovers.
"""
from __future__ import annotations

import json
import os
import random
import signal

import pytest

from harness.recluster_child import kill_seed, pause_at, run_child
from spark_clustering_dev.paths import WORK
from spark_clustering_dev.s3 import S3_ENDPOINT_ENV

ALIAS = "rc_kill"
SCHEMA = "it_recluster_kill"
FILE_ROWS = 2000
# max_average_depth 1.5: any multi-file layout fails the gate, so every call rewrites something.
GATE = {"max_average_depth": 1.5}
# The steps of a recluster, in order: planned (boundaries read), staged files written, staged files
# validated, journal published, first staged file moved in, all moved in, replaced files deleted.
STEPS = ["after_plan", "after_staging_write", "after_validate", "after_manifest", "after_first_move",
         "after_moves", "after_deletes"]
BEFORE_JOURNAL = 3  # the first three: rolled back (or nothing to undo); the others rolled forward


def steps_this_run() -> tuple[list[str], int | None]:
    """The steps this run kills at, in their order, and the seed that drew them (None: every step)."""
    if os.environ.get("SPARK_CLUSTERING_KILL_STEPS") == "all":
        return STEPS, None
    seed = kill_seed()
    rng = random.Random(seed)
    return [rng.choice(STEPS[:BEFORE_JOURNAL]), rng.choice(STEPS[BEFORE_JOURNAL:])], seed


def model_vars(start, end, **extra):
    return {"rc_alias": ALIAS, "rc_start": start, "rc_end": end, "rc_file_rows": FILE_ROWS,
            "rc_recluster": GATE, **extra}


def check_line(output: str) -> dict:
    found = [line for line in output.splitlines() if line.startswith("recluster_child: ")]
    assert found, output[-4000:]
    return json.loads(found[-1].split(": ", 1)[1])


@pytest.fixture(scope="module")
def work():
    path = WORK / f"recluster-kill-{os.getpid()}"
    yield path
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def recovery_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if "spark_clustering: recluster" in line and "interrupted run" in line]


def recovery_actions(output: str) -> list[str]:
    """What the post-hook reported doing with interrupted runs: 'rolled back' / 'rolled forward'."""
    return ["rolled forward" if "rolled forward" in line else "rolled back"
            for line in output.splitlines() if "spark_clustering: recluster" in line and "interrupted run" in line]


def kill_at_steps(work, schema: str, steps: list[str], env: dict | None = None, after_kill=None,
                  **plan_extra) -> dict:
    """Append + recluster killed at each of `steps` in turn, each kill recovered by the next run;
    returns each step's check (rows, leftovers) and recovery actions after asserting them."""
    run_model = ["run", "--select", "recluster_case"]
    batches = [(0, 12000)]
    pending = [{"dbt": run_model, "vars": model_vars(0, 12000)}]  # the clustered table
    checks, recovered, lines = {}, {}, {}
    for i, step in enumerate(steps):
        # The model's next run appends 4000 rows; its post-hook reclusters and is killed at `step`.
        start = batches[-1][1]
        batches.append((start, start + 4000))
        setup, hook_vars, marker = pause_at(step)
        plan = pending + setup + [{"dbt": run_model, "vars": model_vars(start, start + 4000, **hook_vars)}]
        code, output = run_child({"work": str(work), "schema": schema, "steps": plan, **plan_extra},
                                 kill_at=marker, env=env)
        assert code == -signal.SIGKILL, (step, code, output[-3000:])
        if after_kill:
            after_kill(step)
        if i > 0:
            checks[steps[i - 1]] = check_line(output)
            recovered[steps[i - 1]] = recovery_actions(output)
            lines[steps[i - 1]] = recovery_lines(output)
        # The run after the crash appends 1000 rows with reclustering switched off: its post-hook
        # still recovers the killed commit (and only that), then the child checks the rows.
        start = batches[-1][1]
        batches.append((start, start + 1000))
        pending = [{"dbt": run_model, "vars": model_vars(start, start + 1000, spark_clustering_recluster=False)},
                   {"check": {"alias": ALIAS, "batches": [list(b) for b in batches]}}]
    code, output = run_child({"work": str(work), "schema": schema, "steps": pending, **plan_extra},
                             kill_at=None, env=env)
    assert code == 0, output[-4000:]
    checks[steps[-1]] = check_line(output)
    recovered[steps[-1]] = recovery_actions(output)
    lines[steps[-1]] = recovery_lines(output)

    print(f"[recluster kill{' s3' if env else ''}] " + json.dumps(
        {k: {"recovery": recovered[k], "rows": v["actual"][0], "files": v["files"]} for k, v in checks.items()}))
    assert list(checks) == steps
    for step, check in checks.items():
        assert check["rows_match"], (step, check)  # no row lost or duplicated
        assert check["leftovers"] == [], (step, check)
    # Killed before the journal was published: rolled back; after it: rolled forward. (Killed
    # after the plan nothing was staged yet; the staging table/directory may not exist.)
    for step in {"after_staging_write", "after_validate"} & set(steps):
        assert recovered[step] == ["rolled back"], (step, lines[step])
    for step in {"after_manifest", "after_first_move", "after_moves", "after_deletes"} & set(steps):
        assert recovered[step] == ["rolled forward"], (step, lines[step])
    return checks


def test_kill_at_steps_drawn_at_random_loses_nothing(work):
    steps, seed = steps_this_run()
    print(f"[recluster kill] steps {steps} (seed {seed}; SPARK_CLUSTERING_KILL_SEED repeats them)")
    kill_at_steps(work, SCHEMA, steps)


def test_kill_at_the_steps_of_a_recluster_on_s3_loses_nothing(work, s3):
    """On S3A the rewritten files are pending uploads to their final names, completed by the commit
    (docs/object_stores.md): killed with its uploads pending (rolled back: aborted) and after its
    first completion (rolled forward: the others completed). The other steps are the local test's
    and recover alike on S3 (after the deletes too, which this test killed at until CI's time ran
    short: nothing is pending then). No row lost or
    doubled, and no upload left in progress: also none of a task killed mid-write, which leaves an
    upload without a `.pending` file (made here beside the killed run's)."""
    bucket = "it-recluster-kill-pending"
    s3.create_bucket(bucket)
    schema = "it_recluster_kill_pending"
    strays = []

    def stray_upload(step):
        if step != "after_staging_write":
            return
        magic = {k.split("/")[2] for k in s3.keys(bucket, f"{schema}.db/{ALIAS}/") if k.split("/")[2].startswith("__magic_job-")}
        assert len(magic) == 1, magic  # the killed run's pending uploads
        run_id = next(iter(magic)).removeprefix("__magic_job-")
        assert s3.uploads(bucket), "the killed run left no upload in progress"
        key = f"{schema}.db/{ALIAS}/sc-l1-{run_id}-00099-a0-c000.snappy.parquet"
        strays.append(s3.client().create_multipart_upload(Bucket=bucket, Key=key)["Key"])

    # S3A's committers abort every upload in progress below a directory they write to, unless told
    # not to: with that default the next run's append (before its post-hook recovers) aborts the
    # killed run's uploads, and a journal is rolled back instead of forward (safe either way, as
    # docs/object_stores.md says); here the sessions keep them, so the recovery completes them
    conf = {"spark.hadoop.fs.s3a.committer.abort.pending.uploads": "false"}
    kill_at_steps(work / "s3-pending", schema, ["after_staging_write", "after_first_move"],
                  env={S3_ENDPOINT_ENV: s3.endpoint}, after_kill=stray_upload,
                  schema_location=f"s3a://{bucket}/{schema}.db", conf=conf)
    assert strays and s3.uploads(bucket) == []


SWAP_ALIAS = "rc_kill_swap"


@pytest.fixture(scope="module")
def without_the_jar(work) -> tuple[str, str]:
    """One child process started without the jar runs both tests' plans, one after the other (each
    on a table of its own): a child's start and its first dbt parse are most of either test's time.
    Returns each plan's output: (recluster's, clustered_table swap's)."""
    table_vars = {"rc_materialized": "clustered_table", "rc_skip": True}
    failing = {"spark_clustering_test_hooks": {"clustered_table.after_backup": "fail"}}

    def swap_vars(end, **extra):
        return {**model_vars(0, end, **table_vars, **extra), "rc_alias": SWAP_ALIAS}

    plan = {"work": str(work / "no-jar"), "schema": SCHEMA, "with_jar": False, "steps": [
        # test_without_the_extension_recluster_says_what_to_load
        {"dbt": ["run", "--select", "recluster_case"], "vars": model_vars(0, 3000), "expect_failure": True},
        {"dbt": ["run", "--select", "recluster_case"],
         "vars": model_vars(3000, 4000, spark_clustering_recluster=False)},
        {"check": {"alias": ALIAS, "batches": [[0, 4000]]}},
        # file_stats of two tables in one invocation: the rows are read, and the log says so once
        {"dbt": ["run-operation", "metrics_file_stats_sql", "--args",
                 json.dumps({"schema": SCHEMA, "tables": [ALIAS, ALIAS], "columns": ["a", "b"]})]},
        {"say": "clustered_table swap"},
        # test_without_the_extension_clustered_table_swaps_by_sql_and_recovers
        {"dbt": ["run", "--select", "recluster_case"], "vars": swap_vars(3000)},
        {"dbt": ["run", "--select", "recluster_case"], "vars": swap_vars(5000, **failing), "expect_failure": True},
        {"tables": True},
        {"dbt": ["run", "--select", "recluster_case"], "vars": swap_vars(6000)},
        {"check": {"alias": SWAP_ALIAS, "batches": [[0, 6000]]}},
        {"tables": True},
    ]}
    code, output = run_child(plan, kill_at=None)
    assert code == 0, output[-4000:]
    recluster, swap = output.split("recluster_child_say: clustered_table swap\n")
    return recluster, swap


def test_without_the_extension_recluster_says_what_to_load(without_the_jar):
    """A Spark started without the jar: the post-hook fails naming the model and the confs to set;
    with reclustering switched off the same model builds."""
    output = without_the_jar[0]
    [line] = [x for x in output.splitlines() if x.startswith("recluster_child_error: ")]
    text = " ".join(json.loads(line.split(": ", 1)[1]))
    assert "recluster_case" in text and "Spark extension is not loaded" in text, text
    assert "spark.sql.extensions=org.apache.spark.sql.sparkclustering.SparkClusteringExtensions" in text, text
    assert "skip_recluster" in text, text
    # the failed post-hook left the model's rows in place; the next run appended its own
    check = check_line(output)
    assert check["rows_match"] and check["leftovers"] == [], check
    # without the jar file_stats of a parquet table groups every row by its file, and says so once
    # per invocation (two tables measured in it)
    said = [x for x in output.splitlines() if "file_stats of a parquet/orc table reads the clustering columns of every row" in x]
    assert len(said) == 1 and "the Spark extension is not loaded" in said[0], said
    [sql_line] = [x for x in output.splitlines() if x.startswith("metrics_file_stats_sql: ")]
    for sql in json.loads(sql_line.split(": ", 1)[1]).values():
        assert "table_file_stats" not in sql and "group by _metadata.file_path" in " ".join(sql.split()), sql


def test_without_the_extension_clustered_table_swaps_by_sql_and_recovers(without_the_jar):
    """A Spark started without the jar: clustered_table swaps by one SQL statement per step (the
    jar's swap_staging_table is not there), the macros' test hook fails it between the two renames,
    and the next build finishes that swap and builds: the model's rows, nothing left beside them."""
    output = without_the_jar[1]
    [line] = [x for x in output.splitlines() if x.startswith("recluster_child_error: ")]
    assert "injected failure at clustered_table.after_backup" in line, line
    # the interrupted swap (live table renamed away, validated staging table beside it) was finished
    assert "finishing an interrupted swap" in output, output[-4000:]
    # failed between the renames: the previous table under the backup name, the validated staging beside it
    after_failure, after_recovery = [json.loads(x.split(": ", 1)[1]) for x in output.splitlines()
                                     if x.startswith("recluster_child_tables: ")]
    assert f"{SWAP_ALIAS}__sc_backup" in after_failure and f"{SWAP_ALIAS}__sc_staging" in after_failure, after_failure
    assert SWAP_ALIAS not in after_failure, after_failure
    check = check_line(output)
    assert check["rows_match"] and check["leftovers"] == [], check
    assert [t for t in after_recovery if t.startswith(SWAP_ALIAS)] == [SWAP_ALIAS], after_recovery


def test_kill_in_a_build_swapped_by_location_on_s3_loses_nothing(work, s3):
    """A clustered_table build in a bucket (cluster_swap auto: written at a build location, swapped
    by one metastore update), killed before its staging table is validated and again right after
    the update (before the staging table's metadata and the replaced location are dropped). After
    each kill the table answers with the last complete build's rows; the next build recovers and
    leaves exactly one build location in the bucket, the live table's."""
    bucket = "it-recluster-kill"
    s3.create_bucket(bucket)
    schema = "it_recluster_kill_s3"
    env = {S3_ENDPOINT_ENV: s3.endpoint}
    table_vars = {"rc_materialized": "clustered_table", "rc_skip": True}
    base = {"work": str(work / "s3-swap"), "schema": schema, "schema_location": f"s3a://{bucket}/{schema}.db"}

    def build(end, **extra):
        return {"dbt": ["run", "--select", "recluster_case"], "vars": model_vars(0, end, **table_vars, **extra)}

    def build_locations():
        return {k.split("/")[1] for k in s3.keys(bucket, f"{schema}.db/") if k.split("/")[1].startswith(ALIAS)}

    def check(end):
        return {"check": {"alias": ALIAS, "batches": [[0, end]]}}

    def checks(output):
        return [json.loads(x.split(": ", 1)[1]) for x in output.splitlines() if x.startswith("recluster_child: ")]

    # killed after its staging table was written, before it was validated
    code, output = run_child({**base, "steps": [
        build(3000), check(3000),
        build(5000, spark_clustering_test_hooks={"clustered_table.after_staging_write": {"pause": 600}})]},
        kill_at="clustered_table.after_staging_write", env=env)
    assert code == -signal.SIGKILL, (code, output[-3000:])
    assert checks(output)[0]["rows_match"], checks(output)
    assert len(build_locations()) == 2, build_locations()  # the live build's and the killed one's
    # a new process: the last complete build's rows; then a build killed right after the update
    code, output = run_child({**base, "steps": [
        check(3000), {"sql": "set spark.sparkclustering.test.pauseAt=clustered_table.after_promote"}, build(7000)]},
        kill_at="clustered_table.after_promote", env=env)
    assert code == -signal.SIGKILL, (code, output[-3000:])
    assert checks(output)[0]["rows_match"], checks(output)
    # recovered the first kill (its location deleted); the replaced location is left by this one
    assert len(build_locations()) == 2, build_locations()
    code, output = run_child({**base, "steps": [check(7000), build(8000), check(8000), {"tables": True}]},
                             kill_at=None, env=env)
    assert code == 0, output[-4000:]
    after_kill, result = checks(output)
    assert after_kill["rows_match"], after_kill  # the killed build was in place: the update is the commit
    assert result["rows_match"] and result["leftovers"] == [], result
    [tables] = [json.loads(x.split(": ", 1)[1]) for x in output.splitlines() if x.startswith("recluster_child_tables: ")]
    assert [t for t in tables if t.startswith(ALIAS)] == [ALIAS], tables
    builds = build_locations()
    assert len(builds) == 1 and next(iter(builds)).startswith(f"{ALIAS}__sc_build_"), builds
