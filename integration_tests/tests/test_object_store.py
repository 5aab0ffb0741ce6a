"""Tables on S3 through S3A, against a real S3 API server on 127.0.0.1 (moto in server mode, one per
test process; spark_clustering_dev.s3): the lease by conditional create, raced by two processes (and
the server's conditional create, raced by threads), its
refusal to work without one, and a clustered table built, rebuilt and reclustered in a bucket, with
S3A's own request counters reported (docs/object_stores.md)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote

import pytest

from harness.plans import skipping_summary
from spark_clustering_dev.layout import file_ranges
from spark_clustering_dev.paths import INTEGRATION_TESTS, REPO
from spark_clustering_dev.recluster_case import COLUMNS, MODEL, actual, expected
from spark_clustering_dev.s3 import (ACCESS_KEY, NO_CONDITIONAL_CREATE_BUCKET, S3_ENDPOINT_ENV, SECRET_KEY, S3Server, delta,
                                     s3a_counters)
from spark_clustering_dev.spark import confs, jvm_options_env

BUCKET = "it-object-store"
LEASE_ROUNDS = 100  # per process: 200 rounds of two writers racing for one lease (~1 min)
FILE_ROWS = 2000
# S3A's counters the test prints per step
REPORTED = ("object_copy_requests", "files_copied_bytes", "object_put_request", "object_list_request",
            "action_http_head_request", "action_http_get_request", "object_delete_objects", "op_rename")


@pytest.fixture(scope="module")
def s3_schema(spark, s3, dbt_schema):
    """The module's dbt schema as a database in the bucket: every table dbt creates there is on S3."""
    s3.create_bucket(BUCKET)
    spark.sql(f"create database if not exists {dbt_schema} location 's3a://{BUCKET}/{dbt_schema}.db'")
    return dbt_schema


def table_location(spark, table: str) -> str:
    rows = spark.sql(f"describe table extended {table}").collect()
    return next(r[1] for r in rows if r[0] == "Location")


def model_vars(alias, **vars_):
    v = {"rc_alias": alias, "rc_file_rows": FILE_ROWS}
    v.update({(k if k.startswith("spark_clustering") else f"rc_{k}"): val for k, val in vars_.items()})
    return v


