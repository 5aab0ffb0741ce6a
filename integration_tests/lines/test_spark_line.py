"""Smoke suite of one Spark line (conftest.py): on real Spark of that line with the jar built for it,
the native keys give the Python reference's bits, a clustered build through dbt writes tight files
that data skipping prunes with the answers of a full scan, the one-pass k-d tree fit cuts the SQL
fit's trees, a recluster killed with SIGKILL at a random
step loses no row (on one line per run of scripts/test: KILL_LINES), the writer lease excludes a second writer, a jar built for another line stops
the session's start naming both lines and the jar to load, and a table of each format the line has a
release of builds and reclusters."""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from harness.recluster_child import MACRO_STEPS, pause_at, run_child
from spark_clustering_dev import lines
from spark_clustering_dev.dbt import run_dbt, run_operation_json
from spark_clustering_dev.layout import fingerprint
from spark_clustering_dev.paths import JAR, SPARK_LINE
from spark_clustering_dev.recluster_case import actual, expected, leftovers
from spark_clustering_dev.spark import confs, formats_this_run, jvm_options_env
from spark_clustering_udfs import reference

SEED = int(os.environ.get("SPARK_CLUSTERING_LINE_SEED", time.time_ns() % 100_000))
KILL_STEPS = ["after_staging_write", "after_validate", "after_manifest", "after_first_move", "after_moves",
              "after_deletes"]


# The lines whose suite kills a recluster (a child JVM of the line and its recovery: the suite's
# costliest test, 170-400 s beside the full suite). By hand every line's does; scripts/test names one
# line per run, drawn at random (SPARK_CLUSTERING_LINE_KILL, printed), so every line's jar is killed
# in turn while the default line's full suite kills at two of its steps on every run.
KILL_LINES = (os.environ.get("SPARK_CLUSTERING_LINE_KILL") or SPARK_LINE).split(",")


# a line that does not kill this run has no such test, rather than a skipped one
if SPARK_LINE in KILL_LINES:
    def test_a_recluster_killed_at_a_random_step_loses_nothing(request, session_work, tmp_path):
        """The incremental model's append + recluster in a child process (its own Spark of this line),
        killed with SIGKILL at a random step of the recluster; the next run recovers (back before the
        journal, forward after it) and the rows are exactly the batches'. The next run is the suite's
        own session, a process started after the kill over the killed one's warehouse and metastore
        (so this test comes first in the file): one JVM start and full dbt parse fewer than a second
        child, whose run the suite's later tests then share. (Run after the session started, e.g.
        alone by -k, the next run is a second child.)"""
        from pyspark import SparkContext

        step = random.Random(SEED).choice(KILL_STEPS)
        gate = {"max_average_depth": 1.5}
        model = ["run", "--select", "recluster_case"]
        schema = "it_line_kill"

        def run(start, end, **extra):
            return {"dbt": model, "vars": {"rc_alias": "rc_line", "rc_start": start, "rc_end": end, "rc_file_rows": 2000,
                                           "rc_recluster": gate, **extra}}

        in_session = SparkContext._active_spark_context is None
        pause_sql, hook, marker = pause_at(step)
        base = {"work": str(session_work if in_session else tmp_path / "child"), "schema": schema}
        # the first run only makes the table (reclustering it first would cost the child's cold JVM ~10 s
        # and change nothing the kill tests): the second run's recluster rewrites both runs' files
        code, out = run_child({**base, "steps": [run(0, 8000, spark_clustering_recluster=False), *pause_sql,
                                                 run(8000, 11000, **hook)]}, kill_at=marker)
        assert code == -signal.SIGKILL, out[-3000:]
        recovery = run(11000, 12000, spark_clustering_recluster=False)
        if in_session:
            spark = request.getfixturevalue("spark")
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):  # dbt's log lines, the recovery's among them
                run_dbt(recovery["dbt"], schema=schema, vars=recovery["vars"])
            out = printed.getvalue()
            check = {"rows_match": actual(spark, f"{schema}.rc_line") == expected(spark, [(0, 12000)]),
                     "leftovers": leftovers(spark, schema, "rc_line")}
        else:
            code, out = run_child({**base, "steps": [recovery, {"check": {"alias": "rc_line", "batches": [[0, 12000]]}}]},
                                  kill_at=None)
            assert code == 0, out[-4000:]
            [check] = [json.loads(x.split(": ", 1)[1]) for x in out.splitlines() if x.startswith("recluster_child: ")]
        recovered = [x for x in out.splitlines() if "interrupted run" in x]
        print(f"[line {SPARK_LINE}] killed at {step} (seed {SEED}): {recovered[:1]}; {check}")
        assert check["rows_match"] and check["leftovers"] == [], (step, SEED, check)
        want = "rolled back" if step in MACRO_STEPS else "rolled forward"
        assert recovered and want in recovered[0], (step, SEED, recovered)


