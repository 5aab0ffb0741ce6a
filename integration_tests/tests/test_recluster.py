"""`recluster()`: an incremental model kept clustered by its post-hook, the gate, bounded rewrites,
partition-local rewrites and a concurrent writer, all through dbt on the shared Spark session.

Depth here is computed independently of the package (spark_clustering_dev.metrics_reference) with the gate's
definition: a file of r rows counts as round(r / cluster_target_file_rows) files (at least 1).
"""
from __future__ import annotations

import json
import random
import re
import shutil
import threading
import time
from pathlib import Path

import pytest

from harness.plans import skipping_summary
from harness.recluster_cost import ReclusterCost
from harness.storage import BUCKET, STORAGES, database_on
from spark_clustering_dev.dbt import DbtError, dbt_output, run_operation_json
from spark_clustering_dev.metrics_reference import column_metrics
from spark_clustering_dev.recluster_case import COLUMNS, MODEL, ROW_SQL, actual, data_files, expected, leftovers, location
from spark_clustering_dev.store_reads import StatementReads

FILE_ROWS = 2000


@pytest.fixture(scope="module")
def s(spark, dbt_schema):
    spark.sql(f"create database if not exists {dbt_schema}")
    return dbt_schema


def model_vars(alias, **vars_):
    """The model's vars: `key=...` becomes rc_key, spark_clustering_* vars pass as they are."""
    v = {"rc_alias": alias, "rc_file_rows": FILE_ROWS}
    v.update({(k if k.startswith("spark_clustering") else f"rc_{k}"): val for k, val in vars_.items()})
    return v


def run_model(dbt, alias, start, end, schema=None, **vars_):
    kw = {"schema": schema} if schema else {}
    return dbt(["run", "--select", MODEL], vars=model_vars(alias, start=start, end=end, **vars_), **kw)


def recluster_op(dbt, schema, alias, final=False, **vars_):
    return run_operation_json("recluster", {"relation": f"{schema}.{alias}", "final": final},
                              schema=schema, vars=model_vars(alias, **vars_))


def recluster_with_writer(spark, dbt, schema, alias, writer_sql, **vars_):
    """recluster_op held at its test hook recluster.after_validate (after validation, before the
    commit) while `writer_sql` runs on the shared session: a concurrent writer at the worst moment.
    Every later round passes the hook at once (it stays released)."""
    return recluster_held_at(spark, dbt, schema, alias, "recluster.after_validate", lambda: spark.sql(writer_sql), **vars_)


def recluster_held_at(spark, dbt, schema, alias, point, action, **vars_):
    """recluster_op held at its test hook `point` while `action()` runs in the test's thread."""
    result = {}

    def run():
        try:
            result["out"] = recluster_op(dbt, schema, alias, spark_clustering_test_hooks={point: "wait"}, **vars_)
        except BaseException as e:  # re-raised in the test's thread
            result["error"] = e

    worker = threading.Thread(target=run)
    worker.start()
    reached = False
    try:
        deadline = time.monotonic() + 300
        while worker.is_alive() and time.monotonic() < deadline:
            if spark.conf.get("spark.sparkclustering.test.reached", "") == point:
                reached = True
                action()
                break
            time.sleep(0.1)
    finally:
        spark.conf.set("spark.sparkclustering.test.release", point)
        worker.join()
        spark.conf.unset("spark.sparkclustering.test.reached")
        spark.conf.unset("spark.sparkclustering.test.release")
    if "error" in result:
        raise result["error"]
    assert reached, f"the recluster never reached {point}: {result.get('out')}"
    return result["out"]


def weighted_depths(spark, table) -> dict[str, dict]:
    aggs = ", ".join(f"min({c}), max({c})" for c in COLUMNS)
    rows = spark.sql(f"select count(*), {aggs} from {table} group by _metadata.file_path").collect()
    sized = []
    for r in rows:
        sized += [r] * max(1, round(r[0] / FILE_ROWS))
    return {c: column_metrics([(r[1 + 2 * i], r[2 + 2 * i]) for r in sized]) for i, c in enumerate(COLUMNS)}


def assert_no_leftovers(spark, schema, alias):
    found = leftovers(spark, schema, alias)
    assert found == [], found


def test_incremental_model_stays_clustered_over_five_random_appends(spark, dbt, s):
    alias, t = "rc_grow", 12
    rng = random.Random(2026)
    batches, end, runs_seen = [], 0, set()
    for run in range(5):
        size = rng.randint(1500, 3000) if run else 27000
        run_model(dbt, alias, end, end + size, recluster={"max_average_depth": t})
        batches.append((end, end + size))
        end += size
        table = f"{s}.{alias}"
        assert actual(spark, table) == expected(spark, batches), f"rows changed after run {run + 1}"
        depths = weighted_depths(spark, table)
        for c in COLUMNS:
            assert depths[c]["average_depth"] <= t, (run + 1, c, depths[c])
            assert depths[c]["max_depth"] <= min(2 * t, 32), (run + 1, c, depths[c])
        runs_seen |= {Path(p).name.split("-")[2] for p in data_files(spark, table) if Path(p).name.startswith("sc-l")}
        assert_no_leftovers(spark, s, alias)
    # the gate fired on the first batch and again on later appends, each time writing a new run
    assert len(runs_seen) >= 2, runs_seen


def test_ten_percent_append_rewrites_at_most_three_times_its_bytes(spark, dbt, s):
    base, extra = 160000, 16000
    # The clustered table: the first run's post-hook clusters everything.
    run_model(dbt, "rc_amp", 0, base, recluster={"max_average_depth": 4})
    table = f"{s}.rc_amp"
    before = data_files(spark, table)
    assert all(Path(p).name.startswith("sc-l1-") for p in before)
    fresh = weighted_depths(spark, table)

    # +10 % rows, appended with reclustering switched off (the project var), then one recluster.
    run_model(dbt, "rc_amp", base, base + extra, spark_clustering_recluster=False)
    appended = {p: n for p, n in data_files(spark, table).items() if p not in before}
    assert appended and all(Path(p).name.startswith("part-") for p in appended)
    t = max(fresh[c]["average_depth"] for c in COLUMNS)  # the append pushes every column over it
    out = recluster_op(dbt, s, "rc_amp", recluster={"max_average_depth": t, "max_rounds": 1})
    assert out["decision"] == "reclustered", out
    written = sum(r["bytes_written"] for r in out["rounds"])
    assert written <= 3 * sum(appended.values()), (written, sum(appended.values()), out["rounds"])
    assert set(before) <= set(data_files(spark, table)), "settled files were rewritten"
    assert actual(spark, table) == expected(spark, [(0, base + extra)])

    # The same rows clustered in one go: depth after the partial rewrite stays within 1.2 x of it.
    run_model(dbt, "rc_amp_full", 0, base + extra, recluster={"max_average_depth": 4, "max_rounds": 1})
    full = weighted_depths(spark, f"{s}.rc_amp_full")
    partial = weighted_depths(spark, table)
    ratios = {c: round(partial[c]["average_depth"] / full[c]["average_depth"], 3) for c in COLUMNS}
    print(f"[recluster] +10 %: bytes written / appended = {written / sum(appended.values()):.2f}; "
          f"average depth partial / full = {ratios}")
    for c in COLUMNS:
        assert partial[c]["average_depth"] <= 1.2 * full[c]["average_depth"], (c, partial[c], full[c])