def test_a_clustered_table_in_a_bucket_is_built_rebuilt_and_reclustered(spark, s3, s3_schema, dbt):
    alias = "rc_s3"
    table = f"{s3_schema}.{alias}"
    bucket = f"s3a://{BUCKET}/"
    counted: dict[str, dict[str, int]] = {}

    def step(name, start, end, **vars_):
        before = s3a_counters(spark, bucket)
        dbt(["run", "--select", MODEL], vars=model_vars(alias, start=start, end=end, **vars_))
        counted[name] = delta(before, s3a_counters(spark, bucket))

    # cluster_swap auto, on an object store: each build writes its files once, at a build location
    # beside the table, and the swap points the table there: no object is copied
    step("build", 0, 6000, materialized="clustered_table", skip=True)
    first = table_location(spark, table)
    assert first.startswith(f"s3a://{BUCKET}/{s3_schema}.db/{alias}__sc_build_"), first
    assert actual(spark, table) == expected(spark, [(0, 6000)])
    step("rebuild", 0, 8000, materialized="clustered_table", skip=True)
    assert actual(spark, table) == expected(spark, [(0, 8000)])
    second = table_location(spark, table)
    assert second.startswith(f"s3a://{BUCKET}/{s3_schema}.db/{alias}__sc_build_") and second != first, second
    for name in ("build", "rebuild"):
        assert counted[name].get("object_copy_requests", 0) == 0 and counted[name].get("files_copied_bytes", 0) == 0, counted
    # the previous build's objects are gone, none of the new one's moved
    assert not s3.keys(BUCKET, first.split(f"s3a://{BUCKET}/", 1)[1] + "/"), first
    # clustered: four files of 2,000 rows whose ranges of `a` (the curve's first column) are
    # narrower than the whole table's (a plain write spreads every file over the whole range)
    files = file_ranges(spark, table, COLUMNS)
    assert len(files) == 4 and sum(f["n"] for f in files) == 8000, files
    overall = max(f["a__hi"] for f in files) - min(f["a__lo"] for f in files)
    assert sum(f["a__hi"] - f["a__lo"] for f in files) / len(files) < 0.75 * overall, files

    # an append by the incremental model, reclustered by its post-hook (gate: any depth above 1.5)
    step("append + recluster", 8000, 10000, recluster={"max_average_depth": 1.5})
    assert actual(spark, table) == expected(spark, [(0, 10000)])
    names = [f["path"].rsplit("/", 1)[-1] for f in file_ranges(spark, table, COLUMNS)]
    assert any(n.startswith("sc-l") for n in names) and not any(n.startswith("part-") for n in names), names
    keys = s3.keys(BUCKET, f"{s3_schema}.db/")
    assert not [k for k in keys if "_sc_recluster_" in k or "__magic_job-" in k or "__sc_staging" in k
                or "__sc_backup" in k], keys
    # the recluster wrote its files as pending uploads to their final names and completed them at
    # its commit: no object copied, no upload left in progress
    assert counted["append + recluster"].get("object_copy_requests", 0) == 0, counted
    assert counted["append + recluster"].get("files_copied_bytes", 0) == 0, counted
    assert s3.uploads(BUCKET) == []

    # data skipping from the statistics the commit wrote beside the files (in the bucket): a box on
    # the clustering columns reads fewer files, and the answer equals a full scan's
    query = f"select count(*), sum(id) from {table} where a < 20000 and b < 300"
    plan = spark.sql(f"explain {query}").first()[0]
    summary = skipping_summary(plan)
    assert summary["kept"] < summary["total"] and summary["unknown"] == 0, summary
    with_rule = spark.sql(query).first()
    with confs(spark, {"spark.sparkclustering.skipping.enabled": "false"}):
        assert spark.sql(query).first() == with_rule

    print("[object store] S3A requests per step: " + json.dumps(
        {name: {k: v for k, v in c.items() if k in REPORTED} for name, c in counted.items()}))


def test_a_partitioned_table_in_a_bucket_is_reclustered_without_copying_an_object(spark, s3, s3_schema, dbt):
    """A table partitioned by `day` (three partitions at <location>/day=<n>), appended to and
    reclustered: each partition's rewritten files are pending uploads to their final names below
    it, completed by the commit. Exact rows, 0 copies, nothing left in progress."""
    alias = "rc_s3_partitioned"
    table = f"{s3_schema}.{alias}"
    partitioned = {"partition_by": ["day"]}
    dbt(["run", "--select", MODEL], vars=model_vars(alias, start=0, end=6000, skip=True, **partitioned))
    before = s3a_counters(spark, f"s3a://{BUCKET}/")
    dbt(["run", "--select", MODEL], vars=model_vars(alias, start=6000, end=9000, recluster={"max_average_depth": 1.5},
                                                   **partitioned))
    counted = delta(before, s3a_counters(spark, f"s3a://{BUCKET}/"))
    assert actual(spark, table) == expected(spark, [(0, 9000)])
    files = file_ranges(spark, table, COLUMNS)
    rewritten = [f["path"] for f in files if f["path"].rsplit("/", 1)[-1].startswith("sc-l")]
    assert rewritten and all("/day=" in p for p in rewritten), files
    assert counted.get("object_copy_requests", 0) == 0 and counted.get("files_copied_bytes", 0) == 0, counted
    assert s3.uploads(BUCKET) == []
    keys = s3.keys(BUCKET, f"{s3_schema}.db/{alias}/")
    assert not [k for k in keys if "_sc_recluster_" in k or "__magic_job-" in k], keys


