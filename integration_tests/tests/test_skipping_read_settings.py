"""Data skipping never changes an answer, whoever wrote the files and however Spark is told to read
them (harness/read_settings.py).

Files by pyarrow (varied options), DuckDB, pyarrow's orc writer and Spark; read under the settings
that change which stored column a value comes from or what its bytes mean (case sensitivity with
merged schemas, datetime and INT96 rebase modes as `spark.read` options, table OPTIONS and session
confs, INT96 conversion and time zones, field ids, orc positional evolution and calendars through
the Hadoop configuration, the session and the read options, binary as string, nanoseconds as long,
widened read schemas, the row readers, the optimizer's rewrites switched off). Each scenario runs
seeded random predicates (SPARK_CLUSTERING_SKIPPING_SEED replays or draws one; about 1,300 in all),
each as its own scan, rule on and rule off:
  - the rows are equal (multiset of row hashes: count and checksum);
  - a query that succeeds without the rule succeeds with it (a query that fails without it may
    succeed with it, when the failing file is skipped);
  - where the statistics apply, the rule skips files (counted per scenario); where a setting is not
    modelled, EXPLAIN says so and the rule skips nothing.
Also, each case of issue #31 as its own regression test.
"""
from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StructField, StructType

from harness import read_settings as rs
from harness.plans import SKIPPING_CONF
from harness.predicates import seed_from_env
from spark_clustering_dev.spark import confs
from spark_clustering_dev.sql import sql_str

SCHEMA = "it_test_skipping_read_settings"
SEED = seed_from_env(default=31)
N = 40  # predicates per scenario (one UNION ALL query each, rule on and off; 60 until CI's time ran short)

RAW_FORMS = {"spark.sql.optimizer.excludedRules": ",".join(
    "org.apache.spark.sql.catalyst.optimizer." + r for r in [
        "OptimizeIn", "BooleanSimplification", "ConstantFolding", "NullPropagation", "ReplaceNullWithFalseInPredicate",
        "SimplifyBinaryComparison", "LikeSimplification", "UnwrapCastInBinaryComparison", "PruneFilters"])}
LA = {"spark.sql.session.timeZone": "America/Los_Angeles"}
POSITIONAL = "orc.force.positional.evolution"


def unsigned(seed: int):
    def write(d: Path):
        import pyarrow.parquet as pq
        rng = random.Random(seed)
        for k in range(rs.FILES):
            n = rs.ROWS
            pq.write_table(pa.table({
                "u8": pa.array([k * 30 + rng.randrange(30) for _ in range(n)], pa.uint8()),
                "u16": pa.array([k * 8000 + rng.randrange(8000) for _ in range(n)], pa.uint16()),
                "u32": pa.array([k * 500_000_000 + rng.randrange(10**6) for _ in range(n)], pa.uint32()),
                "u64": pa.array([k * 2_000_000_000_000_000_000 + rng.randrange(10**6) for _ in range(n)], pa.uint64()),
                "i32": pa.array([k * 100 + rng.randrange(100) for _ in range(n)], pa.int32()),
            }), d / f"part-{k:02d}.parquet")
    return write