def test_a_clustered_table_build_is_one_run_the_first_recluster_leaves_alone(spark, dbt, s):
    """A clustered_table build of a plain table records the id of the Spark job that wrote its files
    (spark_clustering.build_write_id, in every file's name): after appends, the first recluster
    rewrites the appended files, not the whole table."""
    alias = "rc_built"
    run_model(dbt, alias, 0, 16000, materialized="clustered_table", skip=True)
    table = f"{s}.{alias}"
    built = data_files(spark, table)
    properties = {r[0]: r[1] for r in spark.sql(f"show tblproperties {table}").collect()}
    write_id = properties["spark_clustering.build_write_id"]
    assert len(built) == 8 and all(f"-{write_id}-" in Path(p).name for p in built), (write_id, built)
    for lo in (16000, 17000, 18000):  # three appends of unclustered files, as dbt's inserts write them
        spark.sql(f"insert into {table} select /*+ repartition(2) */ * from ({ROW_SQL} from range({lo}, {lo + 1000}))")
    appended = set(data_files(spark, table)) - set(built)
    out = recluster_op(dbt, s, alias, recluster={"max_average_depth": 1.5, "max_rounds": 1})
    assert out["decision"] == "reclustered", out
    after = set(data_files(spark, table))
    assert set(built) <= after and not appended & after, out["rounds"]  # the build's run stayed, the appends went
    assert out["rounds"][0]["files_replaced"] == len(appended) == 6, out["rounds"]
    assert actual(spark, table) == expected(spark, [(0, 19000)])
    assert_no_leftovers(spark, s, alias)


@pytest.mark.parametrize("cached", ["cached", "uncached"])
@pytest.mark.parametrize("into", ["several files", "one file"])
def test_a_recluster_reads_its_files_once(spark, dbt, s, into, cached):
    """A rewrite reads the rows of its files once. Cached (a selection of at most
    `recluster.cache_bytes`, 64 MiB by default): its first pass, the sample (several files) or the
    quantiles (one file), reads the files whole into Spark's cache, and its write reads the cache, not
    the files. Uncached (`cache_bytes: 0`): the first pass reads only the clustering columns (a, b,
    c: 0.58x the files here), and the write reads the files. Either way the write takes the checksum
    of the rows it reads and of the rows its writer receives itself (observe_row_checksum), and the
    check of the staged copy counts its rows from the footers, reading no column. Before, the check
    read the staged copy back whole, and before that a sampling pass read every column once more for
    the checksum (a rewrite into one file did until 2026-12-02); until 2026-12-04 only Iceberg's
    small files were cached, so a rewrite of any other table read its clustering columns twice."""
    alias, rows = f"rc_reads_{into.split()[0]}_{cached}", 60000
    file_rows = {"several files": FILE_ROWS, "one file": 10 ** 6}[into]
    run_model(dbt, alias, 0, rows, spark_clustering_recluster=False)
    table = f"{s}.{alias}"
    before = data_files(spark, table)
    size = sum(before.values())
    reads = StatementReads(spark)
    # Parquet's vectored reads of a local file bypass Hadoop's byte counters
    spark.conf.set("parquet.hadoop.vectored.io.enabled", "false")
    gate = {"max_average_depth": 1, **({} if cached == "cached" else {"cache_bytes": 0})}
    try:
        out = run_operation_json("recluster", {"relation": table, "final": True}, schema=s,
                                 vars=model_vars(alias, file_rows=file_rows, recluster=gate), callbacks=[reads])
    finally:
        spark.conf.unset("parquet.hadoop.vectored.io.enabled")
    after = data_files(spark, table)
    assert out["decision"] == "reclustered" and not set(after) & set(before), out
    assert (len(after) == 1) == (into == "one file"), after
    assert actual(spark, table) == expected(spark, [(0, rows)])
    # the statements of the rewrite: those on the view of the files' rows, or on the staged copy (the
    # measures before and after read metadata: footers, and the clustering columns of files whose
    # footer has no exact bound, e.g. a string's, until the statistics sidecar records them)
    rewrite = [(n, sql) for n, sql in reads.per_statement() if f"{alias}__sc_recluster" in sql]
    report = "\n".join(f"{n / size:.2f}x {sql[:200]}" for n, sql in rewrite[:6])
    print(f"\nbytes read per statement of the rewrite ({cached}), x the files' {size:,} B:\n{report}")
    whole = [sql for n, sql in rewrite if n > 0.8 * size]
    assert len(whole) == 1 and all(n < 1.3 * size for n, _ in rewrite), report
    write = [(n, sql) for n, sql in rewrite if sql.count("observe_row_checksum(") == 2]  # the rows read, the rows written
    assert len(write) == 1, report
    # the staged copy's check: its files' footers only (0.05x of these small files)
    staged = [n for n, sql in rewrite if "sum(file_size)" in sql]
    assert staged and all(n < 0.1 * size for n in staged), report
    first_pass = (f"{alias}__sc_recluster_source_sample" if into == "several files"
                  else "sort_array(collect_list(")  # the sample's pass, or the quantiles'
    if cached == "cached":
        # the first pass fills the cache, the write reads it: the files once in all
        assert first_pass in whole[0] and write[0][0] < 0.1 * size, report
        assert sum(n for n, _ in rewrite) < 1.2 * size, report
    else:
        assert whole[0] == write[0][1], report
        assert any(0 < n < 0.8 * size and first_pass in sql for n, sql in rewrite), report


@pytest.mark.parametrize("into", ["several files", "one file"])
def test_rows_a_recluster_did_not_read_fail_its_check_and_nothing_is_committed(spark, dbt, s, into):
    """The adversary of the check: a staged file doubled after the write (its copy in the staging
    directory). The rows the write read (observed by the write) no longer match the staged rows read
    back, so nothing is committed, the table keeps its files and rows, and the next run leaves no
    staging behind. A rewrite into one file observes them too (its quantiles read no checksum)."""
    alias, rows = f"rc_mismatch_{into.split()[0]}", 30000
    one = {"file_rows": 10 ** 6, "recluster": {"max_average_depth": 1}} if into == "one file" else {}
    run_model(dbt, alias, 0, rows, spark_clustering_recluster=False)
    table = f"{s}.{alias}"
    before = data_files(spark, table)

    def double_a_staged_file():
        staged = sorted(location(spark, table).glob("_sc_recluster_*/part-*"))
        assert staged, "nothing staged"
        shutil.copy(staged[0], staged[0].with_name("part-99999-copy" + "".join(staged[0].suffixes)))

    with pytest.raises(DbtError) as failure:
        recluster_held_at(spark, dbt, s, alias, "recluster.after_staging_write", double_a_staged_file, final=True, **one)
    text = str(failure.value)
    assert "the rewritten files do not match the files they replace" in text and "nothing was committed" in text, text
    assert data_files(spark, table) == before
    assert actual(spark, table) == expected(spark, [(0, rows)])
    recluster_op(dbt, s, alias, final=True, **one)
    assert len(data_files(spark, table)) == 1 or not one
    assert actual(spark, table) == expected(spark, [(0, rows)])
    assert_no_leftovers(spark, s, alias)


@pytest.mark.parametrize("how", ["project var", "skip_recluster", "min_new_rows", "within threshold", "run var",
                                 "run var true"])
def test_gate_leaves_the_files_alone(spark, dbt, s, how):
    alias = "rc_gate_" + how.replace(" ", "_")
    run_model(dbt, alias, 0, 10000, recluster={"max_average_depth": 3})
    table = f"{s}.{alias}"
    before = data_files(spark, table)
    assert all(Path(p).name.startswith("sc-l1-") for p in before)
    switch = {  # each of these appends would be reclustered at max_average_depth 3
        "project var": {"spark_clustering_recluster": False, "recluster": {"max_average_depth": 3}},
        "skip_recluster": {"skip": True, "recluster": {"max_average_depth": 3}},
        "min_new_rows": {"recluster": {"max_average_depth": 3, "min_new_rows": 5000}},
        "within threshold": {"recluster": {"max_average_depth": 1000}},
        "run var": {"spark_clustering_skip_recluster": [MODEL], "recluster": {"max_average_depth": 3}},
        "run var true": {"spark_clustering_skip_recluster": True, "recluster": {"max_average_depth": 3}},
    }[how]
    run_model(dbt, alias, 10000, 12000, **switch)
    after = data_files(spark, table)
    # nothing removed or rewritten: the old files plus the append's own level-0 files
    assert set(before) <= set(after)
    assert all(Path(p).name.startswith("part-") for p in set(after) - set(before))
    assert actual(spark, table) == expected(spark, [(0, 12000)])