def test_the_observed_workload_of_a_table_in_a_bucket_keeps_counting(spark, s3, s3_schema, dbt):
    """The observed workload's slot file in the bucket is rewritten at every flush. S3A's rename
    refuses an existing destination, so the second flush of a tmp-then-rename lost its counts
    (found by benchmarks/bench_object_store.py: `could not save the workload ... destination file
    exists`); on an object store it is overwritten in place."""
    alias = "rc_s3_observed"
    table = f"{s3_schema}.{alias}"
    dbt(["run", "--select", MODEL], vars=model_vars(alias, start=0, end=4000, materialized="clustered_table", skip=True))
    first, second = f"select count(*) from {table} where a < 5000", f"select count(*) from {table} where b = 7"
    for _ in range(3):
        spark.sql(first).collect()

    def counts():  # observed_workload flushes what this JVM counted first
        return sorted(r[0] for r in spark.sql(f"select queries from observed_workload('{table}')").collect())

    assert counts() == [3]
    for _ in range(2):
        spark.sql(first).collect()
    spark.sql(second).collect()
    assert counts() == [1, 5]
    slots = [k for k in s3.keys(BUCKET, f"{s3_schema}.db/_spark_clustering_workload/") if alias in k]
    assert len(slots) == 1 and slots[0].endswith(".json"), slots  # no tmp file left beside it


def test_a_flush_of_the_observed_workload_costs_a_head_a_get_and_a_put(spark, s3, s3_schema):
    """What recording the workload costs on S3 (docs/workload_layouts.md): each flush that has new
    boxes of a table reads its slot file and writes it back, a HEAD (S3A's open), a GET and a PUT;
    the first, with no slot file yet, a HEAD answered 404 and a PUT. Counted in the S3 server's own
    log, by the slot file's key. (It was 5, the first 4: an exists() before the open cost a second
    HEAD, or a LIST when the file was missing, and S3A's create probed for a directory at the path
    with a LIST.)"""
    table = f"{s3_schema}.flush_cost"
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"""create table {table} using parquet tblproperties ('spark_clustering.cluster_by' = 'a,b')
        as select id as a, id % 7 as b from range(100)""")
    workload = spark._jvm.org.apache.spark.sql.sparkclustering.workload.ObservedWorkload

    def flushed(query) -> list[tuple[str, int]]:
        """(request, status) of the flushes of the box `query` records, in order."""
        before = len(s3.statuses())
        spark.sql(query).collect()
        workload.flush()  # or waits for the background flush that took the box
        time.sleep(0.5)  # the server logs a request after answering it
        slot = "/_spark_clustering_workload/flush_cost/"
        out = []
        for method, path, status in s3.statuses()[before:]:
            if slot in unquote(path):
                out.append(("LIST" if method == "GET" and "prefix=" in path else method, status))
        return out

    assert flushed(f"select count(*) from {table} where a < 50") == [("HEAD", 404), ("PUT", 200)]
    for query in (f"select count(*) from {table} where a < 50", f"select count(*) from {table} where b = 3"):
        requests = flushed(query)
        # S3A reads with a ranged GET: 206
        assert [m for m, _ in requests] == ["HEAD", "GET", "PUT"] and all(200 <= c < 300 for _, c in requests), requests
    assert sorted(r[0] for r in spark.sql(f"select queries from observed_workload('{table}')").collect()) == [1, 2]


def child_failure(log: Path, s3, since: int) -> str:
    """Why a lease writer failed: the first lines of its log that name an exception (a Spark error's
    message comes before a long stack, which a tail cuts off), its last lines, and the S3 server's
    answers since `since` that were neither a success nor an expected refusal (404, 412)."""
    lines = log.read_text(errors="replace").splitlines()
    named = [line for line in lines if re.search(r"(Exception|Error)(:|$)", line) and " WARN " not in line
             and not line.lstrip().startswith("at ")]
    odd = [x for x in s3.statuses()[since:] if x[2] >= 300 and x[2] not in (404, 412)]
    return "\n".join(["first errors:", *named[:8], "last lines:", *lines[-15:], f"S3 answers other than 2xx/404/412: {odd[:20]}"])


