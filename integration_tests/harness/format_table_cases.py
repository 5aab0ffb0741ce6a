"""`clustered_table` on Delta Lake and Iceberg tables, for real (the formats' own jars, catalogs and
transactions). The tests are written once here, in FormatTableCases; test_delta_tables.py and
test_iceberg_tables.py subclass it, each with the session of its format (conftest: a module's TABLE_FORMAT).

What they hold a build to: the exact row multiset (count + order-independent checksum), one format
transaction per build (one new Delta version / Iceberg snapshot), time travel to the version before
a rebuild, the format's own per-file statistics equal to the min/max of each file's rows (strings
longer than the formats' default truncation included), files tight on the clustering columns, a
nondeterministic model rejected with the previous version put back, and the package's data-skipping
rule never wrapping a format's scan. The `kill -9` rounds of a rebuild and of a recluster, which
run in child processes only, are test_format_tables_killed.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from spark_clustering_dev.dbt import DbtError, dbt_output
from spark_clustering_dev.layout import fingerprint
from spark_clustering_dev.paths import local

ROWS = 20_000
FILES = 8
COLUMNS = ["id", "a", "b", "s"]


def build(dbt, table_format, source, alias, expect_success=True, **case):
    vars_ = {"case_source": source, "case_alias": alias, "case_format": table_format,
             **{f"case_{k}": v for k, v in case.items()}}
    return dbt(["run", "--select", "cluster_case"], vars=vars_, expect_success=expect_success)


def file_bounds(spark, table_format: str, table: str, columns: list[str]) -> dict[str, dict]:
    """{file name: {'rows': n, col: (min, max) or None}} from the format's own metadata of the
    table's current version: Delta's log (the add actions of the files the current snapshot holds),
    Iceberg's `files` metadata table (readable_metrics)."""
    if table_format == "delta":
        location = spark.sql(f"describe detail {table}").first()["location"]
        live = {Path(local(r[0])).name for r in spark.sql(f"select distinct _metadata.file_path from {table}").collect()}
        out = {}
        for commit in sorted(Path(local(location), "_delta_log").glob("*.json")):
            for line in commit.read_text().splitlines():
                add = json.loads(line).get("add")
                name = Path(add["path"]).name if add else None
                if add and name in live:
                    stats = json.loads(add["stats"])
                    out[name] = {"rows": stats["numRecords"],
                                 **{c: ((stats["minValues"][c], stats["maxValues"][c]) if c in stats.get("minValues", {}) else None)
                                    for c in columns}}
        return out
    metrics = ", ".join(f"readable_metrics.`{c}`.lower_bound as `{c}_lo`, readable_metrics.`{c}`.upper_bound as `{c}_hi`"
                        for c in columns)
    return {Path(local(r["file_path"])).name: {"rows": r["record_count"],
                                               **{c: (r[f"{c}_lo"], r[f"{c}_hi"]) for c in columns}}
            for r in spark.sql(f"select file_path, record_count, {metrics} from {table}.files").collect()}


def row_bounds(spark, table_format: str, table: str, columns: list[str]) -> dict[str, dict]:
    """The same from the rows: min/max of each column per data file."""
    file_col = "_metadata.file_path" if table_format == "delta" else "_file"
    aggs = ", ".join(f"min(`{c}`) as `{c}_lo`, max(`{c}`) as `{c}_hi`" for c in columns)
    return {Path(local(r["f"])).name: {"rows": r["n"], **{c: (r[f"{c}_lo"], r[f"{c}_hi"]) for c in columns}}
            for r in spark.sql(f"select {file_col} as f, count(*) as n, {aggs} from {table} group by 1").collect()}


def reader_predicates(spark, table: str) -> list[dict]:
    """What the other readers' tests ask of the `built` table: per predicate its Spark SQL, the same
    as a pyarrow expression, and its box on the clustering columns (a, s), or None where only the
    answers are compared (OR, IN, LIKE, a column that is not clustered). The strings of s share
    their first 37 characters."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    prefix = "customer-reference-number-0000000000-"
    point = spark.sql(f"select a, s from {table} where id = 4321").first()
    a, s, b = ds.field("a"), ds.field("s"), ds.field("b")

    def case(sql, arrow, box=None):
        return {"sql": sql, "arrow": arrow, "box": box}

    return [
        case("a between 1000 and 9000", (a >= 1000) & (a <= 9000), {"a": (1000, 9000)}),
        case("a >= 90000", a >= 90000, {"a": (90000, None)}),
        case(f"s between '{prefix}0100000' and '{prefix}0300000'", (s >= f"{prefix}0100000") & (s <= f"{prefix}0300000"),
             {"s": (f"{prefix}0100000", f"{prefix}0300000")}),
        case(f"a between 40000 and 60000 and s >= '{prefix}0500000'", (a >= 40000) & (a <= 60000) & (s >= f"{prefix}0500000"),
             {"a": (40000, 60000), "s": (f"{prefix}0500000", None)}),
        case(f"a = {point.a} and s = '{point.s}'", (a == point.a) & (s == point.s),
             {"a": (point.a, point.a), "s": (point.s, point.s)}),
        case("a < 3000 or a > 97000", (a < 3000) | (a > 97000)),
        case("a in (17, 50017, 99917)", a.isin([17, 50017, 99917])),
        case(f"s like '{prefix}00%'", pc.starts_with(s, f"{prefix}00")),
        case("b > 30000.5", b > 30000.5),
    ]


def files_meeting(bounds: dict[str, dict], box: dict) -> int:
    """The files (file_bounds) whose [min, max] meet `box` ({column: (lo or None, hi or None)})."""
    return sum(1 for f in bounds.values()
               if all((lo is None or f[c][1] >= lo) and (hi is None or f[c][0] <= hi) for c, (lo, hi) in box.items()))


def versions(spark, table_format: str, table: str) -> list[int]:
    """Every version of the table, oldest first: Delta log versions, Iceberg snapshot ids."""
    if table_format == "delta":
        return sorted(r[0] for r in spark.sql(f"describe history {table}").select("version").collect())
    return [r[0] for r in spark.sql(f"select snapshot_id from {table}.snapshots order by committed_at").collect()]


def provider(spark, table: str) -> str:
    return spark.sql(f"describe table extended {table}").where("col_name = 'Provider'").first()[1].lower()


def close(x, y) -> bool:
    return x == y or (isinstance(x, float) and isinstance(y, float) and abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1.0))


def recluster(dbt, table: str, target: Path, expect_success: bool = True, case: dict | None = None,
              dbt_schema: str | None = None, **args) -> dict:
    """`dbt run-operation recluster` on `table`, with the vars of its `build` (`case`: the model's
    config, as the post-hook would see it), in dbt schema `dbt_schema` (default: the module's); its
    outcome (the `recluster: {...}` line)."""
    vars_ = {f"case_{k}": v for k, v in (case or {}).items()}
    run, out = dbt_output(dbt, ["run-operation", "spark_clustering.recluster", "--args",
                                json.dumps({"relation": table, **args})], target, expect_success=expect_success,
                          vars=vars_, **({"schema": dbt_schema} if dbt_schema else {}))
    lines = [x for x in out.splitlines() if "recluster: {" in x]
    assert lines, out[-3000:]
    return json.loads(lines[-1].split("recluster: ", 1)[1])


def live_files(spark, table_format: str, table: str) -> set[str]:
    """Paths of the data files the table's current version holds."""
    file_col = "_metadata.file_path" if table_format == "delta" else "_file"
    return {r[0] for r in spark.sql(f"select distinct {file_col} from {table}").collect()}


def iceberg_row_sets(spark, table: str):
    """The scan task sets staged in the driver for `table` (a java Set): table_file_rows stages one."""
    jvm = spark._jvm
    loaded = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, f"spark_catalog.{table}")
    return jvm.org.apache.iceberg.spark.ScanTaskSetManager.get().fetchSetIds(loaded)