def test_cluster_file_stats_false_holds_for_recluster_too(spark, dbt, s):
    """cluster_file_stats: false keeps recluster() from writing the statistics sidecar, as it keeps
    clustered_table (recluster() used to read its own list of keys, without this one, and wrote the
    sidecar of every rewrite); data skipping then proves files from their footers."""
    alias = "rc_no_file_stats"
    run_model(dbt, alias, 0, 6000, recluster={"max_average_depth": 3}, file_stats=False)
    table = f"{s}.{alias}"
    files = data_files(spark, table)
    assert files and all(Path(p).name.startswith("sc-l1-") for p in files), files  # the post-hook rewrote them
    assert not (location(spark, table) / "_sc_file_stats").exists(), sorted(p.name for p in location(spark, table).iterdir())
    plan = spark.sql(f"explain select count(*) from {table} where a < 0").first()[0]
    summary = skipping_summary(plan)
    assert (summary["sidecar"], summary["footers"], summary["kept"]) == (0, len(files), 0), plan
    assert actual(spark, table) == expected(spark, [(0, 6000)])


def test_run_operation_reports_the_decision_and_metrics(spark, dbt, s):
    alias = "rc_op"
    run_model(dbt, alias, 0, 6000, recluster={"max_average_depth": 3})
    run_model(dbt, alias, 6000, 9000, spark_clustering_recluster=False)
    # data skipping's statistics: the appended files only from their footers, the rest from the sidecar
    # the first run's recluster wrote
    probe = f"explain select count(*) from {s}.{alias} where a < 500"
    appended = skipping_summary(spark.sql(probe).first()[0])
    assert appended["footers"] > 0 and appended["sidecar"] > 0, appended
    out = recluster_op(dbt, s, alias, spark_clustering_recluster=False)
    assert out["decision"] == "skipped" and "spark_clustering_recluster" in out["reason"]
    out = recluster_op(dbt, s, alias, final=True, recluster={"max_average_depth": 4})
    assert out["decision"] == "reclustered", out
    # the commit's write_file_stats covered the rewritten files (and any the sidecar lacked)
    reclustered = skipping_summary(spark.sql(probe).first()[0])
    assert reclustered["sidecar"] == reclustered["total"] and reclustered["kept"] < reclustered["total"], reclustered
    assert out["before"]["new_rows"] == 3000 and out["after"]["new_rows"] == 0
    assert out["after"]["rows"] == 9000 and out["rounds"][0]["status"] == "committed"
    assert set(out["after"]["columns"]) == set(COLUMNS)
    assert actual(spark, f"{s}.{alias}") == expected(spark, [(0, 9000)])


@pytest.mark.parametrize("storage", STORAGES)
def test_append_during_a_recluster_does_not_conflict_and_nothing_is_lost(spark, dbt, s, s3, storage):
    """An append between the recluster's read and its commit: the commit replaces only files it read
    (unchanged), so it goes through, and the appended file stays as a level-0 file. In a bucket the
    recluster's files are pending uploads, and S3A's committer of the append aborts every upload in
    progress below the table (fs.s3a.committer.abort.pending.uploads, true by default;
    docs/object_stores.md): the commit finds them gone before deleting anything and rolls back."""
    schema = database_on(spark, s3, s, storage)
    alias = "rc_conc"
    table = f"{schema}.{alias}"
    run_model(dbt, alias, 0, 8000, schema=schema, recluster={"max_average_depth": 4})
    run_model(dbt, alias, 8000, 10000, schema=schema, spark_clustering_recluster=False)
    writer = f"insert into {table} {ROW_SQL} from range(10000, 10500)"
    out = recluster_with_writer(spark, dbt, schema, alias, writer, recluster={"max_average_depth": 4})
    first = out["rounds"][0]["status"]
    if storage == "file":
        assert out["decision"] == "reclustered", out
        # round 1 committed although a file was appended after its read
        assert first == "committed", out
    else:
        assert first.startswith("rolled back") and "pending upload(s) could not be completed" in first, out
        assert s3.uploads(BUCKET) == []
    assert actual(spark, table) == expected(spark, [(0, 10500)])
    assert_no_leftovers(spark, schema, alias)


@pytest.mark.parametrize("storage", STORAGES)
def test_overwrite_during_a_recluster_stops_it_and_nothing_is_lost(spark, dbt, s, s3, storage):
    """A writer that overwrites the table (deleting its directory, the recluster's staging and lease
    with it) between the recluster's read and its commit: the commit stops before its commit point,
    the writer's rows are what remains, and the next recluster cleans up."""
    schema = database_on(spark, s3, s, storage)
    alias = "rc_overwrite"
    table = f"{schema}.{alias}"
    run_model(dbt, alias, 0, 6000, schema=schema, recluster={"max_average_depth": 4})
    run_model(dbt, alias, 6000, 8000, schema=schema, spark_clustering_recluster=False)
    writer = f"insert overwrite table {table} {ROW_SQL} from range(0, 3000)"
    with pytest.raises(DbtError) as err:
        recluster_with_writer(spark, dbt, schema, alias, writer, recluster={"max_average_depth": 4})
    assert "lost the table's lease before committing" in str(err.value)
    assert "nothing was committed" in str(err.value)
    assert actual(spark, table) == expected(spark, [(0, 3000)])
    out = recluster_op(dbt, schema, alias, recluster={"max_average_depth": 4})
    assert out["decision"] in ("reclustered", "skipped"), out
    assert actual(spark, table) == expected(spark, [(0, 3000)])
    assert_no_leftovers(spark, schema, alias)
    if storage == "s3a":
        assert s3.uploads(BUCKET) == []


def test_partitioned_table_rewrites_only_the_partitions_that_changed(spark, dbt, s):
    alias = "rc_part"
    table = f"{s}.{alias}"
    run_model(dbt, alias, 0, 15000, partition_by="day", recluster={"max_average_depth": 1})
    before = data_files(spark, table)
    assert {Path(p).parent.name for p in before} == {"day=0", "day=1", "day=2"}
    assert all(Path(p).name.startswith("sc-l1-") for p in before)
    run_model(dbt, alias, 15000, 18000, partition_by="day", day=1, recluster={"max_average_depth": 3.5})
    after = data_files(spark, table)
    untouched = {p for p in before if Path(p).parent.name != "day=1"}
    assert untouched <= set(after), "files of partitions without new rows were rewritten"
    assert all(Path(p).name.startswith("sc-l") for p in after)
    rows = spark.sql(f"select day, count(*) from {table} group by day").collect()
    expected_rows = spark.sql("select cast(pmod(xxhash64(id, 4), 3) as int) as day, count(*) from range(0, 15000) group by 1").collect()
    counts = {r[0]: r[1] for r in expected_rows}
    counts[1] += 3000
    assert {r[0]: r[1] for r in rows} == counts
    assert_no_leftovers(spark, s, alias)


def test_orc_table(spark, dbt, s):
    alias = "rc_orc"
    run_model(dbt, alias, 0, 6000, format="orc", recluster={"max_average_depth": 4})
    run_model(dbt, alias, 6000, 9000, format="orc", recluster={"max_average_depth": 4})
    table = f"{s}.{alias}"
    assert all(Path(p).name.startswith("sc-l") and p.endswith(".orc") for p in data_files(spark, table))
    assert actual(spark, table) == expected(spark, [(0, 9000)])


def test_bad_recluster_config_names_model_key_and_fix(spark, dbt, s):
    with pytest.raises(DbtError) as err:
        run_model(dbt, "rc_bad", 0, 100, recluster={"max_avg_depth": 4})
    text = str(err.value)
    assert "recluster_case" in text and "'recluster'" in text and "unknown key 'max_avg_depth'" in text
    assert "max_average_depth" in text  # the fix lists the valid keys


def test_run_operation_without_cluster_by_says_how_to_pass_it(spark, dbt, s):
    spark.sql(f"create table if not exists {s}.rc_plain using parquet as select id from range(10)")
    with pytest.raises(DbtError) as err:
        run_operation_json("recluster", {"relation": f"{s}.rc_plain"}, schema=s)
    assert "has no `cluster_by`" in str(err.value) and "columns:" in str(err.value)