def start_lease_child(tmp_path: Path, name: str, endpoint: str, location: str, table: str, rounds: int, seed: int,
                      go: Path) -> tuple[dict, object, subprocess.Popen]:
    """A lease writer (harness.s3_lease_child) named `name`, its own Spark JVM on the S3 server at
    `endpoint`, over a database at `location`: (its plan, its open log, its process), its log in
    `<tmp_path>/<name>.log`. It starts its rounds once `go` exists."""
    plan = {"work": str(tmp_path / name), "name": name, "database": location.rsplit("/", 1)[-1].removesuffix(".db"),
            "location": location, "table": table, "rounds": rounds, "seed": seed, "ready": str(tmp_path / f"{name}.ready"),
            "go": str(go), "out": str(tmp_path / f"{name}.jsonl")}
    env = {**os.environ, "PYTHONUNBUFFERED": "1", S3_ENDPOINT_ENV: endpoint, "SPARK_CLUSTERING_MASTER": "local[1]"}
    log = open(tmp_path / f"{name}.log", "w")
    return plan, log, subprocess.Popen([sys.executable, "-m", "harness.s3_lease_child", json.dumps(plan)],
                                       cwd=INTEGRATION_TESTS, env=env, stdout=log, stderr=subprocess.STDOUT)


def test_two_processes_racing_for_a_lease_on_s3_never_both_hold_it(spark, s3, s3_schema, tmp_path):
    """Two writers, each its own Spark JVM and metastore, take and give up one table's lease on S3
    LEASE_ROUNDS times each, with random pauses. A lease generation is an object created with a
    conditional PUT (If-None-Match: *): the S3 server refuses the second creator with 412, so
    exactly one holds it. No two holding intervals overlap; the 412s show the race happened."""
    go = tmp_path / "go"
    children = [(name, *start_lease_child(tmp_path, name, s3.endpoint, f"s3a://{BUCKET}/lease_race.db", "raced",
                                          LEASE_ROUNDS, 29 + i, go))
                for i, name in enumerate(["first", "second"])]
    try:
        for name, plan, _, proc in children:
            while not Path(plan["ready"]).exists():
                assert proc.poll() is None, child_failure(tmp_path / f"{name}.log", s3, 0)
                time.sleep(0.1)
        before = len(s3.statuses())
        go.touch()
        for name, _, _, proc in children:
            assert proc.wait(timeout=600) == 0, child_failure(tmp_path / f"{name}.log", s3, before)
    finally:
        for _, _, log, proc in children:
            if proc.poll() is None:
                proc.kill()
            log.close()
    held = sorted((tuple(json.loads(line)), name) for name, plan, _, _ in children
                  for line in Path(plan["out"]).read_text().splitlines())
    assert len(held) == 2 * LEASE_ROUNDS
    overlaps = [(a, b) for a, b in zip(held, held[1:]) if b[0][0] < a[0][1]]
    assert overlaps == [], f"two holders at once: {overlaps[:5]}"
    lease_puts = [(m, p, code) for m, p, code in s3.statuses()[before:] if m == "PUT" and "/_sc_leases/raced/lease." in p]
    refused = [x for x in lease_puts if x[2] == 412]
    assert refused, "no create of a lease generation was refused: the writers never raced"
    print(f"[object store] lease race: {len(held)} rounds, {len(lease_puts)} PUTs of lease files, "
          f"{len(refused)} refused with 412")