FILE_SETS = {
    "pa": lambda spark, dirs: rs.pyarrow_parquet(SEED),
    "pa_options": lambda spark, dirs: rs.pyarrow_parquet(
        SEED + 1, write_statistics=["i32", "d", "s", "ts"], row_group_size=4, store_decimal_as_integer=True,
        use_dictionary=False),
    "pa_int96": lambda spark, dirs: rs.pyarrow_parquet(SEED + 2, use_deprecated_int96_timestamps=True),
    "pa_unsigned": lambda spark, dirs: unsigned(SEED + 3),
    "pa_ancient": lambda spark, dirs: rs.pyarrow_parquet(SEED + 4, ancient=True),
    "pa_nanos": lambda spark, dirs: rs.pyarrow_parquet(SEED + 5, columns=["i32", "ts"],
                                                       types={"ts": pa.timestamp("ns", tz="UTC")}),
    "pa_case": lambda spark, dirs: rs.pyarrow_case_columns(SEED + 6),
    "pa_field_ids": lambda spark, dirs: rs.pyarrow_field_ids(SEED + 7),
    "duckdb": lambda spark, dirs: rs.duckdb_parquet(SEED + 8),
    "duckdb_row_groups": lambda spark, dirs: rs.duckdb_parquet(SEED + 9, ROW_GROUP_SIZE=4),
    # timestamps of orc files come from Spark below: Spark's orc reader fails on pyarrow's before 1970
    "orc": lambda spark, dirs: rs.pyarrow_orc(SEED + 10),
    "orc_swapped": lambda spark, dirs: rs.pyarrow_orc(SEED + 11, columns=["i32", "i16"], rename={"i32": "b", "i16": "a"}),
    "spark_legacy": lambda spark, dirs: rs.spark_written(spark, dirs("pa_ancient"), "parquet", {
        "spark.sql.parquet.datetimeRebaseModeInWrite": "LEGACY", "spark.sql.parquet.int96RebaseModeInWrite": "LEGACY",
        "spark.sql.parquet.outputTimestampType": "INT96"}),
    "spark_millis": lambda spark, dirs: rs.spark_written(spark, dirs("pa"), "parquet", {
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MILLIS"}),
    "spark_orc": lambda spark, dirs: rs.spark_written(spark, dirs("pa_ancient"), "orc", {}),
}

FIELD_ID_SCHEMA = StructType([StructField("x", IntegerType(), metadata={"parquet.field.id": 1}),
                              StructField("y", IntegerType(), metadata={"parquet.field.id": 2})])
WIDENED = ("i8 int, i16 bigint, i32 bigint, i64 bigint, f32 double, f64 double, dec_s decimal(12,2), "
           "dec_l decimal(22,4), d date, ts timestamp, ts_ntz timestamp_ntz, s string, bo boolean, bin binary")


def external_table(name: str, fmt: str, options: dict[str, str] | None = None, sidecar: bool = False,
                   sidecar_confs: dict[str, str] | None = None, columns: str = ""):
    def setup(spark, d: Path):
        spark.sql(f"drop table if exists {SCHEMA}.{name}")
        opts = f"options ({', '.join(f'{sql_str(k)} {sql_str(v)}' for k, v in options.items())})" if options else ""
        spark.sql(f"create table {SCHEMA}.{name} {columns} using {fmt} {opts} location {sql_str(str(d))}")
        if sidecar:
            with confs(spark, sidecar_confs or {}):
                spark.sql(f"select * from write_file_stats('{SCHEMA}.{name}', true)").collect()
    return setup


def column_added_with_default(name: str, fmt: str):
    """A table over the files, then a column added with a DEFAULT: Spark reads the files that lack
    it as the default, not as NULL; one file written after has its own values."""
    def setup(spark, d: Path):
        spark.sql(f"drop table if exists {SCHEMA}.{name}")
        spark.sql(f"create table {SCHEMA}.{name} using {fmt} location {sql_str(str(d))}")
        spark.sql(f"alter table {SCHEMA}.{name} add column added int default 7")
        spark.sql(f"alter table {SCHEMA}.{name} add column added_null int")
        first = spark.table(f"{SCHEMA}.{name}").columns[0]
        spark.sql(f"insert into {SCHEMA}.{name} ({first}, added, added_null) values (null, 8, 9), (null, 6, null)")
    return setup


S = rs.Scenario
SCENARIOS = [
    S("pyarrow parquet", "pa", rs.parquet()),
    S("pyarrow parquet, row reader", "pa", rs.parquet(), {"spark.sql.parquet.enableVectorizedReader": "false"}),
    S("pyarrow parquet, session time zone", "pa", rs.parquet(), LA),
    S("pyarrow parquet, optimizer rewrites off", "pa", rs.parquet(), RAW_FORMS),
    S("pyarrow parquet, widened read schema", "pa", rs.parquet_schema(WIDENED), expect="any"),
    S("pyarrow parquet, binaryAsString", "pa", rs.parquet(), {"spark.sql.parquet.binaryAsString": "true"}),
    S("pyarrow options (stats per column, row groups, int decimals)", "pa_options", rs.parquet()),
    S("pyarrow INT96", "pa_int96", rs.parquet()),
    S("pyarrow INT96, int96RebaseMode LEGACY option", "pa_int96", rs.parquet(int96RebaseMode="LEGACY")),
    S("pyarrow INT96, INT96 conversion + time zone", "pa_int96", rs.parquet(),
      {"spark.sql.parquet.int96TimestampConversion": "true", **LA}),
    S("pyarrow unsigned", "pa_unsigned", rs.parquet()),
    S("pyarrow dates before 1582", "pa_ancient", rs.parquet()),
    S("pyarrow dates before 1582, datetimeRebaseMode LEGACY option", "pa_ancient",
      rs.parquet(datetimeRebaseMode="LEGACY")),
    S("pyarrow dates before 1582, LEGACY session conf", "pa_ancient", rs.parquet(),
      {"spark.sql.parquet.datetimeRebaseModeInRead": "LEGACY"}),
    S("pyarrow dates before 1582, LEGACY table OPTIONS, sidecar", "pa_ancient", rs.table(f"{SCHEMA}.ancient_opts"),
      setup=external_table("ancient_opts", "parquet", {"datetimeRebaseMode": "LEGACY"}, sidecar=True)),
    S("pyarrow dates before 1582, sidecar written CORRECTED, read LEGACY", "pa_ancient",
      rs.table(f"{SCHEMA}.ancient_plain"), {"spark.sql.parquet.datetimeRebaseModeInRead": "LEGACY"},
      setup=external_table("ancient_plain", "parquet", sidecar=True,
                           sidecar_confs={"spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED"})),
    S("pyarrow nanoseconds as long", "pa_nanos", rs.parquet(), {"spark.sql.legacy.parquet.nanosAsLong": "true"}),
    S("pyarrow A / a, case-sensitive, merged schema", "pa_case", rs.parquet(mergeSchema="true"),
      {"spark.sql.caseSensitive": "true"}),
    S("pyarrow field ids, read by name", "pa_field_ids", rs.parquet()),
    S("pyarrow field ids, read by id", "pa_field_ids",
      lambda spark, d: spark.read.schema(FIELD_ID_SCHEMA).parquet(str(d)),
      {"spark.sql.parquet.fieldId.read.enabled": "true"}, expect="off"),
    S("pyarrow field ids, read by id (Hadoop conf)", "pa_field_ids",
      lambda spark, d: spark.read.schema(FIELD_ID_SCHEMA).parquet(str(d)),
      hadoop={"spark.sql.parquet.fieldId.read.enabled": "true"}, expect="off"),
    S("pyarrow parquet, a column added with a DEFAULT", "pa", rs.table(f"{SCHEMA}.with_default"),
      setup=column_added_with_default("with_default", "parquet")),
    S("pyarrow orc, a column added with a DEFAULT", "orc", rs.table(f"{SCHEMA}.orc_with_default"),
      setup=column_added_with_default("orc_with_default", "orc")),
    S("duckdb", "duckdb", rs.parquet()),
    S("duckdb row groups, optimizer rewrites off", "duckdb_row_groups", rs.parquet(), RAW_FORMS),
    S("pyarrow orc", "orc", rs.orc()),
    S("pyarrow orc, row reader", "orc", rs.orc(), {"spark.sql.orc.enableVectorizedReader": "false"}),
    S("pyarrow orc, session time zone", "orc", rs.orc(), LA),
    S("orc columns by name", "orc_swapped", rs.orc("a int, b int")),
    S("orc positional, Hadoop conf", "orc_swapped", rs.orc("a int, b int"), hadoop={POSITIONAL: "true"}, expect="off"),
    S("orc positional, session conf", "orc_swapped", rs.orc("a int, b int"), {POSITIONAL: "true"}, expect="off"),
    S("orc positional, read option", "orc_swapped", rs.orc("a int, b int", **{POSITIONAL: "true"}), expect="off"),
    S("orc positional, table OPTIONS", "orc_swapped", rs.table(f"{SCHEMA}.orc_positional"), expect="off",
      setup=external_table("orc_positional", "orc", {POSITIONAL: "true"}, columns="(a int, b int)")),
    S("pyarrow orc, proleptic calendar (Hadoop conf)", "orc", rs.orc(), hadoop={"orc.proleptic.gregorian": "true"},
      expect="off"),
    S("spark legacy calendar + INT96", "spark_legacy", rs.parquet()),
    S("spark legacy calendar, CORRECTED option", "spark_legacy", rs.parquet(datetimeRebaseMode="CORRECTED")),
    S("spark millis, table with sidecar", "spark_millis", rs.table(f"{SCHEMA}.millis"),
      setup=external_table("millis", "parquet", sidecar=True)),
    S("spark orc", "spark_orc", rs.orc()),
]

SUMMARY: dict[str, dict] = defaultdict(dict)


@pytest.fixture(scope="module")
def session(spark):
    spark.sql(f"create database if not exists {SCHEMA}")
    with confs(spark, {"spark.sql.adaptive.enabled": "false", SKIPPING_CONF: "true"}):
        yield spark
    spark.sql(f"drop database if exists {SCHEMA} cascade")


@pytest.fixture(scope="module")
def file_sets(session, tmp_path_factory):
    root = tmp_path_factory.mktemp("read_settings")
    made: dict[str, Path] = {}

    def directory(name: str) -> Path:
        if name not in made:
            d = root / name
            d.mkdir()
            FILE_SETS[name](session, directory)(d)
            made[name] = d
        return made[name]
    return directory


def probe_filter(df) -> object:
    """A filter on the first column the rule can test (for EXPLAIN)."""
    for f in df.schema.fields:
        if f.dataType.simpleString().split("(")[0] in rs.SUPPORTED:
            return F.col(f"`{f.name}`").isNotNull()
    return None


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_answers_equal_rule_on_and_off(session, file_sets, scenario):
    d = file_sets(scenario.files)
    # orc's own reader pushdown fails on an IN list holding NULL (a NullPointerException in orc's
    # search argument, rule on and off alike): orc scenarios run without it
    pushdown = {"spark.sql.orc.filterPushdown": "false"} if "orc" in scenario.files else {}
    with confs(session, {**pushdown, **scenario.confs}), rs.hadoop_conf(session, scenario.hadoop):
        if scenario.setup:
            scenario.setup(session, d)
        df = scenario.read(session, d)
        with confs(session, {SKIPPING_CONF: "false"}):
            columns = {f.name: f.dataType.simpleString() for f in df.schema.fields}
            try:
                samples = rs.samples(df)
            except Exception:  # noqa: BLE001 - a file set Spark cannot read whole: literals from types only
                samples = {}
        rng = random.Random(f"{SEED}:{scenario.name}")
        preds = rs.Generator(rng, columns, samples).predicates(N)
        outcomes, skipped, before = rs.run(session, df, preds)
        probe = probe_filter(df)
        plan = df.where(probe)._jdf.queryExecution().executedPlan().toString() if probe is not None else ""

    failures, both_fail, only_off_fails = [], 0, 0
    for o in outcomes:
        if o.error_off and o.error_on:
            both_fail += 1
        elif o.error_on:
            failures.append(f"FAILS WITH THE RULE ONLY: {o.pred.text}\n    {o.error_on}")
        elif o.error_off:
            only_off_fails += 1  # the failing file was skipped
        elif o.rows_on != o.rows_off:
            failures.append(f"WRONG ANSWER: {o.pred.text}\n    rule on {sum(o.rows_on.values())} rows, "
                            f"rule off {sum(o.rows_off.values())}")
    SUMMARY[scenario.name] = {"predicates": len(outcomes), "wrong": len(failures), "fail both": both_fail,
                              "fail only without rule": only_off_fails, "files skipped": skipped,
                              "files listed": before}
    assert not failures, (f"{scenario.name} (seed {SEED}, columns {columns}): {len(failures)} of {len(outcomes)}:\n"
                          + "\n".join(failures[:15]))
    if scenario.expect == "skips":
        assert skipped > 0, f"{scenario.name}: the rule skipped no file in {len(outcomes)} predicates ({before} listed)"
        assert "DataSkipping: kept" in plan, plan
    elif scenario.expect == "off":
        assert skipped == 0, f"{scenario.name}: skipped {skipped} files under a setting it does not model"
        assert "DataSkipping: off (read setting not modelled" in plan, plan
    assert both_fail < len(outcomes), f"{scenario.name}: Spark fails every query: {outcomes[0].error_off}"


def test_summary_read_settings():
    """Prints what each scenario ran and skipped (runs last in the module)."""
    lines = ["| scenario | predicates | wrong | fail both | fail only without rule | files skipped / listed |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, s in SUMMARY.items():
        lines.append(f"| {name} | {s['predicates']} | {s['wrong']} | {s['fail both']} | {s['fail only without rule']} "
                     f"| {s['files skipped']} / {s['files listed']} |")
    total = sum(s["predicates"] for s in SUMMARY.values())
    print(f"\nread settings (seed {SEED}): {total} predicates\n" + "\n".join(lines))
    if len(SUMMARY) == len(SCENARIOS):
        assert total >= N * len(SCENARIOS)


# ----------------------------------------------------------------------------------------------
# the cases of issue #31, each as it was reported


def both(session, query) -> list:
    out = []
    for on in ("true", "false"):
        with confs(session, {SKIPPING_CONF: on}):
            out.append(query().count())
    return out


def test_case_sensitive_column_without_statistics_is_not_another_column(session, tmp_path):
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"A": pa.array([1, 2], pa.int32()), "a": pa.array([100, 200], pa.uint16())}),
                   tmp_path / "f0.parquet")
    pq.write_table(pa.table({"A": pa.array([3, 4], pa.int32())}), tmp_path / "f1.parquet")
    with confs(session, {"spark.sql.caseSensitive": "true"}):
        t = session.read.option("mergeSchema", "true").parquet(str(tmp_path))
        assert both(session, lambda: t.where("a = 100")) == [1, 1]
        assert both(session, lambda: t.where("a IS NULL")) == [2, 2]
    wide = tmp_path / "wide"
    wide.mkdir()
    pq.write_table(pa.table({"A": pa.array([1], pa.int32()), "a": pa.array([7], pa.uint32())}), wide / "f0.parquet")
    pq.write_table(pa.table({"A": pa.array([3, 4], pa.int32())}), wide / "f1.parquet")
    with confs(session, {"spark.sql.caseSensitive": "true"}):
        t = session.read.option("mergeSchema", "true").parquet(str(wide))
        # uint32 is read as bigint: statistics of the int column `A` would crash the query
        assert both(session, lambda: t.where("a = 7")) == [1, 1]