def test_it_runs_the_line_it_was_built_for(spark):
    assert lines.line_of(spark.version) == SPARK_LINE
    built = spark.sql("select 1").sparkSession.sparkContext.getConf().get("spark.jars", "")
    assert JAR.name in built and JAR.name == lines.jar_name(SPARK_LINE), built


def test_the_native_keys_are_the_python_reference_bits(spark):
    """range_id, zorder_key and hilbert_key of the jar against spark_clustering_udfs.reference (pure
    Python), BIGINT keys and BINARY ones (more than 63 bits), 400 random rows."""
    rng = random.Random(SEED)
    rows = [(rng.randrange(1 << 10), rng.randrange(1 << 10), rng.randrange(1 << 10), rng.randrange(1 << 31),
             rng.randrange(1 << 31), rng.randrange(1 << 31), rng.uniform(-100, 100)) for _ in range(400)]
    spark.createDataFrame(rows, "a int, b int, c int, x bigint, y bigint, z bigint, v double") \
        .createOrReplaceTempView("line_ids")
    bounds = sorted(rng.uniform(-100, 100) for _ in range(20))
    array = "array(" + ", ".join(f"{b!r}D" for b in bounds) + ")"
    got = spark.sql(f"""select a, b, c, x, y, z, v, hilbert_key(10, a, b, c), zorder_key(10, a, b, c),
        hilbert_key(31, x, y, z), zorder_key(31, x, y, z), range_id(v, {array}) from line_ids""").collect()
    assert len(got) == len(rows)
    for r in got:
        a, b, c, x, y, z, v = r[:7]
        assert reference.key_as_int(r[7]) == reference.key_as_int(reference.hilbert_key(10, a, b, c)), r
        assert reference.key_as_int(r[8]) == reference.key_as_int(reference.zorder_key(10, a, b, c)), r
        assert isinstance(r[9], (bytes, bytearray)), r  # 93 bits: BINARY
        assert reference.key_as_int(r[9]) == reference.key_as_int(reference.hilbert_key(31, x, y, z)), r
        assert reference.key_as_int(r[10]) == reference.key_as_int(reference.zorder_key(31, x, y, z)), r
        assert r[11] == reference.range_id(v, bounds), r


def test_a_clustered_build_writes_tight_files_that_data_skipping_prunes(spark, schema):
    """clustered_table (hilbert, native keys) through dbt: the model's rows exactly, 8 files each
    spanning a slice of the clustering column's range, and a box query that reads fewer files (from
    the sidecar the build wrote) with the answer of a full scan."""
    source = f"{schema}.line_source"
    spark.sql(f"drop table if exists {source}")
    spark.sql(f"""create table {source} using parquet as select id, cast(pmod(xxhash64(id, 1), 10000) as int) as a,
        cast(pmod(xxhash64(id, 2), 5000) as int) as b from range(40000)""")
    run_dbt(["run", "--select", "cluster_case"], schema=schema,
            vars={"case_source": source, "case_alias": "line_clustered", "case_num_files": 8})
    table = f"{schema}.line_clustered"
    assert fingerprint(spark, table, ["id", "a", "b"]) == fingerprint(spark, source, ["id", "a", "b"])
    spans = spark.sql(f"select max(a) - min(a) from {table} group by _metadata.file_path").collect()
    assert len(spans) == 8 and sum(s[0] for s in spans) / 8 < 0.6 * 10000, spans
    props = dict(spark.sql(f"show tblproperties {table}").collect())
    assert props.get("spark_clustering.backend") in (None, "native") and props.get("spark_clustering.validated") == "true", props
    query = f"select count(*), sum(id) from {table} where a between 1000 and 1900 and b < 2500"
    plan = spark.sql(f"explain {query}").first()[0]
    assert "DataSkipping: kept" in plan, plan
    kept, total = [int(x) for x in plan.split("DataSkipping: kept ")[1].split(" files")[0].split(" of ")]
    assert kept < total == 8, plan
    on = spark.sql(query).first()
    with confs(spark, {"spark.sparkclustering.skipping.enabled": "false"}):
        assert spark.sql(query).first() == on
    assert on[0] > 0