def test_a_lease_create_whose_answer_was_lost_is_taken_by_its_writer(tmp_path):
    """S3 can store an object and still fail the request (an InternalError after the write, a
    connection lost before the answer); the client then sends the conditional create again, and the
    store refuses it with 412 for an object that is the writer's own. The writer must take that
    generation (it holds its token), not fail, nor wait out the ttl of its own file and take the
    next. A writer takes and gives up a lease 4 times against a server that stores, then answers 500,
    the first 2 creates of a lease generation: it finishes, with exactly 4 generations, each holding
    its round's owner, and each lost answer was followed by a 412 for the same key."""
    rounds, lost = 4, 2
    with S3Server(tmp_path, lose_answers=f"{lost}:/_sc_leases/lost/lease.") as server:
        bucket = server.create_bucket("lease-lost")
        go = tmp_path / "go"
        go.touch()
        plan, log, proc = start_lease_child(tmp_path, "lost", server.endpoint, f"s3a://{bucket}/lease_lost.db", "lost",
                                            rounds, 31, go)
        try:
            assert proc.wait(timeout=600) == 0, child_failure(tmp_path / "lost.log", server, 0)
        finally:
            if proc.poll() is None:
                proc.kill()
            log.close()
        time.sleep(0.5)  # the server logs a request after answering it
        creates = [(unquote(path).rsplit("/", 1)[-1], code) for method, path, code in server.statuses()
                   if method == "PUT" and "/_sc_leases/lost/lease." in unquote(path)]
        generations = sorted(k for k in server.keys(bucket, "lease_lost.db/_sc_leases/lost/") if "/lease." in k)
        owners = [server.client().get_object(Bucket=bucket, Key=k)["Body"].read().decode() for k in generations]
    assert len(Path(plan["out"]).read_text().splitlines()) == rounds
    failed = [i for i, (_, code) in enumerate(creates) if code == 500]
    assert len(failed) == lost, creates
    for i in failed:
        # the client's retry of the stored create, refused: the object was the writer's own
        assert creates[i + 1] == (creates[i][0], 412), creates
    assert generations == [f"lease_lost.db/_sc_leases/lost/lease.{n}" for n in range(1, rounds + 1)], generations
    assert all(f"owner\tlease race lost {i}\n" in text for i, text in enumerate(owners)), owners