def test_an_append_of_zero_rows_is_not_new_work(spark, dbt, s):
    alias = "rc_zero"
    table = f"{s}.{alias}"
    run_model(dbt, alias, 0, 6000, recluster={"max_average_depth": 1})  # every file clustered (sc-l*)
    before = data_files(spark, table)
    assert all(Path(p).name.startswith("sc-l") for p in before)
    run_model(dbt, alias, 6000, 6000, spark_clustering_recluster=False)  # selects nothing
    out = recluster_op(dbt, s, alias, recluster={"max_average_depth": 1000})
    assert out["decision"] == "skipped" and out["reason"] == "no new rows since the last recluster", out
    assert actual(spark, table) == expected(spark, [(0, 6000)])
    assert set(before) <= set(data_files(spark, table))


def test_set_location_during_a_recluster_aborts_and_leaves_no_staging_behind(spark, dbt, s, tmp_path):
    alias = "rc_moved"
    table = f"{s}.{alias}"
    run_model(dbt, alias, 0, 6000, recluster={"max_average_depth": 4})
    run_model(dbt, alias, 6000, 8000, spark_clustering_recluster=False)
    old = location(spark, table)
    new = tmp_path / "moved"
    shutil.copytree(old, new, ignore=shutil.ignore_patterns("_sc_*"))
    out = recluster_with_writer(spark, dbt, s, alias, f"alter table {table} set location 'file:{new}'",
                                recluster={"max_average_depth": 4})
    assert out["decision"] == "aborted" and "location changed" in out["stopped"], out
    assert not list(old.glob("_sc_recluster_*")), list(old.iterdir())
    assert actual(spark, table) == expected(spark, [(0, 8000)])
    assert_no_leftovers(spark, s, alias)


def test_drop_during_a_recluster_leaves_nothing_registered_after_the_next_run(spark, dbt, s):
    alias = "rc_dropped"
    table = f"{s}.{alias}"
    run_model(dbt, alias, 0, 6000, recluster={"max_average_depth": 4})
    run_model(dbt, alias, 6000, 8000, spark_clustering_recluster=False)
    with pytest.raises(DbtError):
        recluster_with_writer(spark, dbt, s, alias, f"drop table {table}", recluster={"max_average_depth": 4})
    run_model(dbt, alias, 0, 3000, recluster={"max_average_depth": 4})
    assert actual(spark, table) == expected(spark, [(0, 3000)])
    assert_no_leftovers(spark, s, alias)


BOXES = [{"a": [lo, lo + 19999], "b": [blo, blo + 199]} for lo, blo in
         [(0, 0), (10000, 300), (25000, 500), (40000, 100), (55000, 800), (70000, 250), (80000, 600), (5000, 700)]]


def box_sql(table, box):
    return f"select count(*) from {table} where " + " and ".join(
        f"{c} between {lo} and {hi}" for c, (lo, hi) in box.items())


def files_read(spark, table) -> float:
    """Mean files data skipping keeps over BOXES (each box once: the weights the policy sees)."""
    kept = [skipping_summary(spark.sql("explain " + box_sql(table, b)).first()[0])["kept"] for b in BOXES]
    return sum(kept) / len(kept)


def bytes_read(spark, table) -> float:
    """Mean bytes of the files whose min/max meet each of BOXES (what min/max skipping reads), from
    the rows (a reference independent of the package)."""
    aggs = ", ".join(f"min({c}), max({c})" for c in ["a", "b"])
    files = spark.sql(f"select _metadata.file_size, {aggs} from {table} group by _metadata.file_path, _metadata.file_size").collect()
    total = 0
    for box in BOXES:
        (alo, ahi), (blo, bhi) = box["a"], box["b"]
        total += sum(f[0] for f in files if f[1] <= ahi and f[2] >= alo and f[3] <= bhi and f[4] >= blo)
    return total / len(BOXES)


def run_boxes(spark, table, times=1):
    for _ in range(times):
        for b in BOXES:
            spark.sql(box_sql(table, b)).collect()


def cost_over_bytes(reason: str) -> float:
    """A cost decision's "the best rewrite (N files / X) costs Y": Y / X."""
    found = re.search(r"\(\d+ files / ([\d.]+ [KMG]?B)\) costs ([\d.]+ [KMG]?B)", reason)
    assert found, reason
    selected, cost = (float(t.split()[0]) * {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}[t.split()[1]]
                      for t in found.group(1, 2))
    return cost / selected


LARGE = {"files": 100, "file_bytes": 10 ** 6, "rows": 200_000}  # 100 MB: over the 64 MiB that every kind caches


@pytest.mark.parametrize("case, want", [
    ({"method": "hilbert", **LARGE}, 2),  # cut on sampled keys: its sample reads the clustering columns
    ({"method": "hilbert", "target_file_rows": 10 ** 6, **LARGE}, 2),  # one file: its quantiles read those alone
    ({"method": "auto", **LARGE}, 2),
    ({"method": "hilbert", "partition_by": ["day"], **LARGE}, 3),  # the quantiles and the checksum read every column
    ({"method": "linear", **LARGE}, 3),  # the checksum reads every column
    ({"method": "zorder", "ranges": {"a": 2 ** 22, "b": 2 ** 22, "c": 2 ** 22}, **LARGE}, 3),  # 66 bits: no BIGINT key
    # up to 64 MiB (recluster.cache_bytes), any kind: read into the cache once by the first pass, whatever the write
    ({"method": "hilbert"}, 2),
    ({"method": "linear"}, 2),
    ({"method": "hilbert", "partition_by": ["day"]}, 2),
    ({"method": "linear", "cache_bytes": 0}, 3),  # never cached
    ({"method": "linear", **LARGE, "cache_bytes": 10 ** 8}, 2),
    # Iceberg: small files, read whole by any pass, are read into the cache once up to 256 MiB
    ({"method": "linear", "read_whole_bytes": 10 ** 6, **LARGE}, 2),
    ({"method": "hilbert", "read_whole_bytes": 10 ** 6, **LARGE, "file_bytes": 2 * 10 ** 6}, 2),  # larger ones: not read whole
    ({"method": "linear", "read_whole_bytes": 10 ** 6, **LARGE, "file_bytes": 2 * 10 ** 6}, 3),
    # over 256 MiB of them: not cached, the sample reads them whole
    ({"method": "hilbert", "read_whole_bytes": 10 ** 6, "files": 300, "file_bytes": 10 ** 6, "rows": 600_000}, 3),
    ({"method": "linear", "read_whole_bytes": 10 ** 6, "cache_bytes": 0}, 3),
    # the log or manifests any rewrite reads again (Delta's and Iceberg's ~1 MB), on top of what the write reads
    ({"method": "hilbert", "read_whole_bytes": 10 ** 6, "rewrite_metadata_bytes": 10 ** 6}, 2),
    ({"method": "linear", "rewrite_metadata_bytes": 10 ** 6, **LARGE}, 3),
])
def test_cost_of_a_rewrite_is_what_its_write_plan_reads(spark, dbt, s, case, want):
    """What the cost policy charges a rewrite: its bytes read and written, and what the write's first
    pass reads on top, by the write plan's own rule (_write_first_pass): nothing where that pass reads
    the clustering columns (plus, on Iceberg, the files its reader reads whole), the bytes once more
    where it reads every column; nothing where the selection is read into the cache
    (_recluster_caches_selection: up to 64 MiB, or 256 MiB with files the reader reads whole); and
    the table's metadata that any rewrite reads (the kind's rewrite_metadata_bytes) on top."""
    args = {"method": "hilbert", "cluster_by": COLUMNS, "ranges": {c: 1000 for c in COLUMNS}, "partition_by": [],
            "target_file_rows": 1000, "files": 4, "file_bytes": 100_000, "rows": 8000, **case}
    got = run_operation_json("cost_of_rewrite", args, schema=s)
    assert got["bytes"] == args["files"] * args["file_bytes"], (case, got)
    assert got["cost"] == want * got["bytes"] + case.get("rewrite_metadata_bytes", 0), (case, got)