def test_the_one_pass_kdtree_fit_cuts_the_trees_of_the_sql_fit(spark, schema):
    """cluster_method auto's k-d trees, fit by the jar's kdtree_fit and by the SQL fit on the same
    rows (ties, NULLs, strings, dates) and boxes: the same cuts."""
    source = f"{schema}.line_fit_rows"
    spark.sql(f"drop table if exists {source}")
    spark.sql(f"""create table {source} using parquet as select id,
        case when id % 9 = 0 then null else cast(pmod(xxhash64(id, 1), 23) as int) end as n,
        date_add(date'2024-01-01', cast(pmod(xxhash64(id, 2), 400) as int)) as d,
        case when id % 5 = 0 then null else concat('k', cast(pmod(xxhash64(id, 3), 900) as string)) end as w
        from range(3000)""")
    workload = [{"n": [2, 8]}, {"n": [2, 8]}, {"d": ["2024-02-01", None], "w": [None, "k5"]}, {"w": [None, None]}]
    out = run_operation_json("kdtree_fits", {"relation": source, "columns": ["n", "d", "w"], "files": 8,
                                             "workload": workload}, schema=schema)
    assert [len(tree["cuts"]) for tree in out["native"]] == [7, 7], out
    assert out["native"] == out["sql"], out


def test_the_writer_lease_lets_one_writer_hold_a_table(spark, schema):
    table = f"{schema}.line_leased"
    spark.sql(f"create table if not exists {table} (id bigint) using parquet")
    token = spark.sql(f"select lease_token from table_lease_acquire('{table}', 'line writer', '0', 'table')").first()[0]
    other = spark.newSession()
    try:
        with pytest.raises(Exception) as err:
            other.sql(f"select lease_token from table_lease_acquire('{table}', 'second writer', '0.5', 'table')").collect()
        assert f"table {table} is being written by line writer" in str(err.value), str(err.value)[:2000]
    finally:
        spark.sql(f"select * from table_lease_release('{token}', 'false')").collect()
    again = other.sql(f"select lease_token from table_lease_acquire('{table}', 'second writer', '5', 'table')").first()[0]
    other.sql(f"select * from table_lease_release('{again}', 'false')").collect()
    assert again != token


def test_a_jar_of_another_line_stops_the_session_naming_both(tmp_path):
    """A session of this line with the jar of another line: its start fails at once, naming the jar's
    line, this Spark's version and the jar to load (not a NoSuchMethodError in a query later)."""
    others = [line for line in lines.lines() if line != SPARK_LINE and lines.jar(line).exists()]
    assert others, "no other line's jar was built: scripts/setup --all-lines"
    other = random.Random(SEED).choice(others)
    script = f"""
from pyspark.sql import SparkSession
try:
    SparkSession.builder.config("spark.jars", {str(lines.jar(other))!r}).config("spark.ui.enabled", "false") \\
        .config("spark.sql.extensions", "org.apache.spark.sql.sparkclustering.SparkClusteringExtensions") \\
        .config("spark.sql.warehouse.dir", {str(tmp_path / 'wh')!r}).getOrCreate().sql("select 1").collect()
    print("STARTED")
except Exception as e:
    print("ERROR " + str(e).replace(chr(10), " "))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, **jvm_options_env()})
    [line] = [x for x in proc.stdout.splitlines() if x.startswith(("ERROR", "STARTED"))]
    want = (f"{lines.jar_name(other)} is built for Spark {other} (Scala {lines.spec(other)['scala']}), but this is "
            f"Spark {spark_version()}")
    assert want in line, line[:2000]
    assert f"load {lines.jar_name(SPARK_LINE)} instead" in line, line[:2000]


def spark_version() -> str:
    from importlib.metadata import version

    return version("pyspark")


@pytest.mark.parametrize("table_format", ["delta", "iceberg"])
def test_a_format_without_a_release_for_the_line_is_refused_by_name(spark, schema, table_format):
    """The jar holds a format's rewrite only where the format has a release for the line
    (spark_lines/lines.json): elsewhere its table functions, given a table of that format, say so;
    where it has one they say the session lacks the format's jars (the smoke suite loads none)."""
    table = f"{schema}.line_{table_format}"
    spark.sql(f"create table {table} (a int) using parquet")
    retag_provider(spark, table, table_format)  # a table of the format's, as the catalog sees it
    with pytest.raises(Exception) as err:
        spark.sql(f"select * from table_data_files('{table}')").collect()
    text = str(err.value)
    if table_format in lines.spec(SPARK_LINE)["formats"]:
        version = lines.spec(SPARK_LINE)[table_format]
        assert f"{table_format} tables need {table_format}'s own jars in the session" in text, text[:2000]
        assert f"built against {table_format} {version} for Spark {SPARK_LINE}" in text, text[:2000]
    else:
        assert f"({lines.jar_name(SPARK_LINE)}, for Spark {SPARK_LINE}) has no {table_format} support" in text, text[:2000]