def test_the_s3_server_lets_one_of_racing_conditional_creates_win(tmp_path):
    """The lease race above is only as true as the S3 server's conditional PUT. moto checks
    `If-None-Match: *` and then stores the object, with nothing between the two, so two creates of
    one key could both be told they won: one CI run saw a lease writer find its new generation
    holding the other writer's token. The tests' server (spark_clustering_dev.s3_server) makes each
    key's writes atomic, as S3 does. Here 4 threads race to create each of 200 keys on a server whose
    interpreter switches threads every microsecond (which makes the gap in plain moto show): exactly
    one create of each key succeeds, the others get 412, and the object holds the winner's bytes."""
    import threading

    from botocore.exceptions import ClientError

    with S3Server(tmp_path, switch_interval=1e-6) as server:
        client = server.client()
        server.create_bucket("conditional-race")
        writers, outcomes = 4, []
        for round_ in range(200):
            won, refused, start = [], [], threading.Barrier(writers)

            def create(i, key=f"lease.{round_}"):
                start.wait()
                try:
                    client.put_object(Bucket="conditional-race", Key=key, Body=f"writer {i}".encode(), IfNoneMatch="*")
                    won.append(i)
                except ClientError as e:
                    refused.append(e.response["ResponseMetadata"]["HTTPStatusCode"])

            threads = [threading.Thread(target=create, args=(i,)) for i in range(writers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            body = client.get_object(Bucket="conditional-race", Key=f"lease.{round_}")["Body"].read().decode()
            outcomes.append((won, sorted(refused), body))
    wrong = [(i, o) for i, o in enumerate(outcomes) if len(o[0]) != 1 or o[1] != [412] * 3 or o[2] != f"writer {o[0][0]}"]
    assert wrong == [], f"{len(wrong)} of 200 races did not have exactly one winner: {wrong[:5]}"


def test_without_conditional_create_the_lease_refuses_to_work(spark, s3):
    """S3A with its conditional PUT switched off (as a Hadoop before 3.4.2 has it): a plain create
    checks, then writes, so two writers could both win. The lease stops, naming the setting, and
    writes no lease file."""
    s3.create_bucket(NO_CONDITIONAL_CREATE_BUCKET)
    spark.sql(f"create database if not exists no_conditional location 's3a://{NO_CONDITIONAL_CREATE_BUCKET}/nc.db'")
    with pytest.raises(Exception) as err:
        spark.sql("select * from table_lease_acquire('no_conditional.t', 'a writer', '0', 'name')").collect()
    text = str(err.value)
    assert "the table lease s3a://no-conditional-create/nc.db/_sc_leases/t/lease.1" in text, text[:2000]
    assert "If-None-Match" in text and "fs.s3a.create.conditional.enabled is false" in text, text[:2000]
    assert "spark.hadoop.fs.s3a.create.conditional.enabled=true" in text, text[:2000]
    assert not [k for k in s3.keys(NO_CONDITIONAL_CREATE_BUCKET) if "/lease." in k]


def test_a_file_replaced_with_the_same_size_and_mtime_is_not_taken_for_the_old_one(spark, s3, s3_schema):
    """The statistics sidecar keys a file by path, size and modification time, and on S3 the mtime
    resolves to the second: an object rewritten within the second its entry was written for, with
    content of the same size, matched that entry, and its stale bounds skipped it wrongly. Entries
    carry the object's ETag where S3A lists one, and answer only for the same ETag. Here one file's
    object is replaced by another file's bytes (same size, other values), and the entry's mtime is
    set to the new object's, as a rewrite within the same second leaves it."""
    table = f"{s3_schema}.replaced"
    spark.sql(f"drop table if exists {table}")
    # uncompressed, one file per insert: two files of the same size, with other values
    spark.sql(f"create table {table} (id bigint) using parquet options ('compression' = 'uncompressed')")
    spark.sql(f"insert into {table} select /*+ COALESCE(1) */ id from range(0, 100)")
    spark.sql(f"insert into {table} select /*+ COALESCE(1) */ id + 5000 from range(0, 100)")
    spark.sql(f"select * from write_file_stats('{table}')").collect()
    prefix = table_location(spark, table).split(f"s3a://{BUCKET}/", 1)[1] + "/"
    client = s3.client()
    data = sorted(k for k in s3.keys(BUCKET, prefix) if k.endswith(".parquet") and "/_sc_" not in k)
    [sidecar_key] = [k for k in s3.keys(BUCKET, prefix + "_sc_file_stats/") if k.endswith(".json")]
    entries = [json.loads(x) for x in client.get_object(Bucket=BUCKET, Key=sidecar_key)["Body"].read().decode().splitlines()]
    assert len(entries) == 2 and all(e.get("etag") for e in entries), entries
    low = next(e for e in entries if e["cols"]["id"]["max"] == "99")
    low_key = prefix + low["path"]
    high_key = next(k for k in data if k != low_key)
    high_bytes = client.get_object(Bucket=BUCKET, Key=high_key)["Body"].read()
    assert len(high_bytes) == low["size"], "the two files must have the same size for this adversary"
    client.put_object(Bucket=BUCKET, Key=low_key, Body=high_bytes)
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(f"s3a://{BUCKET}/{low_key}")
    status = path.getFileSystem(spark._jsc.hadoopConfiguration()).getFileStatus(path)
    low["mtime"] = status.getModificationTime()
    client.put_object(Bucket=BUCKET, Key=sidecar_key, Body="".join(json.dumps(e) + "\n" for e in entries).encode())
    spark.sql(f"refresh table {table}")
    query = f"select count(*) from {table} where id >= 5000"
    assert spark.sql(query).first()[0] == 200
    summary = skipping_summary(spark.sql(f"explain {query}").first()[0])
    assert summary["kept"] == summary["total"] == 2, summary
    with confs(spark, {"spark.sparkclustering.skipping.enabled": "false"}):
        assert spark.sql(query).first()[0] == 200


def test_the_s3_target_builds_and_reclusters_in_a_bucket(spark, s3, tmp_path):
    """dbt's `s3` target (integration_tests/profiles.yml) in a process of its own, where dbt-spark
    creates the session from the target's parameters alone (harness/s3_target_child.py): the
    example's source, a clustered model with its generic tests (tight files), and the incremental
    model, appended to and reclustered. The target keeps S3A's committers from aborting pending
    uploads (fs.s3a.committer.abort.pending.uploads=false, as docs/object_stores.md recommends).
    Every table lies in the bucket's warehouse; the clustered and incremental tables hold exactly
    the source's rows; the clustered model was written at a build location; the recluster left no
    staging, pending upload or upload in progress."""
    bucket = s3.create_bucket("it-s3-target")
    schema = "it_s3_target"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "SPARK_CLUSTERING_ROOT": str(REPO),
           "SPARK_CLUSTERING_S3_ENDPOINT": s3.endpoint, "SPARK_CLUSTERING_S3_BUCKET": bucket,
           "SPARK_CLUSTERING_S3_PATH_STYLE": "true", "SPARK_CLUSTERING_S3_SSL": "false",
           "SPARK_CLUSTERING_S3_METASTORE": str(tmp_path / "metastore"),
           "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
           "DBT_TARGET_PATH": str(tmp_path / "dbt_target"), **jvm_options_env()}
    plan = {"schema": schema, "rows": 20000, "file_rows": 5000}
    proc = subprocess.run([sys.executable, "-m", "harness.s3_target_child", json.dumps(plan)], cwd=INTEGRATION_TESTS,
                          env=env, capture_output=True, text=True, timeout=900)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-5000:]
    [line] = [x for x in proc.stdout.splitlines() if x.startswith("s3_target: ")]
    out = json.loads(line.removeprefix("s3_target: "))
    assert out["conf"]["spark.sql.warehouse.dir"] == f"s3a://{bucket}/warehouse", out["conf"]
    assert "SparkClusteringExtensions" in out["conf"]["spark.sql.extensions"], out["conf"]
    # S3A's committer of the append leaves the recluster's pending uploads alone (docs/object_stores.md)
    assert out["hadoop"]["fs.s3a.committer.abort.pending.uploads"] == "false", out["hadoop"]
    tables = out["tables"]
    source = tables["telemetry_events"]["fingerprint"]
    assert source[0] == 20000
    assert tables["telemetry_hilbert"]["fingerprint"] == source and tables["telemetry_incremental"]["fingerprint"] == source
    for name, t in tables.items():
        assert t["location"].startswith(f"s3a://{bucket}/warehouse/{schema}.db/"), (name, t["location"])
        assert all(f.startswith(f"s3a://{bucket}/warehouse/{schema}.db/") for f in t["files"]), (name, t["files"][:3])
    assert "/telemetry_hilbert__sc_build_" in tables["telemetry_hilbert"]["location"], tables["telemetry_hilbert"]
    assert len(tables["telemetry_hilbert"]["files"]) == 4
    # the append was reclustered: its files and the files they joined are a recluster's (sc-l...)
    assert any(f.rsplit("/", 1)[-1].startswith("sc-l") for f in tables["telemetry_incremental"]["files"])
    keys = s3.keys(bucket, f"warehouse/{schema}.db/")
    assert not [k for k in keys if "_sc_recluster_" in k or "__magic_job-" in k or "__sc_staging" in k], keys
    assert s3.uploads(bucket) == []