def test_datetime_rebase_option_and_table_options(session, tmp_path):
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"d": pa.array([dt.date(1500, 3, 1)])}), tmp_path / "f.parquet")
    t = session.read.option("datetimeRebaseMode", "LEGACY").parquet(str(tmp_path))
    assert t.collect()[0]["d"] == dt.date(1500, 2, 20)
    assert both(session, lambda: t.where("d = date'1500-02-20'")) == [1, 1]
    session.sql(f"drop table if exists {SCHEMA}.rebase_opts")
    session.sql(f"create table {SCHEMA}.rebase_opts using parquet options (datetimeRebaseMode 'LEGACY') "
                f"location {sql_str(str(tmp_path))}")
    assert both(session, lambda: session.table(f"{SCHEMA}.rebase_opts").where("d = date'1500-02-20'")) == [1, 1]


def test_orc_positional_evolution_in_the_hadoop_conf(session, tmp_path):
    import pyarrow.orc as po
    po.write_table(pa.table({"b": pa.array([1000], pa.int32()), "a": pa.array([1], pa.int32())}), str(tmp_path / "f.orc"))
    with rs.hadoop_conf(session, {POSITIONAL: "true"}):
        t = session.read.schema("a int, b int").orc(str(tmp_path))
        assert t.collect()[0]["a"] == 1000
        assert both(session, lambda: t.where("a = 1000")) == [1, 1]
        plan = t.where("a = 1000")._jdf.queryExecution().executedPlan().toString()
        assert "DataSkipping: off (read setting not modelled: orc.force.positional.evolution=true" in plan, plan


def test_not_in_empty_list_on_an_all_null_file(session, tmp_path):
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"x": pa.array([None, None], pa.int32())}), tmp_path / "f.parquet")
    with confs(session, {"spark.sql.optimizer.excludedRules": "org.apache.spark.sql.catalyst.optimizer.OptimizeIn"}):
        df = session.read.parquet(str(tmp_path)).where(~F.col("x").isin([]))
        expected = session.createDataFrame([(None,), (None,)], "x int").where(~F.col("x").isin([])).count()
        assert both(session, lambda: df) == [expected, expected]