def append(spark, table: str, source: str, lo: int, hi: int, files: int = 2):
    """An unclustered append (INSERT INTO, `files` files) of the source's ids in [lo, hi)."""
    spark.sql(f"insert into {table} select /*+ repartition({files}) */ {', '.join(COLUMNS)} from {source} "
              f"where id >= {lo} and id < {hi}")


GROWN = {"method": "hilbert", "file_rows": ROWS // 4, "cluster_by": ["a", "s"]}


def grown_case(sources: str, table_format: str) -> dict:
    return {"source": f"{sources}.uniform", "alias": "grown", "format": table_format, **GROWN}


def expected_grown(sources: str) -> str:
    return (f"(select {', '.join(COLUMNS)} from {sources}.uniform union all select {', '.join(COLUMNS)} from "
            f"{sources}.shifted where id < {7 * ROWS + 3 * ROWS // 10}) e")


def _grown_table(spark, dbt, sources, table_format, alias: str) -> tuple[str, dict]:
    """A GROWN build of `uniform` as `alias` plus 3 unclustered appends: a table a recluster rewrites."""
    case = {**grown_case(sources, table_format), "alias": alias}
    build(dbt, table_format, f"{sources}.uniform", alias, **GROWN)
    table = f"{sources}.{alias}"
    for i in range(3):
        append(spark, table, f"{sources}.shifted", 7 * ROWS + i * ROWS // 10, 7 * ROWS + (i + 1) * ROWS // 10)
    return table, case


def _at_a_step(spark, point: str, action, pause_at: str | None = None):
    """A thread that waits until the session's run reaches `point` (a test hook's `wait`: the macros'
    var spark_clustering_test_hooks, or with `pause_at` the jar's spark.sparkclustering.test.pauseAt,
    set here), runs `action` there, and lets the run go on. Returns (thread, {"result" or "error"})."""
    import threading
    import time

    spark.conf.set("spark.sparkclustering.test.reached", "")
    spark.conf.set("spark.sparkclustering.test.release", "")
    if pause_at:
        spark.conf.set("spark.sparkclustering.test.pauseAt", pause_at)
    done: dict = {}

    def run():
        try:
            deadline = time.monotonic() + 300
            while spark.conf.get("spark.sparkclustering.test.reached", "") != point:
                assert time.monotonic() < deadline, f"the run never reached {point}"
                time.sleep(0.05)
            if pause_at:
                spark.conf.unset("spark.sparkclustering.test.pauseAt")
            done["result"] = action()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            done["error"] = e
        finally:
            if pause_at:
                spark.conf.unset("spark.sparkclustering.test.pauseAt")
            spark.conf.set("spark.sparkclustering.test.release", point)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done


def _at_the_commit(spark, action):
    """_at_a_step right before a recluster's format commit (the jar's step before_format_commit)."""
    return _at_a_step(spark, "before_format_commit", action, pause_at="before_format_commit:wait")

class FormatTableCases:
    """The cases, written once: a format's test module subclasses this (test_delta_tables.py:
    TestDeltaTables, test_iceberg_tables.py: TestIcebergTables) and sets the module's TABLE_FORMAT,
    which gives the module its session (conftest) and the cases their `table_format`. The fixtures
    are the class's: one build of the sources per format."""

    @pytest.fixture(scope="class")
    def table_format(self, request) -> str:
        """The subclass's module's TABLE_FORMAT (the format its session serves)."""
        return request.module.TABLE_FORMAT

    @pytest.fixture(scope="class")
    def sources(self, spark, dbt, dbt_schema):
        """Two plain parquet sources: `uniform` (ids 0..ROWS) and `shifted` (other rows, for rebuilds).
        `s` is a 45-character string: Delta truncates string bounds to 32 characters and Iceberg to 16
        by default, so exact bounds on it show the package's settings took effect."""
        s = dbt_schema
        for name, lo in [("uniform", 0), ("shifted", 7 * ROWS)]:
            spark.sql(f"drop table if exists {s}.{name}")
            spark.sql(f"""create table {s}.{name} using parquet as
                select id, cast(abs(xxhash64(id, 1)) % 100000 as int) as a,
                       cast(abs(xxhash64(id, 2)) % 100000 as double) / 3.0 as b,
                       concat('customer-reference-number-0000000000-', lpad(cast(abs(xxhash64(id, 3)) % 1000000 as string), 7, '0')) as s
                from range({lo}, {lo + ROWS})""")
        return s

    @pytest.fixture(scope="class")
    def built(self, spark, dbt, sources, table_format):
        """One build of `uniform` clustered on (a, s) in FILES files; what the tests read from it."""
        build(dbt, table_format, f"{sources}.uniform", "clustered", method="hilbert", num_files=FILES,
              cluster_by=["a", "s"])
        return f"{sources}.clustered"

    def test_build_keeps_every_row_in_one_format_transaction(self, spark, sources, built, table_format):
        assert provider(spark, built) == table_format
        assert fingerprint(spark, built, COLUMNS) == fingerprint(spark, f"{sources}.uniform", COLUMNS)
        assert len(versions(spark, table_format, built)) == 1  # CREATE TABLE AS SELECT: one commit
        # every file is the build's: the version it committed is recorded for recluster()
        listed = spark.sql(f"select from_build, table_version from table_data_files('{built}')").collect()
        assert len(listed) == FILES and all(r["from_build"] for r in listed), listed
        properties = {r[0]: r[1] for r in spark.sql(f"show tblproperties {built}").collect()}
        assert json.loads(properties["spark_clustering.cluster_by"]) == ["a", "s"]
        assert properties["spark_clustering.method"] == "hilbert"
        if table_format == "delta":  # a table property: later writers (appends) keep exact string bounds too
            assert properties["delta.dataSkippingStringPrefixLength"] == "1024"
        if table_format == "iceberg":
            assert properties["write.metadata.metrics.column.a"] == "full"
            assert properties["write.metadata.metrics.column.s"] == "full"

    def test_format_statistics_are_exact_per_file(self, spark, built, table_format):
        """Every file's statistics in the format's own metadata equal the min/max of its rows, the
        45-character string column included (both formats truncate strings by default)."""
        meta = file_bounds(spark, table_format, built, ["a", "b", "s"])
        rows = row_bounds(spark, table_format, built, ["a", "b", "s"])
        assert len(rows) == FILES and set(meta) == set(rows)
        for name, want in rows.items():
            got = meta[name]
            assert got["rows"] == want["rows"], name
            for col in ["a", "s"]:  # the clustering columns: exact
                assert got[col] == want[col], (name, col, got[col], want[col])
            lo, hi = got["b"]  # another column: a bound, at least
            assert lo <= want["b"][0] and hi >= want["b"][1]

    def test_files_are_tight_on_the_clustering_columns(self, spark, built, table_format):
        """Hilbert over (a, s) in 8 files: the files split the (a, s) plane, so each file's range of a
        covers well under the whole domain; the files of an unclustered write of these hash-derived
        values each cover nearly all of it."""
        meta = file_bounds(spark, table_format, built, ["a"])
        widths = [(m["a"][1] - m["a"][0]) / 100_000 for m in meta.values()]
        assert sum(widths) / len(widths) < 0.6, widths
        assert sum(m["rows"] for m in meta.values()) == ROWS
        assert all(abs(m["rows"] - ROWS / FILES) <= 0.15 * ROWS / FILES for m in meta.values()), [m["rows"] for m in meta.values()]

    def test_rebuild_is_one_transaction_and_time_travel_reads_the_old_rows(self, spark, dbt, sources, table_format):
        table = f"{sources}.rebuilt"
        build(dbt, table_format, f"{sources}.uniform", "rebuilt", method="zorder", num_files=4, cluster_by=["a", "b"])
        before = versions(spark, table_format, table)
        build(dbt, table_format, f"{sources}.shifted", "rebuilt", method="zorder", num_files=4, cluster_by=["a", "b"])
        after = versions(spark, table_format, table)
        assert after[:len(before)] == before and len(after) == len(before) + 1  # one commit replaced the table
        assert fingerprint(spark, table, COLUMNS) == fingerprint(spark, f"{sources}.shifted", COLUMNS)
        old = f"(select * from {table} version as of {before[-1]}) v"
        assert fingerprint(spark, old, COLUMNS) == fingerprint(spark, f"{sources}.uniform", COLUMNS)
        # the builds were validated by the format's own row counts of the versions they committed (no
        # time-travel query); they equal a count at each version, and an append is no whole-table write
        # on Delta (its commit holds the new files only: unknown), while Iceberg's total counts every file
        def committed_rows(version):
            return spark.sql(f"select row_count from table_committed_rows('{table}', {version})").first()[0]

        assert [committed_rows(v) for v in (before[-1], after[-1])] == [ROWS, ROWS]
        spark.sql(f"insert into {table} select * from {sources}.uniform where id < 10")
        appended = versions(spark, table_format, table)[-1]
        assert committed_rows(appended) == (None if table_format == "delta" else ROWS + 10)

    def test_a_nondeterministic_model_is_rejected_and_the_previous_version_put_back(self, spark, dbt, sources, table_format):
        table = f"{sources}.guarded"
        build(dbt, table_format, f"{sources}.uniform", "guarded", num_files=2, cluster_by=["a"])
        good = fingerprint(spark, table, COLUMNS)
        before = versions(spark, table_format, table)
        # rand() gives the write other rows than the count the build planned with; each statement draws
        # its own share of rows too (a scalar subquery), so two statements' counts are equal only by a
        # rare chance (with rand() < 0.5 alone about 1 in 250 runs: two draws of 20,000 rows)
        with pytest.raises(DbtError) as failure:
            build(dbt, table_format, f"(select * from {sources}.uniform where rand() < (select 0.25 + rand() / 2)) q",
                  "guarded", num_files=2, cluster_by=["a"])
        text = str(failure.value)
        assert "model 'cluster_case'" in text and "does not hold the model query's rows" in text, text
        assert f"put back to its previous version {before[-1]}" in text, text
        assert "cluster_validate=false" in text
        assert fingerprint(spark, table, COLUMNS) == good

    def test_the_data_skipping_rule_never_wraps_a_format_scan(self, spark, sources, built):
        """The format skips files from its own statistics; the package's rule serves plain parquet/orc
        tables only, in the same session."""
        format_plan = spark.sql(f"explain select * from {built} where a = 5").first()[0]
        plain_plan = spark.sql(f"explain select * from {sources}.uniform where a = 5").first()[0]
        assert "DataSkipping" not in format_plan, format_plan
        assert "DataSkippingFileIndex" in plain_plan, plain_plan
        assert spark.sql(f"select count(*) from {built} where a = 5").first()[0] == \
            spark.sql(f"select count(*) from {sources}.uniform where a = 5").first()[0]

    def test_duckdb_reads_the_table_with_sparks_answers_and_skips_what_the_bounds_allow(self, spark, built, table_format):
        """DuckDB's own Delta / Iceberg reader (spark_clustering_dev.other_readers) on the package's
        table: every answer equal to Spark's (ranges, boxes, a point, OR, IN, LIKE, a column that is
        not clustered), and on the ranges and boxes of the clustering columns (a, s: the 45-character
        strings included) it reads exactly the files whose bounds in the format's metadata meet
        them: another engine gets the layout, not only Spark."""
        from spark_clustering_dev.other_readers import DuckDbReader
        from spark_clustering_dev.recluster_case import location

        bounds = file_bounds(spark, table_format, built, ["a", "s"])
        reader = DuckDbReader(table_format)
        try:
            source = reader.source(location(spark, built))
            for case in reader_predicates(spark, built):
                query = f"select count(*), sum(id), min(s), max(a) from {{}} where {case['sql']}"
                want = [tuple(r) for r in spark.sql(query.format(built)).collect()]
                got, files = reader.query(query.format(source))
                assert got == want, (case["sql"], got, want)
                if case["box"] is not None:
                    # and skips files: a range of s among strings that share 37 characters
                    # too, which bounds cut to 32 (Delta) or 16 (Iceberg) could not tell apart
                    ideal = files_meeting(bounds, case["box"])
                    assert files == ideal < FILES, (case["sql"], files, ideal)
        finally:
            reader.close()

    def test_pyarrow_reads_the_tables_files_with_sparks_answers_and_skips_what_the_bounds_allow(self, spark, built,
                                                                                                table_format):
        """A pyarrow dataset of the files the table's current version holds (what a reader with only the
        Parquet footers gets, e.g. of the files a format's log lists): every answer equal to Spark's
        on the predicates of the DuckDB test, and on the ranges and boxes of the clustering columns it
        reads row groups of exactly the files whose bounds in the format's metadata meet them: the
        package's footers carry its layout as the format's metadata does."""
        import pyarrow.compute as pc

        from spark_clustering_dev.other_readers import PyArrowReader

        bounds = file_bounds(spark, table_format, built, ["a", "s"])
        reader = PyArrowReader(local(f) for f in live_files(spark, table_format, built))
        assert len(reader.dataset.files) == FILES
        for case in reader_predicates(spark, built):
            want = tuple(spark.sql(f"select count(*), sum(id), min(s), max(a) from {built} where {case['sql']}").first())
            rows, files, _ = reader.query(case["arrow"], ["id", "a", "s"])
            got = (rows.num_rows, pc.sum(rows["id"]).as_py(), pc.min(rows["s"]).as_py(), pc.max(rows["a"]).as_py())
            assert got == want, (case["sql"], got, want)
            if case["box"] is not None:
                ideal = files_meeting(bounds, case["box"])
                assert files == ideal < FILES, (case["sql"], files, ideal)

    def test_a_table_of_another_format_is_never_replaced(self, spark, dbt, sources, table_format):
        table = f"{sources}.plain_first"
        build(dbt, "parquet", f"{sources}.uniform", "plain_first", num_files=2, cluster_by=["a"])
        good = fingerprint(spark, table, COLUMNS)
        with pytest.raises(DbtError) as failure:
            build(dbt, table_format, f"{sources}.uniform", "plain_first", num_files=2, cluster_by=["a"])
        text = str(failure.value)
        assert "config 'file_format' = " + table_format in text and "exists as a 'parquet' table" in text, text
        assert "drop or rename the table yourself" in text
        assert provider(spark, table) == "parquet" and fingerprint(spark, table, COLUMNS) == good

    @pytest.fixture(scope="class")
    def grown(self, spark, dbt, sources, table_format, tmp_path_factory):
        """A build of `uniform` clustered on (a, s) in 4 files, then 3 unclustered appends of 10 % of
        `shifted` each, then recluster(): what the recluster tests read (table, versions before,
        outcome, live files before)."""
        table = f"{sources}.grown"
        build(dbt, table_format, f"{sources}.uniform", "grown", **GROWN)
        built = live_files(spark, table_format, table)
        shifted = 7 * ROWS
        for i in range(3):
            append(spark, table, f"{sources}.shifted", shifted + i * ROWS // 10, shifted + (i + 1) * ROWS // 10)
        before_files, before_versions = live_files(spark, table_format, table), versions(spark, table_format, table)
        outcome = recluster(dbt, table, tmp_path_factory.mktemp("grown") / "target", case=grown_case(sources, table_format))
        return {"table": table, "versions": before_versions, "files": before_files, "built": built, "outcome": outcome}

    def test_recluster_rewrites_the_appended_files_in_one_format_commit_per_round(self, spark, sources, grown, table_format):
        table, outcome = grown["table"], grown["outcome"]
        assert outcome["decision"] == "reclustered", outcome
        rounds = [r for r in outcome["rounds"] if r["status"] == "committed"]
        assert rounds and len(rounds) == len(outcome["rounds"]), outcome["rounds"]
        assert fingerprint(spark, table, COLUMNS) == fingerprint(spark, expected_grown(sources), COLUMNS)
        after = versions(spark, table_format, table)
        # one format commit per round and no other: the clustering the build recorded in the table's
        # properties still holds, so no property is written (on Delta that would be a commit of its own)
        assert after[:len(grown["versions"])] == grown["versions"]
        assert len(after) == len(grown["versions"]) + len(rounds), (after, grown["versions"], rounds)
        files = live_files(spark, table_format, table)
        replaced = grown["files"] - files
        # the 6 appended files went; the new files lie in the rewrite's staging directory, taken over in
        # place. The build's files are one clustered run (its version is in the table's properties), so
        # a first round leaves them: only a later round (merging runs) may take them
        appended = grown["files"] - grown["built"]
        assert len(appended) == 6 and appended <= replaced and all("/sc-l" in f for f in files - grown["files"]), (replaced, files)
        assert replaced == appended or len(rounds) > 1, (replaced, grown["built"], outcome["rounds"])
        assert outcome["after"]["new_files"] == 0 and outcome["after"]["new_rows"] == 0, outcome["after"]
        if table_format == "delta":
            ops = spark.sql(f"describe history {table}").where("operation = 'OPTIMIZE'").collect()
            assert len(ops) == len(rounds), ops
            assert ops[0]["operationParameters"]  # Delta recorded it as a rewrite (dataChange = false)
            log = [json.loads(x) for x in Path(local(spark.sql(f"describe detail {table}").first()["location"]),
                   "_delta_log", f"{ops[0]['version']:020d}.json").read_text().splitlines()]
            actions = [a.get("add") or a.get("remove") for a in log if "add" in a or "remove" in a]
            assert actions and all(a["dataChange"] is False for a in actions), actions[:2]
        else:
            ops = spark.sql(f"select operation, summary from {table}.snapshots order by committed_at").collect()
            assert sum(1 for o in ops if o.operation == "replace") == len(rounds), ops
            # the scan tasks the rounds read their files through are let go by the commit
            assert iceberg_row_sets(spark, table).isEmpty()

    def test_a_recluster_reads_the_files_it_rewrites_and_opens_no_other(self, spark, sources, table_format, tmp_path):
        """table_file_rows, what a recluster reads its selection through: the rows of exactly the listed
        files at the version listed, read by the format's own scan of those files. The table's other
        files are moved away before the read, so a read that opened any of them fails; a filter on the
        file column (what recluster read before) does, on both formats. A query cached over the view is
        used by the next one (on Iceberg it was not, on Spark 4.1: the staged table had no equals)."""
        import shutil

        table, view = f"{sources}.rows_of_files", "rows_of_files_view"
        file_col = "_metadata.file_path" if table_format == "delta" else "_file"
        spark.sql(f"drop table if exists {table}")
        spark.sql(f"create table {table} using {table_format} as "
                  f"select /*+ repartition(4) */ {', '.join(COLUMNS)} from {sources}.uniform")
        append(spark, table, f"{sources}.shifted", 7 * ROWS, 7 * ROWS + ROWS // 10)
        version = versions(spark, table_format, table)[-1]
        files = sorted(live_files(spark, table_format, table))
        assert len(files) == 6, files
        chosen = [files[0], files[-1]]
        in_list = ", ".join(f"'{p}'" for p in chosen)
        expected = fingerprint(spark, f"(select * from {table} where {file_col} in ({in_list})) e", COLUMNS)
        assert 0 < expected[0] < ROWS + ROWS // 10
        # an append after the listing: the view reads the version listed, not the table as it is now
        append(spark, table, f"{sources}.shifted", 7 * ROWS + ROWS // 10, 7 * ROWS + ROWS // 5, files=1)
        row = spark.sql(f"select * from table_file_rows('{table}', '{version}', array({in_list}), '{view}')").first()
        assert (row.view_name, row.files) == (view, 2)
        if table_format == "iceberg":
            assert not iceberg_row_sets(spark, table).isEmpty()  # released by the commit (see the grown test)
        others = [Path(local(p)) for p in live_files(spark, table_format, table) if p not in chosen]
        assert len(others) == 5
        moved = []
        try:
            for i, path in enumerate(others):
                moved.append((shutil.move(path, tmp_path / f"{i}-{path.name}"), path))
            assert fingerprint(spark, view, COLUMNS) == expected
            with pytest.raises(Exception, match="(?i)FILE_NOT_EXIST|FileNotFound|does not exist"):
                spark.sql(f"select count(*) from {table} version as of {version} where {file_col} in ({in_list})").collect()
            # A query cached over the view is what the next query over it reads (a recluster's sampling
            # pass, read again by its quantiles and file cuts): with the two files gone too it answers.
            spark.sql(f"cache lazy table {view}_pass as select count(*) as n, collect_list(a) as l "
                      f"from {view} group by spark_partition_id()")
            assert spark.sql(f"select sum(n) from {view}_pass").first()[0] == expected[0]
            for i, path in enumerate(Path(local(p)) for p in chosen):
                moved.append((shutil.move(path, tmp_path / f"chosen-{i}-{path.name}"), path))
            assert spark.sql(f"select sum(size(l)) from {view}_pass").first()[0] == expected[0]
        finally:
            for aside, path in moved:
                shutil.move(aside, path)
            spark.sql(f"drop view if exists {view}_pass")
            spark.sql(f"drop view if exists {view}")
        with pytest.raises(Exception, match=r"table_file_rows.*1 file\(s\) are not data files of"):
            spark.sql(f"select * from table_file_rows('{table}', '{version}', array('{files[0]}.gone'), '{view}')").collect()

    def test_time_travel_to_before_a_recluster_reads_the_old_files(self, spark, sources, grown, table_format):
        table = grown["table"]
        old = f"(select *, {'_metadata.file_path' if table_format == 'delta' else '_file'} as f from {table} version as of {grown['versions'][-1]}) v"
        assert {r[0] for r in spark.sql(f"select distinct f from {old}").collect()} == grown["files"]
        assert fingerprint(spark, old, COLUMNS) == fingerprint(spark, expected_grown(sources), COLUMNS)

    def test_reclustered_files_have_exact_statistics_in_the_format_metadata(self, spark, grown, table_format):
        table = grown["table"]
        meta = file_bounds(spark, table_format, table, ["a", "s"])
        rows = row_bounds(spark, table_format, table, ["a", "s"])
        assert set(meta) == set(rows)
        for name, want in rows.items():
            assert meta[name] == want, (name, meta[name], want)

    def test_recluster_again_finds_nothing_to_do_and_final_leaves_one_run(self, spark, dbt, sources, grown, table_format, tmp_path):
        table = grown["table"]
        again = recluster(dbt, table, tmp_path / "again", case=grown_case(sources, table_format))
        # stopped before measuring: the table's version is the one the last recluster recorded
        assert again["decision"] == "skipped" and again["reason"].startswith(
            f"nothing changed since the last recluster (state {table_format}:"), again
        final = recluster(dbt, table, tmp_path / "final", case=grown_case(sources, table_format), final=True)
        assert final["decision"] in ("reclustered", "skipped"), final
        assert final["after"]["runs"] <= 1 or final["stopped"], final
        assert fingerprint(spark, table, COLUMNS) == fingerprint(spark, expected_grown(sources), COLUMNS)

    def test_an_incremental_model_is_kept_clustered_by_its_post_hook_and_its_queries_are_observed(
            self, spark, dbt, sources, table_format, tmp_path):
        """The everyday use on a format table: an incremental model (dbt-spark's own materialization,
        `file_format` delta / iceberg) with the `recluster()` post-hook, three runs of appends; no row
        lost or doubled. Between runs, queries that filter on the clustering columns are counted in
        observed_workload as on a plain table (the clustering columns are read from the Delta log's
        metadata / the Iceberg table's properties: neither format keeps them in its catalog entry),
        and the cost policy's first run records their count, the next takes its rate from the queries
        that came since."""
        from spark_clustering_dev.recluster_case import MODEL, actual, expected

        alias = "incremental_hooked"
        table = f"{sources}.{alias}"
        boxes = [(lo, lo + 9_999) for lo in range(0, 100_000, 20_000)]

        def run(start: int, end: int, **recluster_settings) -> str:
            _, out = dbt_output(dbt, ["run", "--select", MODEL], tmp_path / f"run_{end}",
                                vars={"rc_alias": alias, "rc_format": table_format, "rc_start": start, "rc_end": end,
                                      "rc_file_rows": 1000, "rc_recluster": {"max_average_depth": 1, **recluster_settings}})
            # the post-hook's last line: "<decision> (<reason>); average depth ... (n files, m new) -> ... (k files, j new)"
            lines = [x for x in out.splitlines() if f"spark_clustering: recluster {MODEL}: reclustered (" in x
                     or f"spark_clustering: recluster {MODEL}: skipped (" in x]
            assert lines, out[-3000:]
            assert actual(spark, table) == expected(spark, [(0, end)])
            return lines[-1]

        def query(times: int = 1):
            for _ in range(times):
                for lo, hi in boxes:
                    spark.sql(f"select count(*) from {table} where a between {lo} and {hi} and payload is not null").collect()

        spark.sql(f"drop table if exists {table}")
        # dbt-spark's first run writes the table unclustered; the post-hook reclusters it (its measure
        # finds the table the run created, which dbt's relation cache does not hold)
        run(0, 4000)
        assert provider(spark, table) == table_format
        query()
        seen = {json.dumps(json.loads(r["box"]), sort_keys=True): r["queries"]
                for r in spark.sql(f"select box, queries from observed_workload('{table}')").collect()}
        # the clustering columns' ranges only (payload is not one), each query counted alike
        assert set(seen) == {json.dumps({"a": [lo, hi]}) for lo, hi in boxes}, seen
        assert len(set(seen.values())) == 1, seen
        line = run(4000, 6000, policy="cost")
        assert "cost policy falls back to the fixed gate (the rate of queries is not known yet" in line, line
        # the appended files were new to the measure, and the gate's rewrite left none
        assert ": reclustered (" in line and re.search(r"\(\d+ files, [1-9]\d* new\) -> .*\(\d+ files, 0 new\)$", line), line
        query(times=2)
        line = run(6000, 8000, policy="cost")
        queries = 2 * len(boxes) * min(seen.values())
        assert (f"({queries} queries per run (observed); {queries} since the last rewrite, 1 run(s) ago "
                "(horizon lost_reads))") in line, line
        # what the rewrite (or the best unpaid one) costs: its bytes read and written; on Iceberg too,
        # whose reader fetches files under 1 MiB whole whatever the columns asked for, since such a
        # selection is read into the cache once (it cost 3 x: the sampling pass read it again); and
        # the ~1 MB of the log or manifests any rewrite reads again (the kind's rewrite_metadata_bytes)
        sizes = re.search(r"(\d+) files / ([\d.]+ [KMG]?B)\)?:? .*?costs ([\d.]+ [KMG]?B)", line)
        assert sizes, line
        units = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}
        (selected, selected_unit), (cost, cost_unit) = ((float(t.split()[0]) * units[t.split()[1]], units[t.split()[1]])
                                                        for t in sizes.group(2, 3))
        metadata = 1_000_000
        # the line rounds each figure to 0.1 of its unit
        assert cost == pytest.approx(2 * selected + metadata, abs=0.051 * cost_unit + 0.102 * selected_unit), line

    def test_a_recluster_after_nothing_changed_stops_before_the_lease(self, spark, dbt, sources, table_format, tmp_path):
        """A table of ~64 files built by clustered_table, an append, a recluster; then a recluster with
        nothing changed since (the table's last data commit and the config as recorded) stops after
        one read of them, in <= 5 statements (a run-operation: dbt keeps no memo of the extension's
        functions there, so it asks twice). An INSERT by another writer, or another cluster_by, is
        measured again."""
        from harness.recluster_cost import ReclusterCost, statement_texts

        alias = "noop_recluster"
        table = f"{sources}.{alias}"
        case = {**grown_case(sources, table_format), "alias": alias, "file_rows": ROWS // 64}
        build(dbt, table_format, f"{sources}.uniform", alias, method="hilbert", file_rows=ROWS // 64, cluster_by=["a", "s"])
        append(spark, table, f"{sources}.shifted", 7 * ROWS, 7 * ROWS + ROWS // 10)

        def costed(name: str, **args) -> tuple[dict, dict]:
            cost = ReclusterCost()
            _, out = dbt_output(dbt, ["run-operation", "spark_clustering.recluster", "--args", json.dumps({"relation": table, **args})],
                                tmp_path / name, vars={f"case_{k}": v for k, v in case.items()}, callbacks=[cost])
            line = [x for x in out.splitlines() if "recluster: {" in x][-1]
            return json.loads(line.split("recluster: ", 1)[1]), cost.last

        full, full_cost = costed("full")
        assert full["decision"] == "reclustered", full
        # the build recorded the clustering in the table's properties and the rewrite changed none of
        # it: no property write (on Delta and Iceberg a commit of its own); they still hold
        written = statement_texts(full_cost)
        assert not any(s.startswith("alter table") for s in written), [s[:160] for s in written]
        properties = {r[0]: r[1] for r in spark.sql(f"show tblproperties {table}").collect()}
        assert json.loads(properties["spark_clustering.cluster_by"]) == ["a", "s"], properties
        assert properties["spark_clustering.method"] == "hilbert", properties
        noop, noop_cost = costed("noop")
        print(f"\n{table_format} ({len(live_files(spark, table_format, table))} files): full: {len(full_cost['statements'])} "
              f"statements, {full_cost['seconds']:.3f} s; no-op: {len(noop_cost['statements'])} statements, "
              f"{noop_cost['seconds']:.3f} s")
        assert noop["decision"] == "skipped" and noop["reason"].startswith(
            f"nothing changed since the last recluster (state {table_format}:"), noop
        assert len(noop_cost["statements"]) <= 5, noop_cost["statements"]
        append(spark, table, f"{sources}.shifted", 7 * ROWS + ROWS // 10, 7 * ROWS + ROWS // 5)  # not dbt
        out, measured_cost = costed("after_insert")
        assert not out["reason"].startswith("nothing changed") and out["before"]["new_rows"] == ROWS // 10, out
        # a recluster that measures reads the table's DESCRIBE once, whatever its rounds, and the
        # metadata's bounds with whether they are exact in one statement per measure (no count of
        # Iceberg's delete files or of Delta's inexact files of its own)
        statements = statement_texts(measured_cost)
        shown = [s[:160] for s in statements]
        assert sum(s.startswith("describe table extended") for s in statements) == 1, shown
        assert not any(".delete_files" in s or s.startswith("select count_if(not coalesce(exact") for s in statements), shown
        again, _ = costed("again")
        assert again["reason"].startswith("nothing changed since the last recluster"), again
        other, _ = costed("columns", columns=["a", "id"])
        assert not other["reason"].startswith("nothing changed"), other
        want = (f"(select {', '.join(COLUMNS)} from {sources}.uniform union all select {', '.join(COLUMNS)} from "
                f"{sources}.shifted where id < {7 * ROWS + ROWS // 5}) e")
        assert fingerprint(spark, table, COLUMNS) == fingerprint(spark, want, COLUMNS)

    def test_an_append_and_readers_during_a_recluster_commit_lose_nothing(self, spark, dbt, sources, table_format, tmp_path):
        """An append commits while the recluster is between its validation and its commit, and a reader
        queries all along: the recluster still commits (an append is no conflict of a rewrite), the
        table then holds every row of both, and every read saw exactly the rows before or after the
        append. A scan planned before the commit and run after it reads the replaced files, kept by
        the format: it neither fails nor changes its answer."""
        import threading

        table, case = _grown_table(spark, dbt, sources, table_format, "raced")
        expected = fingerprint(spark, expected_grown(sources), COLUMNS)
        base = spark.sql(f"select count(*), sum(id) from {table}").first()
        batch = (9 * ROWS, 9 * ROWS + 500)
        spark.sql(f"""create or replace temporary view raced_batch as select * from {sources}.shifted
                      where id >= {7 * ROWS + ROWS // 2} and id < {7 * ROWS + ROWS // 2 + 500}""")
        seen, stop = [], threading.Event()

        def reader():
            while not stop.is_set():
                seen.append(tuple(spark.sql(f"select count(*), sum(id) from {table}").first()))

        reading = threading.Thread(target=reader)
        reading.start()
        planned = {}

        def at_the_commit():
            # a scan planned (its files listed) before the commit, run after it: the format keeps the
            # files a rewrite replaces until its VACUUM / expire_snapshots, which the package never runs
            planned["df"] = spark.sql(f"select count(*), sum(id) from {table}")
            planned["df"]._jdf.queryExecution().executedPlan()
            append(spark, table, "raced_batch", 0, 10 * ROWS, files=1)

        committer, done = _at_the_commit(spark, at_the_commit)
        try:
            outcome = recluster(dbt, table, tmp_path / "target", case=case)
        finally:
            committer.join(timeout=600)
            stop.set()
            reading.join(timeout=120)
        assert "error" not in done, done
        assert outcome["decision"] == "reclustered" and outcome["rounds"][0]["status"] == "committed", outcome
        want = fingerprint(spark, f"(select {', '.join(COLUMNS)} from {expected_grown(sources)} union all "
                                  f"select {', '.join(COLUMNS)} from raced_batch) e", COLUMNS)
        assert fingerprint(spark, table, COLUMNS) == want and want != expected
        after = spark.sql(f"select count(*), sum(id) from {table}").first()
        assert seen and set(seen) <= {tuple(base), tuple(after)}, set(seen)
        assert tuple(planned["df"].collect()[0]) == tuple(base), (planned["df"].collect(), base, after)
        # the batch's own file is level 0 still: the next recluster picks it up
        assert any("/sc-l" not in f for f in live_files(spark, table_format, table))
        del batch

    def test_a_delete_of_rewritten_rows_during_a_recluster_stops_it_with_the_format_conflict(
            self, spark, dbt, sources, table_format, tmp_path):
        """A DELETE of rows in files the recluster rewrites, committed between its validation and its
        commit: the format refuses the rewrite (its conflict named), no deleted row comes back, and the
        next recluster goes through."""
        table, case = _grown_table(spark, dbt, sources, table_format, "contended")
        gone = f"id >= {7 * ROWS} and id < {7 * ROWS + 50}"  # rows of the first append: files it rewrites
        committer, done = _at_the_commit(spark, lambda: spark.sql(f"delete from {table} where {gone}").collect())
        try:
            outcome = recluster(dbt, table, tmp_path / "first", case=case)
        finally:
            committer.join(timeout=600)
        assert "error" not in done, done
        status = outcome["rounds"][0]["status"]
        assert outcome["decision"] == "aborted", outcome
        conflict = "Delta refused the commit: Concurrent" if table_format == "delta" else "Iceberg refused the commit: "
        assert status.startswith("aborted: " + conflict) and "nothing was changed" in status, status
        want = fingerprint(spark, f"(select * from {expected_grown(sources)} where not ({gone})) e", COLUMNS)
        assert fingerprint(spark, table, COLUMNS) == want
        again = recluster(dbt, table, tmp_path / "again", case=case)
        assert again["decision"] == "reclustered", again
        assert fingerprint(spark, table, COLUMNS) == want
        # neither run left its staging table or the staging tables' own metadata behind
        assert not spark.sql(f"show tables in {sources} like 'contended__sc_recluster'").collect()
        root = Path(local(spark.sql(f"describe table extended {table}").where("col_name = 'Location'").first()[1]))
        meta = "sc-l*/_delta_log" if table_format == "delta" else "data/sc-l*/metadata"
        assert not list(root.glob(meta)), list(root.glob(meta))

    def test_a_row_added_to_a_recluster_staged_copy_fails_its_check_and_nothing_is_committed(
            self, spark, dbt, sources, table_format, tmp_path):
        """The adversary of the staged copy's check, which reads no row of it (the checksum of the rows
        its writer received, the row count the format's metadata holds): a row inserted into the
        staging table after its write. The check fails, nothing is committed (the table keeps its
        version and rows), and the next recluster goes through and leaves no staging table."""
        table, case = _grown_table(spark, dbt, sources, table_format, "staged_adversary")
        staging, point = f"{table}__sc_recluster", "recluster.after_staging_write"
        before = versions(spark, table_format, table)
        want = fingerprint(spark, f"{expected_grown(sources)}", COLUMNS)
        thread, added = _at_a_step(spark, point, lambda: spark.sql(
            f"insert into {staging} select -1, 0, 0.0, 'not a row of the table'").collect())
        try:
            _, out = dbt_output(dbt, ["run-operation", "spark_clustering.recluster", "--args", json.dumps({"relation": table})],
                                tmp_path / "first", expect_success=False,
                                vars={**{f"case_{k}": v for k, v in case.items()}, "spark_clustering_test_hooks": {point: "wait"}})
        finally:
            thread.join()
        assert "error" not in added, added
        assert "the rewritten files do not match the files they replace" in out and "nothing was committed" in out, out[-3000:]
        assert versions(spark, table_format, table) == before
        assert fingerprint(spark, table, COLUMNS) == want
        again = recluster(dbt, table, tmp_path / "again", case=case)
        assert again["decision"] == "reclustered", again
        assert fingerprint(spark, table, COLUMNS) == want
        assert not spark.sql(f"show tables in {sources} like 'staged_adversary__sc_recluster'").collect()

    def test_an_append_right_after_a_rebuilds_commit_is_not_taken_for_the_rebuild(self, spark, dbt, sources, table_format):
        """Another writer appends 10 rows between a rebuild's commit and its validation (the test hook
        clustered_table.after_format_write: wait). The build validates the version its replace
        committed, not the append's (which holds the batch too): it succeeds, the table holds the
        build's rows and the batch, and the build's version is recorded as the build's. (Taking the
        table's latest version for its own once failed such a build and put the table back to the
        version before it: the build's rows and the other writer's batch both gone.)"""
        table, point = f"{sources}.raced_once", "clustered_table.after_format_write"
        build(dbt, table_format, f"{sources}.shifted", "raced_once", num_files=2, cluster_by=["a"])
        before = versions(spark, table_format, table)

        def append():
            spark.sql(f"insert into {table} select -(100 + id), 0, 0.0, 'appended' from range(10)")
            return versions(spark, table_format, table)[-1]

        thread, appended = _at_a_step(spark, point, append)
        try:
            dbt(["run", "--select", "cluster_case"], vars={
                "case_source": f"{sources}.uniform", "case_alias": "raced_once", "case_format": table_format,
                "case_num_files": 2, "case_cluster_by": ["a"], "spark_clustering_test_hooks": {point: "wait"}})
        finally:
            thread.join()
        assert "error" not in appended, appended
        after = versions(spark, table_format, table)
        assert after[:len(before)] == before and after[-1] == appended["result"], (before, after, appended)
        rebuilt = after[len(before)]
        r = spark.sql(f"select count(*) as n, count_if(id between 0 and {ROWS - 1}) as built, count_if(id < 0) as batch "
                      f"from {table}").first()
        assert (r.n, r.built, r.batch) == (ROWS + 10, ROWS, 10), r
        properties = dict(spark.sql(f"show tblproperties {table}").collect())
        assert properties.get("spark_clustering.build_version") == str(rebuilt), (properties, rebuilt, after)

    def test_readers_and_an_appender_during_rebuilds_see_one_whole_version(self, spark, dbt, sources, table_format):
        """Adversaries of a rebuild's commit: a reader querying the table in a loop and a writer appending
        10-row batches (random delays) while the model is rebuilt three times between two sources with
        disjoint ids. Every read holds exactly one build's rows (all of `uniform`'s ids or all of
        `shifted`'s, never both, never neither) plus whole batches; after each rebuild the table holds
        its source's rows; a batch is never split. An append the format makes fail (its conflict with
        the replace) is allowed; a rebuild that fails must name the format's conflict."""
        import random
        import threading
        import time

        table = f"{sources}.raced"
        build(dbt, table_format, f"{sources}.uniform", "raced", num_files=2, cluster_by=["a"])
        stop = threading.Event()
        seen, problems, appended, refused = [], [], [], []
        probe = (f"select count_if(id between 0 and {ROWS - 1}) as old, count_if(id >= {7 * ROWS}) as new, "
                 f"count(distinct case when id < 0 then -id div 100 end) as batches, "
                 f"count_if(id < 0) as batch_rows from {table}")

        def reader():
            rng = random.Random(1)
            while not stop.is_set():
                try:
                    r = spark.sql(probe).first()
                except Exception as e:  # noqa: BLE001 - a failed read is a finding, recorded
                    problems.append(f"read failed: {str(e)[:300]}")
                    continue
                seen.append((r.old, r.new, r.batch_rows, r.batches))
                time.sleep(rng.uniform(0, 0.05))

        def appender():
            rng = random.Random(2)
            k = 0
            while not stop.is_set():
                k += 1
                try:
                    spark.sql(f"insert into {table} select -({k} * 100 + id), 0, 0.0, 'appended' from range(10)")
                    appended.append(k)
                except Exception as e:  # noqa: BLE001 - the format refusing a racing append is allowed
                    refused.append(str(e)[:200])
                time.sleep(rng.uniform(0, 0.3))

        threads = [threading.Thread(target=reader), threading.Thread(target=appender)]
        for t in threads:
            t.start()
        failures = []
        try:
            for source in ["shifted", "uniform", "shifted"]:
                try:
                    build(dbt, table_format, f"{sources}.{source}", "raced", num_files=2, cluster_by=["a"])
                except DbtError as e:
                    failures.append(str(e))
                time.sleep(0.5)
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert not problems, problems[:3]
        for text in failures:  # only the format's own conflict may stop a rebuild
            assert any(w in text for w in ["Concurrent", "conflict", "CommitFailed", "Cannot commit"]), text[-1500:]
        print(f"{table_format}: {len(seen)} reads, {len(appended)} appends committed, {len(refused)} refused, "
              f"{len(failures)} rebuilds stopped by a conflict")
        assert len(seen) >= 3, f"the reader got only {len(seen)} reads in"
        for old, new, batch_rows, batches in seen:
            assert sorted([old, new]) == [0, ROWS], (old, new)
            assert batch_rows == 10 * batches, (batch_rows, batches)
        final = spark.sql(probe).first()
        assert (final.old, final.new) == ((0, ROWS) if not failures else (final.old, final.new))
        assert final.batch_rows == 10 * final.batches
        assert appended, f"no append went through ({len(refused)} refused: {refused[:2]})"

    def test_clustering_information_on_a_format_table(self, spark, built, dbt, table_format, tmp_path):
        """The metrics of the files the current version holds, from each file's rows (Delta through
        _metadata, Iceberg through its _file column), equal to the same min/max the format's metadata
        holds: the depth computed here from those bounds matches."""
        run, out = dbt_output(dbt, ["run-operation", "spark_clustering.clustering_information", "--args",
                                    json.dumps({"relation": built, "columns": ["a", "s"]})], tmp_path / "target")
        line = [x for x in out.splitlines() if "clustering_information: " in x][-1]
        info = json.loads(line.split("clustering_information: ", 1)[1])
        assert info["total_files"] == FILES and info["method"] == "hilbert"
        assert info["columns"]["a"]["total_file_count"] == FILES
        bounds = [m["a"] for m in file_bounds(spark, table_format, built, ["a"]).values()]
        # depth of a file: the most files containing one point of its range (reached at a file's lower bound)
        depths = [max(sum(1 for lo, hi in bounds if lo <= x <= hi) for x in [f_lo] + [lo for lo, _ in bounds if f_lo <= lo <= f_hi])
                  for f_lo, f_hi in bounds]
        assert abs(info["columns"]["a"]["average_depth"] - sum(depths) / len(depths)) < 0.01, (info["columns"]["a"], depths)
        assert info["columns"]["a"]["average_depth"] < FILES / 2

    def test_file_stats_of_a_format_table(self, spark, built, table_format, tmp_path):
        """file_stats of the clustering columns (a, s) from the format's metadata, no data file read:
        Delta's log (each file's add.stats, through table_data_files), Iceberg's `files` metadata
        table (the manifests); exact because the package set full-length bounds for them. A double
        column (b) reads the rows on both. Either way each file's min, max, null count and rows equal
        those of its rows."""
        from spark_clustering_dev.dbt import run_operation_json

        schema, name = built.split(".")
        sql = {cols: run_operation_json("metrics_file_stats_sql", {"schema": schema, "tables": [name], "columns": list(cols)},
                                        schema=schema)[name]
               for cols in [("a", "s"), ("a", "b")]}
        metadata = {"delta": "table_data_files(", "iceberg": f"from spark_catalog.{built}.files"}[table_format]
        assert metadata in sql[("a", "s")] and metadata not in sql[("a", "b")], sql
        plan = spark.sql(f"explain {sql[('a', 's')]}").first()[0]
        assert "FileScan" not in plan and "DataSkipping" not in plan, plan  # no data file in the plan
        rows = row_bounds(spark, table_format, built, ["a", "s"])
        got = {Path(local(r["file_path"])).name: r for r in spark.sql(sql[("a", "s")]).collect()}
        assert set(got) == set(rows)
        for file, want in rows.items():
            r = got[file]
            assert r["row_count"] == want["rows"]
            assert (r["a__min"], r["a__max"]) == want["a"] and (r["s__min"], r["s__max"]) == want["s"], (file, r, want)
            assert r["a__null_count"] == 0 and r["s__null_count"] == 0

    def test_a_layout_the_format_keeps_is_never_replaced(self, spark, dbt, sources, table_format):
        """A Delta table with liquid clustering, an Iceberg table with a sort order: the build stops with
        a config error saying how to hand the layout over, and the table is left as it was."""
        table = f"{sources}.own_layout"
        spark.sql(f"drop table if exists {table}")
        if table_format == "delta":
            spark.sql(f"create table {table} using delta cluster by (a) as select * from {sources}.uniform")
            wanted = ["declares liquid clustering on", "CLUSTER BY NONE"]
        else:
            spark.sql(f"create table {table} using iceberg as select * from {sources}.uniform")
            spark.sql(f"alter table {table} write ordered by b")
            wanted = ["declares the sort order", "WRITE UNORDERED"]
        good, before = fingerprint(spark, table, COLUMNS), versions(spark, table_format, table)
        with pytest.raises(DbtError) as failure:
            build(dbt, table_format, f"{sources}.shifted", "own_layout", num_files=2, cluster_by=["a"])
        text = str(failure.value)
        assert "model 'cluster_case'" in text and "config 'cluster_by'" in text, text[-2000:]
        assert all(w in text for w in wanted), text[-2000:]
        assert fingerprint(spark, table, COLUMNS) == good and versions(spark, table_format, table) == before

    def test_a_format_table_in_a_bucket_is_built_and_reclustered_without_copying_an_object(
            self, spark, dbt, sources, table_format, s3, tmp_path):
        """The table in a database located in the process's S3 bucket (S3A against the S3 server on
        127.0.0.1): a build, 3 unclustered appends and a recluster. The format's writer puts every file
        where it stays and the package's rewrite stages in a directory of the table that its commit
        takes over in place, so neither copies an object (S3A's own counters), where a plain table's
        swap and recluster commit rename (copy) every file they commit (docs/object_stores.md). The rows
        are exact after each step and the reclustered files' bounds in the format's metadata equal
        their rows' (table_data_files' statistics read from the bucket)."""
        from spark_clustering_dev.s3 import delta, s3a_counters

        bucket = f"it-formats-{table_format}"
        s3.create_bucket(bucket)
        schema = f"{sources}_s3"
        spark.sql(f"create database if not exists {schema} location 's3a://{bucket}/{schema}.db'")
        table, case = f"{schema}.grown_s3", {**grown_case(sources, table_format), "alias": "grown_s3"}

        def counted(action):
            before = s3a_counters(spark, f"s3a://{bucket}/")
            action()
            return delta(before, s3a_counters(spark, f"s3a://{bucket}/"))

        built = counted(lambda: dbt(["run", "--select", "cluster_case"], schema=schema,
                                    vars={f"case_{k}": v for k, v in case.items()}))
        location = spark.sql(f"describe table extended {table}").where("col_name = 'Location'").first()[1]
        assert location.startswith(f"s3a://{bucket}/{schema}.db/"), location
        assert fingerprint(spark, table, COLUMNS) == fingerprint(spark, f"{sources}.uniform", COLUMNS)
        shifted = 7 * ROWS
        for i in range(3):
            append(spark, table, f"{sources}.shifted", shifted + i * ROWS // 10, shifted + (i + 1) * ROWS // 10)
        before_files = live_files(spark, table_format, table)
        outcome = {}
        reclustered = counted(lambda: outcome.update(recluster(dbt, table, tmp_path / "target", case=case, dbt_schema=schema)))
        assert outcome["decision"] == "reclustered" and all(r["status"] == "committed" for r in outcome["rounds"]), outcome
        assert fingerprint(spark, table, COLUMNS) == fingerprint(spark, expected_grown(sources), COLUMNS)
        files = live_files(spark, table_format, table)
        new = files - before_files
        assert new and all(f.startswith(location + "/") and "/sc-l" in f for f in new), new
        # the new files' bounds in the format's metadata (Delta's add.stats, Iceberg's manifests), read from the bucket
        if table_format == "delta":
            meta = {Path(local(r[0])).name: (json.loads(r[1])["minValues"]["a"], json.loads(r[1])["maxValues"]["a"])
                    for r in spark.sql(f"select file_path, log_stats from table_data_files('{table}')").collect()}
        else:
            meta = {Path(local(r[0])).name: (r[1], r[2]) for r in spark.sql(
                f"select file_path, readable_metrics.a.lower_bound, readable_metrics.a.upper_bound from {table}.files").collect()}
        rows = row_bounds(spark, table_format, table, ["a"])
        for name in (Path(local(p)).name for p in new):
            assert meta[name] == rows[name]["a"], (name, meta[name], rows[name])
        print(f"[object store] {table_format}: S3A requests of the build "
              f"{ {k: v for k, v in built.items() if k in ('object_copy_requests', 'object_put_request', 'object_list_request')} }, "
              f"of the recluster { {k: v for k, v in reclustered.items() if k in ('object_copy_requests', 'object_put_request', 'object_list_request')} }")
        assert built.get("object_copy_requests", 0) == 0 and built.get("op_rename", 0) == 0, built
        assert reclustered.get("object_copy_requests", 0) == 0, reclustered