@pytest.mark.parametrize("savings, costs, pays", [
    ([3.0e6], [1.5e6], True),  # one scope: saves 1.5 MB more than its files cost, over the 1 MB
    ([2.0e6], [1.5e6], False),  # one scope: 0.5 MB over its files, under the 1 MB
    ([2.0e6, 2.0e6], [1.5e6, 1.5e6], False),  # two partitions: 1.0 MB together, not more than the 1 MB
    ([2.0e6, 2.0e6, 2.0e6], [1.5e6, 1.5e6, 1.5e6], True),  # three: 1.5 MB together, paid once
    ([], [], False),  # no candidate: nothing to pay for
])
def test_a_call_pays_the_table_metadata_once_for_all_its_partitions(spark, dbt, s, savings, costs, pays):
    """The table's metadata that a rewrite reads again (the kind's rewrite_metadata_bytes: its staging
    table, its commit, the measure after it) is read once per recluster call, however many
    partitions it rewrites. So the call rewrites the partitions whose rewrite saves more than its files
    cost, together, when their net savings together exceed it: partitions that each save too little to
    pay for it alone are rewritten once there are enough of them (it was counted per partition)."""
    got = run_operation_json("cost_call", {"savings": savings, "costs": costs, "rewrite_metadata_bytes": 10 ** 6},
                             schema=s)
    assert got == {"pays": pays, "cost": sum(costs) + 10 ** 6, "saving": sum(savings)}, got


def test_cost_policy_rewrites_when_the_reads_it_saves_outweigh_it(spark, dbt, s):
    """`recluster: {policy: cost}`: without a rate the gate decides and says why; with the box
    workload observed, an append is left alone at 0 queries per run and rewritten at 200; the
    estimate of files read per query is exact before the rewrite (min/max against the boxes, what
    skipping keeps) and close after; the observed rate is the queries counted between two runs."""
    alias = "rc_cost"
    table = f"{s}.{alias}"
    run_model(dbt, alias, 0, 20000, recluster={"max_average_depth": 1}, file_rows=1000)  # clustered: its scans are observed
    run_boxes(spark, table)
    run_model(dbt, alias, 20000, 36000, spark_clustering_recluster=False, file_rows=1000)
    before = data_files(spark, table)
    out = recluster_op(dbt, s, alias, recluster={"policy": "cost", "min_new_rows": 10 ** 9}, file_rows=1000)
    assert out["decision"] == "skipped" and out["policy"] == "gate", out
    assert out["reason"].startswith("cost policy falls back to the fixed gate (the rate of queries is not known yet "
                                    f"(the first run under the cost policy records {len(BOXES)} observed queries"), out

    out = recluster_op(dbt, s, alias, recluster={"policy": "cost", "queries_per_run": 0, "horizon_runs": 10}, file_rows=1000)
    assert out["decision"] == "skipped" and out["policy"] == "cost", out
    assert out["reason"].startswith("cost: nothing pays: the best rewrite ("), out
    # the best candidate is cut into several files on sampled keys: it reads and writes its bytes
    assert cost_over_bytes(out["reason"]) == pytest.approx(2, rel=0.01), out
    # into one file, the quantiles read the clustering columns and the write observes the checksum
    out = recluster_op(dbt, s, alias, recluster={"policy": "cost", "queries_per_run": 0, "horizon_runs": 10},
                       file_rows=10 ** 6)
    assert out["decision"] == "skipped" and cost_over_bytes(out["reason"]) == pytest.approx(2, rel=0.01), out
    assert data_files(spark, table) == before

    measured_before, read_before = files_read(spark, table), bytes_read(spark, table)
    out = recluster_op(dbt, s, alias, recluster={"policy": "cost", "queries_per_run": 200, "horizon_runs": 10}, file_rows=1000)
    assert out["decision"] == "reclustered" and out["reason"].startswith("cost: rewrite "), out
    figures = out["cost"]
    assert figures["queries"] == 2000 and figures["boxes"] == len(BOXES), figures
    assert abs(figures["files_per_query_now"] - measured_before) <= 0.06, (figures, measured_before)
    measured_after = files_read(spark, table)
    # the policy weighs bytes: the queries read fewer of them (files can be more, and smaller)
    assert bytes_read(spark, table) < read_before, (read_before, figures)
    assert abs(figures["files_per_query_after"] - measured_after) <= 0.35 * measured_after + 0.5, (figures, measured_after)
    assert abs(figures["bytes_per_query_now"] - read_before) <= 0.01 * read_before, (figures, read_before)
    assert figures["expected_saving_bytes"] > 2 * figures["rewrite_bytes"] > 0, figures
    assert actual(spark, table) == expected(spark, [(0, 36000)])

    # the observed rate: the queries counted since the previous run recorded its count (files_read's
    # EXPLAINs count too: a query planned is a query observed)
    run_boxes(spark, table, times=5)
    run_model(dbt, alias, 36000, 38000, spark_clustering_recluster=False, file_rows=1000)
    out = recluster_op(dbt, s, alias, recluster={"policy": "cost", "horizon_runs": 10}, file_rows=1000)
    assert out["cost"]["queries_per_run"] == 6 * len(BOXES) and out["cost"]["rate_source"] == "observed", out
    # the next run checks the last rewrite's estimate against the files it left (the append aside)
    assert out["cost"]["last_expected_files_per_query"] == figures["files_per_query_after"], out
    assert abs(out["cost"]["files_per_query_settled"] - measured_after) <= 0.06, (out, measured_after)
    assert f"the last rewrite expected ~{figures['files_per_query_after']} files per query" in out["reason"], out
    # ... and corrects its estimates by it: the files the rewritten ones meet now against what it expected
    # (figures are rounded to 0.1 in the outcome: the ratio is checked to that)
    assert figures["files_per_query_rewritten"] >= 0.5, figures
    left = figures["files_per_query_after"] - figures["files_per_query_rewritten"]
    ratio = min(3.0, max(1 / 3, (out["cost"]["files_per_query_settled"] - left) / figures["files_per_query_rewritten"]))
    assert [c["ratio"] for c in out["cost"]["estimate_checks"]] == [pytest.approx(ratio, rel=0.1, abs=0.05)], (out, ratio)
    assert out["cost"]["estimate_correction"] == pytest.approx(out["cost"]["estimate_checks"][0]["ratio"], abs=0.001), out
    assert f"; estimates x{out['cost']['estimate_correction']} (the table's last 1 rewrite(s) checked)" in out["reason"], out
    assert actual(spark, table) == expected(spark, [(0, 38000)])



def test_cost_policy_estimates_on_the_queries_served_once_they_outnumber_the_declared_boxes(spark, dbt, s):
    """A declared `cluster_workload` is what the cost policy estimates on until the extension has
    observed as many queries as it has boxes; from then on the observed boxes: the reads a rewrite
    saves are those of the queries the table serves. Estimated on them, files per query equal what
    min/max skipping keeps for those queries."""
    alias = "rc_cost_declared"
    table = f"{s}.{alias}"
    # 12 declared boxes, none like BOXES: thin slices of c alone
    declared = [{"c": [i * 500, i * 500 + 10]} for i in range(12)]
    settings = {"policy": "cost", "queries_per_run": 0, "horizon_runs": 10}
    run_model(dbt, alias, 0, 20000, recluster={"max_average_depth": 1}, file_rows=1000, workload=declared)
    run_boxes(spark, table)  # 8 queries observed: fewer than the 12 declared boxes
    run_model(dbt, alias, 20000, 36000, spark_clustering_recluster=False, file_rows=1000, workload=declared)
    out = recluster_op(dbt, s, alias, recluster=settings, file_rows=1000, workload=declared)
    assert out["policy"] == "cost" and out["cost"]["workload"] == "declared", out
    assert out["cost"]["boxes"] == len(declared) and "observed boxes" not in out["reason"], out

    run_boxes(spark, table)  # 16 observed: the 8 boxes the table serves, twice each
    # an append, so that the next call has something to decide (nothing changed costs nothing)
    run_model(dbt, alias, 36000, 38000, spark_clustering_recluster=False, file_rows=1000, workload=declared)
    measured = files_read(spark, table)  # its EXPLAINs are observed too: 24, 3 of each box
    out = recluster_op(dbt, s, alias, recluster=settings, file_rows=1000, workload=declared)
    assert out["policy"] == "cost" and out["cost"]["workload"] == "observed", out
    assert out["cost"]["boxes"] == len(BOXES), out
    assert abs(out["cost"]["files_per_query_now"] - measured) <= 0.06, (out, measured)
    assert (f"; estimated on the {len(BOXES)} observed boxes, not the {len(declared)} declared "
            f"({3 * len(BOXES)} queries observed)") in out["reason"], out
    assert actual(spark, table) == expected(spark, [(0, 38000)])