def retag_provider(spark, table: str, provider: str) -> None:
    """Make the catalog entry of `table` name `provider` (its files unchanged): without the format's
    jars no session can create a table of it. CatalogTable.copy with every argument its default but
    the provider, its 5th on every line."""
    session = spark._jsparkSession
    catalog = session.sessionState().catalog()
    entry = catalog.getTableMetadata(session.sessionState().sqlParser().parseTableIdentifier(table))
    arity = next(m for m in entry.getClass().getMethods() if m.getName() == "copy").getParameterCount()
    arguments = [getattr(entry, f"copy$default${i}")() for i in range(1, arity + 1)]
    arguments[4] = spark._jvm.scala.Some(provider)
    catalog.alterTable(entry.copy(*arguments))


# of those the line has a release of, the ones this run tests (both by hand, one per run of scripts/test)
LINE_FORMATS = [f for f in formats_this_run() if f in lines.spec(SPARK_LINE)["formats"]]


# a line without a release of either format (4.3) has no such test, rather than a skipped one
if LINE_FORMATS:
    @pytest.mark.parametrize("table_format", LINE_FORMATS)
    def test_a_table_of_the_format_builds_and_reclusters_on_this_line(table_format, tmp_path):
        """Where the line has a release of the format (spark_lines/lines.json), the jar's rewrite of it
        runs for real: a child process (its own Spark of this line, with the format's jars of the line's
        release) builds a clustered table of the format through dbt, appends four unclustered files and
        reclusters: the format's file listing, table_file_rows' read of the chosen files, the format's
        commit; the rows are exactly the build's and the append's. (On Spark 3.5 table_file_rows once
        failed on Iceberg with 'Already closed', which no suite ran.)"""
        from harness.recluster_child import fingerprints_printed, run_child, source_tables

        rows, schema = 20_000, f"it_line_{table_format}"
        table, expected_view = f"{schema}.reclustered", f"{schema}.expected"
        case = {"case_source": f"{schema}.built", "case_alias": "reclustered", "case_format": table_format,
                "case_file_rows": rows // 4, "case_cluster_by": ["a"]}
        code, out = run_child({"work": str(tmp_path / "work"), "schema": schema, "table_format": table_format, "steps": [
            *source_tables(schema, [("built", 0, rows), ("appended", rows, rows + rows // 5)]),
            {"dbt": ["run", "--select", "cluster_case"], "vars": case},
            {"sql": f"insert into {table} select /*+ repartition(4) */ id, a from {schema}.appended"},
            {"dbt": ["run-operation", "spark_clustering.recluster", "--args", json.dumps({"relation": table, "final": True})],
             "vars": case},
            {"sql": f"create or replace view {expected_view} as select * from {schema}.built union all "
                    f"select * from {schema}.appended"},
            {"fingerprints": [table, expected_view]}]}, kill_at=None)
        assert code == 0, out[-4000:]
        outcome = json.loads([x for x in out.splitlines() if "recluster: {" in x][-1].split("recluster: ", 1)[1])
        assert outcome["decision"] == "reclustered", outcome
        replaced = sum(r["files_replaced"] for r in outcome["rounds"] if r["status"] == "committed")
        assert replaced >= 4, outcome  # the appended files at least
        [[got, want]] = fingerprints_printed(out)
        assert got == want and want[0] == rows + rows // 5, (got, want)
        print(f"[line {SPARK_LINE}] {table_format}: reclustered, {replaced} files replaced, rows exact")