def test_cost_policy_with_horizon_lost_reads_counts_the_queries_since_the_last_rewrite(spark, dbt, s):
    """`horizon_runs: lost_reads`: a rewrite is credited with the queries since the last rewrite (the
    rate x the runs since it, with a declared rate), not with a horizon of future runs; the count
    grows run by run while nothing is rewritten and starts again after a rewrite."""
    alias = "rc_cost_lost"
    table = f"{s}.{alias}"
    run_model(dbt, alias, 0, 20000, recluster={"max_average_depth": 1}, file_rows=1000)
    run_boxes(spark, table)  # an observed workload
    lost = {"policy": "cost", "horizon_runs": "lost_reads"}
    end = 20000
    for runs in (1, 2):
        run_model(dbt, alias, end, end + 8000, spark_clustering_recluster=False, file_rows=1000)
        end += 8000
        out = recluster_op(dbt, s, alias, recluster={**lost, "queries_per_run": 1}, file_rows=1000)
        assert out["policy"] == "cost" and out["decision"] == "skipped", out
        assert out["cost"]["queries"] == runs, out
        assert f"1 queries per run (declared); {runs} since the last rewrite, {runs} run(s) ago (horizon lost_reads)" in out["reason"], out
    run_model(dbt, alias, end, end + 8000, spark_clustering_recluster=False, file_rows=1000)
    end += 8000
    out = recluster_op(dbt, s, alias, recluster={**lost, "queries_per_run": 10 ** 6}, file_rows=1000)
    assert out["decision"] == "reclustered" and out["cost"]["queries"] == 3 * 10 ** 6, out
    assert out["cost"]["expected_saving_bytes"] > 2 * out["cost"]["rewrite_bytes"], out
    run_model(dbt, alias, end, end + 8000, spark_clustering_recluster=False, file_rows=1000)
    end += 8000
    out = recluster_op(dbt, s, alias, recluster={**lost, "queries_per_run": 1}, file_rows=1000)
    assert out["cost"]["queries"] == 1 and "1 since the last rewrite, 1 run(s) ago" in out["reason"], out
    assert actual(spark, table) == expected(spark, [(0, end)])


def test_cost_policy_with_horizon_lost_reads_credits_a_full_recluster_since_its_oldest_run(spark, dbt, s):
    """`horizon_runs: lost_reads`: a candidate that takes in a run is credited with the queries since
    the oldest run it takes in was written (the maintenance record's `run_created`), not only since
    the last rewrite, so a rewrite of the new files alone does not restart a full recluster's count.
    The same table and rate, once with its run dated by the first cost run (nothing pays) and once
    with the run dated 10^6 runs back: the full recluster pays and says why."""
    alias = "rc_cost_run_age"
    table = f"{s}.{alias}"
    run_model(dbt, alias, 0, 16000, recluster={"max_average_depth": 1}, file_rows=1000)  # its post-hook: one run
    run_boxes(spark, table)  # an observed workload
    lost = {"policy": "cost", "horizon_runs": "lost_reads", "queries_per_run": 1}
    run_model(dbt, alias, 16000, 20000, spark_clustering_recluster=False, file_rows=1000)
    out = recluster_op(dbt, s, alias, recluster=lost, file_rows=1000)
    assert out["policy"] == "cost" and out["decision"] == "skipped", out
    assert "since the oldest run" not in out["reason"], out

    def record():
        return json.loads(spark.sql(f"select record from maintenance_record('{table}')").first()[0])

    saved = record()
    # the table's one run (its post-hook's rewrite), dated by this first cost run
    assert list(saved["run_created"].values()) == [{"queries": None, "runs": saved["cost_runs"] - 1}], saved
    (run,) = saved["run_created"]
    saved["run_created"][run] = {"queries": None, "runs": saved["cost_runs"] - 10 ** 6}
    spark.sql(f"select * from save_maintenance_record('{table}', '{json.dumps(saved)}')").collect()

    run_model(dbt, alias, 20000, 24000, spark_clustering_recluster=False, file_rows=1000)
    before = data_files(spark, table)
    out = recluster_op(dbt, s, alias, recluster=lost, file_rows=1000)
    assert out["decision"] == "reclustered", out
    assert out["cost"]["queries"] == 2 and out["cost"]["rewrite_queries"] == 10 ** 6 + 1, out["cost"]
    assert ("1 queries per run (declared); 2 since the last rewrite, 2 run(s) ago, 1000001 since the oldest run it "
            "takes in was written (horizon lost_reads)") in out["reason"], out
    after = data_files(spark, table)
    assert not set(before) & set(after), (before, after)  # every file rewritten: the old run's too
    # the record dates the run the rewrite wrote by this run and forgets the old one
    saved = record()
    assert list(saved["run_created"].values()) == [{"queries": saved["observed_queries"], "runs": saved["cost_runs"]}], saved
    assert actual(spark, table) == expected(spark, [(0, 24000)])


def test_cost_policy_never_rewrites_one_run_alone(spark, dbt, s):
    """A table that is one clustered run and nothing new, under the cost policy at a rate where any
    saving would pay: rewritten alone, the run would come out as it went in (its rows, its layout),
    so there is nothing to rewrite, whatever the estimate says. Its adversary: past estimates found
    pessimistic (x0.34 recorded), which once made a run's rewrite look like a saving, so that a
    later round of one call rewrote the file the round before had just written, again and again."""
    alias = "rc_cost_one_run"
    table = f"{s}.{alias}"
    run_model(dbt, alias, 0, 16000, recluster={"max_average_depth": 1}, file_rows=1000)  # its post-hook: one run
    run_boxes(spark, table)  # an observed workload
    before = data_files(spark, table)
    assert len(before) == 16 and all("/sc-l1-" in p for p in before), before
    cost = {"policy": "cost", "queries_per_run": 10 ** 9, "horizon_runs": 10, "max_rounds": 4}
    out = recluster_op(dbt, s, alias, recluster=cost, file_rows=1000)
    assert out["policy"] == "cost" and out["decision"] == "skipped", out
    assert out["reason"] == "cost: nothing to rewrite", out
    assert data_files(spark, table) == before

    record = json.loads(spark.sql(f"select record from maintenance_record('{table}')").first()[0])
    record.pop("expected_files_per_query", None)
    record["estimate_checks"] = [{"rewrite_at": "2026-01-01T00:00:00", "ratio": 0.34}]
    spark.sql(f"select * from save_maintenance_record('{table}', '{json.dumps(record)}')").collect()
    spark.sql(f"insert into {table} select /*+ repartition(1) */ * from ({ROW_SQL} from range(16000, 16500))").collect()
    out = recluster_op(dbt, s, alias, recluster=cost, file_rows=1000)
    assert out["decision"] == "reclustered" and out["cost"]["estimate_correction"] == 0.34, out
    # the first round takes the new file in; no later round rewrites a run alone
    assert len(out["rounds"]) == 1, out["rounds"]
    assert actual(spark, table) == expected(spark, [(0, 16500)])


def test_cost_policy_without_a_workload_falls_back_to_the_gate_and_says_so(spark, dbt, s):
    alias = "rc_cost_none"
    run_model(dbt, alias, 0, 6000, spark_clustering_recluster=False)
    out = recluster_op(dbt, s, alias, recluster={"policy": "cost", "queries_per_run": 20, "max_average_depth": 1})
    assert out["decision"] == "reclustered" and out["policy"] == "gate", out
    assert out["reason"].startswith("cost policy falls back to the fixed gate (no workload observed or declared"), out
    assert actual(spark, f"{s}.{alias}") == expected(spark, [(0, 6000)])


def test_a_changed_method_rewrites_every_file_under_the_new_one_and_says_so(spark, dbt, s):
    """The runs of the old method are clustered on an order the queries no longer follow: the first
    recluster after the change rewrites every file, never a mix of two orders."""
    alias = "rc_changed"
    table = f"{s}.{alias}"
    run_model(dbt, alias, 0, 6000, recluster={"max_average_depth": 1})
    run_model(dbt, alias, 6000, 7000, spark_clustering_recluster=False)
    before = set(data_files(spark, table))
    out = recluster_op(dbt, s, alias, method="linear", recluster={"policy": "cost", "queries_per_run": 0})
    assert out["decision"] == "reclustered", out
    assert out["reason"] == ("cluster_method changed from hilbert to linear since the table was last clustered: "
                             "every file is rewritten under the new key"), out
    assert before.isdisjoint(data_files(spark, table))
    props = {r[0]: r[1] for r in spark.sql(f"show tblproperties {table}").collect()}
    assert props["spark_clustering.method"] == "linear"
    assert actual(spark, table) == expected(spark, [(0, 7000)])
    # and once under the new method, the next run decides as usual
    out = recluster_op(dbt, s, alias, method="linear")
    assert "changed" not in out["reason"], out


# ---- maintain(): every model with the hook or a recluster config, outside the run ----------------

# The test project's candidates: recluster_case (the hook), cluster_case once case_recluster is set
# (a recluster config), telemetry_incremental (the hook; never built in this module's schema).
MAINTAIN_ALIAS, BUILT_ALIAS = "rc_kept", "rc_kept_built"


def maintain_vars(s, **vars_):
    """recluster_case as rc_kept, cluster_case as rc_kept_built (from mt_source), both gated at
    max_average_depth 3."""
    v = model_vars(MAINTAIN_ALIAS, recluster={"max_average_depth": 3})
    v.update({"case_source": f"{s}.mt_source", "case_alias": BUILT_ALIAS, "case_cluster_by": COLUMNS,
              "case_file_rows": FILE_ROWS, "case_recluster": {"max_average_depth": 3}})
    v.update({(k if k.startswith(("spark_clustering", "case_")) else f"rc_{k}"): val for k, val in vars_.items()})
    return v


def maintain_op(s, args=None, **vars_):
    return run_operation_json("spark_clustering.maintain", args or {}, prefix="maintain", schema=s,
                              vars=maintain_vars(s, **vars_))


@pytest.fixture(scope="module")
def maintained(spark, dbt, s):
    """recluster_case with an unclustered append (appended with reclustering off), cluster_case built by
    clustered_table (one clustered run, nothing new): (recluster_case table, cluster_case table)."""
    run_model(dbt, MAINTAIN_ALIAS, 0, 6000, recluster={"max_average_depth": 3})
    spark.sql(f"drop table if exists {s}.mt_source")
    spark.sql(f"create table {s}.mt_source using parquet as {ROW_SQL} from range(0, 6000)")
    dbt(["run", "--select", "cluster_case"], vars=maintain_vars(s))
    return f"{s}.{MAINTAIN_ALIAS}", f"{s}.{BUILT_ALIAS}"


def append_unclustered(spark, dbt, s, hooked, built, start, end):
    """New level-0 files in both tables: each needs a recluster at max_average_depth 3."""
    run_model(dbt, MAINTAIN_ALIAS, start, end, spark_clustering_recluster=False)
    spark.sql(f"insert into {built} select /*+ repartition(3) */ * from ({ROW_SQL} from range({start}, {end}))")


def by_model(summary):
    return {row["model"]: row for row in summary["tables"]}


def test_maintain_reclusters_the_models_that_need_it_and_reports_the_others(spark, dbt, s, maintained):
    hooked, built = maintained
    run_model(dbt, MAINTAIN_ALIAS, 6000, 9000, spark_clustering_recluster=False)
    appended = {p for p in data_files(spark, hooked) if Path(p).name.startswith("part-")}
    assert appended
    before_built = actual(spark, built)
    out = maintain_op(s)
    rows = by_model(out)
    assert set(rows) == {MODEL, "cluster_case", "telemetry_incremental"}, rows
    assert rows[MODEL]["decision"] == "reclustered" and rows[MODEL]["table"] == hooked, rows[MODEL]
    assert rows[MODEL]["files_rewritten"] >= len(appended) and rows[MODEL]["bytes_rewritten"] > 0, rows[MODEL]
    assert rows[MODEL]["rounds"] >= 1 and rows[MODEL]["expected_saving_bytes"] is None, rows[MODEL]
    # the clustered_table build is one clustered run and nothing arrived since
    assert rows["cluster_case"]["decision"] == "skipped", rows["cluster_case"]
    assert rows["cluster_case"]["reason"] == "no new rows since the last recluster", rows["cluster_case"]
    assert rows["cluster_case"]["files_rewritten"] == 0
    assert rows["telemetry_incremental"]["decision"] == "not built", rows["telemetry_incremental"]
    assert out["failed"] == []
    assert not any(Path(p).name.startswith("part-") for p in data_files(spark, hooked))
    assert actual(spark, hooked) == expected(spark, [(0, 9000)])
    assert actual(spark, built) == before_built == expected(spark, [(0, 6000)])
    assert_no_leftovers(spark, s, MAINTAIN_ALIAS)


def test_maintain_selects_by_name_and_tag_and_names_what_matches_nothing(spark, dbt, s, maintained):
    assert set(by_model(maintain_op(s, {"select": ["cluster_case"]}))) == {"cluster_case"}
    tagged = maintain_op(s, {"select": ["tag:nightly"]}, tags=["nightly"])
    assert set(by_model(tagged)) == {MODEL}, tagged
    assert set(by_model(maintain_op(s, {"select": ["path:models/example"]}))) == {"telemetry_incremental"}
    assert set(by_model(maintain_op(s, {"exclude": ["telemetry_incremental", MODEL]}))) == {"cluster_case"}
    for args, name in [({"select": ["no_such_model"]}, "no_such_model"), ({"select": ["tag:nightly"]}, "tag:nightly"),
                       ({"exclude": ["smoke_numbers"]}, "smoke_numbers")]:  # a model, but without the hook
        with pytest.raises(DbtError) as err:
            maintain_op(s, args)
        text = str(err.value)
        assert f"'{name}' matches no model with the recluster() post-hook" in text, text[-3000:]
        assert f"those models are: cluster_case, {MODEL}, telemetry_incremental" in text, text[-3000:]


@pytest.mark.parametrize("how", ["config", "run var"])
def test_maintain_honours_skip_recluster(spark, dbt, s, maintained, how):
    hooked, built = maintained
    start = {"config": 20000, "run var": 30000}[how]
    append_unclustered(spark, dbt, s, hooked, built, start, start + 2000)
    switch = {"config": {"skip": True}, "run var": {"spark_clustering_skip_recluster": [MODEL]}}[how]
    before = data_files(spark, hooked)
    rows = by_model(maintain_op(s, **switch))
    reason = {"config": "config skip_recluster is true", "run var": "var spark_clustering_skip_recluster names the model"}[how]
    assert (rows[MODEL]["decision"], rows[MODEL]["reason"]) == ("skipped", reason), rows[MODEL]
    assert data_files(spark, hooked) == before
    # the other model is not named: reclustered
    assert rows["cluster_case"]["decision"] == "reclustered", rows["cluster_case"]
    assert not any(Path(p).name.startswith("part-") for p in data_files(spark, built))
    # and the next maintain without the switch reclusters the skipped one
    rows = by_model(maintain_op(s))
    assert rows[MODEL]["decision"] == "reclustered", rows[MODEL]


def test_one_failing_table_is_reported_and_fails_the_operation_after_the_others(spark, dbt, s, maintained, tmp_path):
    """recluster_case's lease held by another writer: its row says so, cluster_case is still reclustered,
    and the run-operation fails (exit code 1) naming the failed table."""
    hooked, built = maintained
    append_unclustered(spark, dbt, s, hooked, built, 40000, 42000)
    hooked_before, built_expected = data_files(spark, hooked), actual(spark, built)
    token = spark.sql(f"select lease_token from table_lease_acquire('{hooked}', 'test holder', '0', 'table')").first()[0]
    try:
        run, output = dbt_output(dbt, ["run-operation", "spark_clustering.maintain", "--args", "{}"], tmp_path,
                                 expect_success=False, vars=maintain_vars(s, spark_clustering_lease_wait_seconds=0))
    finally:
        spark.sql(f"select * from table_lease_release('{token}', 'false')").collect()
    assert not run.success
    line = next(line for line in output.splitlines() if "maintain: {" in line)
    summary = json.loads(line[line.index("maintain: ") + len("maintain: "):])
    rows = by_model(summary)
    assert rows[MODEL]["decision"] == "failed" and "is being written by test holder" in rows[MODEL]["reason"], rows[MODEL]
    assert rows["cluster_case"]["decision"] == "reclustered", rows["cluster_case"]
    assert summary["failed"] == [MODEL]
    error = "\n".join(run.messages) + output
    assert f"maintain: 1 of 3 table(s) failed" in error and f"{MODEL} ({hooked}): spark_clustering: table {hooked} is being written" in error, error[-3000:]
    assert data_files(spark, hooked) == hooked_before
    assert not any(Path(p).name.startswith("part-") for p in data_files(spark, built))
    assert actual(spark, built) == built_expected


def run_model_costed(dbt, alias, start, end, **vars_):
    """run_model, with what its recluster() post-hook cost (ReclusterCost.last)."""
    cost = ReclusterCost()
    dbt(["run", "--select", MODEL], vars=model_vars(alias, start=start, end=end, **vars_), callbacks=[cost])
    return cost.last


def test_a_post_hook_after_nothing_changed_reads_one_token_and_stops(spark, dbt, s):
    """The second post-hook of a run that added no rows (Spark still writes one empty file), after no
    other writer, on a table of 32-64 files: it reads the table's state and its maintenance record in
    one statement, finds both as the last recluster left them and stops, before the lease, the
    recovery and the listing (docs/architecture.md, "The maintenance record")."""
    alias = "rc_noop"
    table = f"{s}.{alias}"
    gate = {"max_average_depth": 3}
    full = run_model_costed(dbt, alias, 0, 32000, recluster=gate, file_rows=1000)
    files = data_files(spark, table)
    # 32000 rows at 1000 per file: 32 ranges; a write may split a range in two (seen in CI: 32 one run, 64 another)
    assert len(files) >= 32 and "recluster_case: reclustered" in full["line"], (len(files), full["line"])
    # the rows it rewrote were checksummed by the write that read them (observe_row_checksum), not by
    # a pass of their own: the one statement on its source view that hashes rows is that write
    source = f"{alias}__sc_recluster_source"
    hashing = [q for q in full["statements"] if f"from {source}" in q and "xxhash64(" in q]
    assert len(hashing) == 1 and "observe_row_checksum(" in hashing[0] and "create table" in hashing[0], hashing
    noop = run_model_costed(dbt, alias, 32000, 32000, recluster=gate, file_rows=1000)
    print(f"\nfull: {len(full['statements'])} statements, {full['seconds']:.3f} s; "
          f"no-op: {len(noop['statements'])} statements, {noop['seconds']:.3f} s")
    for sql, elapsed in zip(noop["statements"], noop.get("elapsed", [])):
        print("  ", f"{elapsed:.3f}", " ".join(sql.split()).split("*/", 1)[-1][:140])
    assert f"skipped (nothing changed since the last recluster (state files:{len(files)}:" in noop["line"], noop["line"]
    assert len(noop["statements"]) <= 5, noop["statements"]
    assert not any(f"{name}(" in sql for sql in noop["statements"] for name in ["table_lease_acquire", "table_rewrite_recover", "table_data_files"]), noop["statements"]
    assert set(files) <= set(data_files(spark, table))  # and the empty file of the insert of no rows
    assert actual(spark, table) == expected(spark, [(0, 32000)])
    record = json.loads(spark.sql(f"select record from maintenance_record('{table}')").first()[0])
    assert record["state"].startswith(f"files:{len(files)}:") and record["config"]["gate"]["max_average_depth"] == 3, record
    assert [h["decision"] for h in record["history"]] == ["reclustered"], record["history"]


def test_an_insert_by_another_writer_or_another_config_is_measured_again(spark, dbt, s):
    alias = "rc_noop_changed"
    table = f"{s}.{alias}"
    gate = {"max_average_depth": 3}
    run_model(dbt, alias, 0, 6000, recluster=gate)
    spark.sql(f"insert into {table} {ROW_SQL} from range(6000, 9000)")  # a writer that is not dbt
    out = recluster_op(dbt, s, alias, recluster=gate)
    assert not out["reason"].startswith("nothing changed") and out["before"]["new_rows"] == 3000, out
    again = recluster_op(dbt, s, alias, recluster=gate)
    assert again["decision"] == "skipped" and again["reason"].startswith("nothing changed since the last recluster"), again
    # another cluster_by (the run-operation's columns), another method, another gate: measured again
    for args, vars_ in [({"columns": ["a", "b"]}, {}), ({}, {"method": "zorder"}), ({}, {"recluster": {"max_average_depth": 4}})]:
        changed = run_operation_json("recluster", {"relation": table, **args}, schema=s,
                                     vars=model_vars(alias, **{"recluster": gate, **vars_}))
        assert not changed["reason"].startswith("nothing changed"), (args, vars_, changed)
    assert actual(spark, table) == expected(spark, [(0, 9000)])


def test_a_pending_commit_journal_is_recovered_even_when_nothing_else_changed(spark, dbt, s):
    """A recluster killed after writing its commit journal (the test hook after_manifest:fail) leaves
    the table's files as they were but a journal to roll forward: table_state says `pending`, so the
    next post-hook recovers instead of stopping, even with a record that holds the current token."""
    alias = "rc_noop_journal"
    table = f"{s}.{alias}"
    gate = {"max_average_depth": 3}
    run_model(dbt, alias, 0, 6000, recluster=gate)
    spark.conf.set("spark.sparkclustering.test.pauseAt", "after_manifest:fail")
    try:
        with pytest.raises(DbtError, match="injected failure at after_manifest"):
            run_model(dbt, alias, 6000, 9000, recluster=gate)
    finally:
        spark.conf.unset("spark.sparkclustering.test.pauseAt")
    state = spark.sql(f"select state, pending from table_state('{table}')").first()
    assert state["pending"] and leftovers(spark, s, alias), (state, leftovers(spark, s, alias))
    # the record says nothing changed since (as if the last recluster had seen these very files)
    record = json.loads(spark.sql(f"select record from maintenance_record('{table}')").first()[0])
    record["state"] = state["state"]
    text = json.dumps(record).replace("\\", "\\\\").replace("'", "\\'")
    spark.sql(f"select * from save_maintenance_record('{table}', '{text}')").collect()
    cost = run_model_costed(dbt, alias, 9000, 9000, recluster=gate)
    assert "nothing changed" not in cost["line"], cost["line"]
    assert any("table_rewrite_recover" in sql for sql in cost["statements"]), cost["statements"]
    assert_no_leftovers(spark, s, alias)
    assert not spark.sql(f"select pending from table_state('{table}')").first()[0]
    assert actual(spark, table) == expected(spark, [(0, 9000)])
