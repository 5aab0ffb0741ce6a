"""FileStatsStore: the per-file statistics data skipping reads, from file footers and from the
sidecar `write_file_stats` writes. What matters: every bound the store claims really bounds what
Spark reads from that file (Spark's own per-file min / max / NULL count is the reference), doubtful
footer bounds are unknown, and the sidecar is exact, incremental and never served for a file that
changed behind its back.
"""
from __future__ import annotations

import glob
import json
import math
import os
import shutil
import struct
from decimal import Decimal

import pytest

from harness.storage import STORAGES, database_on, names
from harness.storage import location as storage_location
from spark_clustering_dev.dbt import dbt_output
from spark_clustering_dev.paths import WORK, local
from spark_clustering_dev.spark import confs

COLUMNS = {
    "g": "int", "i": "int", "l": "bigint", "b": "tinyint", "d": "double", "f": "float",
    "dec": "decimal(38,18)", "dt": "date", "ts": "timestamp", "ntz": "timestamp_ntz", "s": "string",
    "bo": "boolean",
}
DATETIMES = {"dt", "ts", "ntz"}
FLOATS = {"d", "f"}


def row(g, i="null", l="null", b="null", d="null", f="null", dec="null", dt="null", ts="null", ntz="null",
        s="null", bo="null"):
    values = [str(g), i, l, b, d, f, dec, dt, ts, ntz, s, bo]
    return "(" + ", ".join(f"cast({v} as {t})" for v, t in zip(values, COLUMNS.values())) + ")"


# One file per group g: (parquet timestamp type, parquet datetime write mode, rows).
FILES = {
    # ordinary values, -0.0 / 0.0, dates and times before 1970 and before 1582, unicode, NULLs
    1: ("TIMESTAMP_MICROS", "CORRECTED", [
        row(1, 1, 10000000000, 1, "-0.0D", "1.5", "'12345678901234567890.123456789012345678'", "date'1969-12-31'",
            "timestamp'1969-12-31 23:59:59.999999'", "timestamp_ntz'2020-01-01 00:00:00.000001'", "'é日本'", "true"),
        row(1, -5, -10000000000, -128, "0.0D", "-2.5", "'-0.000000000000000001'", "date'1000-01-01'",
            "timestamp'1000-01-01 00:00:00'", "timestamp_ntz'1000-06-15 12:00:00'", "'abc'", "false"),
        row(1),
        row(1, 7, 3, 127, "2.5D", "0.0", "'0'", "date'2024-02-29'", "timestamp'2024-02-29 12:34:56.789123'",
            "timestamp_ntz'1969-07-20 20:17:40'", "'😀'", "null")]),
    # NaN and infinities, a 5002-byte maximum string, millisecond timestamps, the calendar switch
    2: ("TIMESTAMP_MILLIS", "CORRECTED", [
        row(2, 100, 1, 0, "'NaN'", "'NaN'", "'1.0'", "date'1582-10-04'", "timestamp'1582-10-04 10:00:00.123'",
            "timestamp_ntz'1582-10-15 00:00:00'", "concat('zz', repeat('y', 5000))", "true"),
        row(2, 101, 2, 1, "'Infinity'", "'-Infinity'", "'2.5'", "date'1582-10-15'",
            "timestamp'2262-04-11 23:47:16.854'", "timestamp_ntz'9999-12-31 23:59:59.999'", "'zz'", "true"),
        row(2, 102, 3, 2, "'-Infinity'", "'1.0'", "'-99999999999999999999.999999999999999999'",
            "date'0001-01-01'", "timestamp'0001-01-01 00:00:00'", "null", "'a'", "true")]),
    # INT96 timestamps: no usable footer statistics
    3: ("INT96", "CORRECTED", [
        row(3, 5, 5, 5, "1.0D", "1.0", "'5'", "date'2000-01-01'", "timestamp'2000-01-01 00:00:00'",
            "timestamp_ntz'2000-01-01 00:00:00'", "'m'", "false"),
        row(3, 6, 6, 6, "'NaN'", "'NaN'", "'6'", "date'2000-01-02'", "timestamp'1900-01-01 00:00:00'",
            "timestamp_ntz'2000-01-02 00:00:00'", "'n'", "false")]),
    # NaN first
    4: ("TIMESTAMP_MICROS", "CORRECTED", [
        row(4, 1, d="'NaN'", f="'NaN'"), row(4, 2, d="1.0D", f="1.0"), row(4, 3, d="-1.0D", f="-1.0")]),
    # written with Spark's legacy calendar rebase: footer dates and times are not what Spark reads
    5: ("TIMESTAMP_MICROS", "LEGACY", [
        row(5, 1, 1, 1, "1.0D", "1.0", "'1'", "date'1200-03-01'", "timestamp'1200-03-01 00:00:00'",
            "timestamp_ntz'1200-03-01 00:00:00'", "'q'", "true")]),
    # every value NULL
    7: ("TIMESTAMP_MICROS", "CORRECTED", [row(7), row(7)]),
}
EMPTY_GROUP = 6  # a file with zero rows


def new_table(spark, table, definition):
    """`create table <table> <definition>` in place of any table of that name."""
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} {definition}")


def create(spark, table, fmt):
    cols = ", ".join(f"{c} {t}" for c, t in COLUMNS.items())
    new_table(spark, table, f"({cols}) using {fmt}")


def insert(spark, table, rows, ts_type="TIMESTAMP_MICROS", rebase="CORRECTED", where=""):
    """One INSERT, one file."""
    with confs(spark, {"spark.sql.parquet.outputTimestampType": ts_type,
                       "spark.sql.parquet.datetimeRebaseModeInWrite": rebase,
                       "spark.sql.parquet.int96RebaseModeInWrite": rebase}):
        spark.sql(f"insert into {table} select /*+ REPARTITION(1) */ * from values {', '.join(rows)} "
                  f"as v({', '.join(COLUMNS)}) {where}")


def build(spark, table, fmt):
    create(spark, table, fmt)
    for g, (ts_type, rebase, rows) in FILES.items():
        insert(spark, table, rows, ts_type, rebase)
    insert(spark, table, [row(EMPTY_GROUP, 1)], where="where g < 0")


def store(spark):
    return spark._jvm.org.apache.spark.sql.sparkclustering.stats.FileStatsStore


def describe(spark, table):
    return json.loads(store(spark).describeTable(spark._jsparkSession, table))


def write_stats(spark, table, rebuild="false"):
    return spark.sql(f"select * from write_file_stats('{table}', {rebuild})").collect()[0].asDict()


def drop_checksum(path):
    """Hadoop's local file system keeps a .crc beside each file it wrote; a file edited by hand
    would fail its checksum."""
    crc = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.crc")
    if os.path.exists(crc):
        os.remove(crc)


def location(spark, table):
    return str(local(spark.sql(f"describe formatted {table}").where("col_name = 'Location'").collect()[0][1]))


def sidecar_files(spark, table):
    """The names in the table's sidecar directory, on either store."""
    return names(spark, storage_location(spark, table) + "/_sc_file_stats")


def actual(spark, table, columns=COLUMNS):
    """Spark's own statistics per file: path -> {rows, column: (min, max, nulls)}; dates as days,
    timestamps as micros, the way the store reports them."""
    exprs = []
    for c, t in columns.items():
        for fn in ("min", "max"):
            e = f"{fn}(`{c}`)"
            if t == "date":
                e = f"unix_date({e})"
            elif t == "timestamp":
                e = f"unix_micros({e})"
            elif t == "timestamp_ntz":
                e = f"unix_micros(cast({e} as timestamp))"  # the session zone is UTC
            exprs.append(e)
        exprs.append(f"count(*) - count(`{c}`)")
    out = {}
    for r in spark.sql(f"select _metadata.file_path, count(*), {', '.join(exprs)} from {table} group by 1").collect():
        out[local(r[0])] = {"rows": r[1], **{c: tuple(r[2 + 3 * k: 5 + 3 * k]) for k, c in enumerate(columns)}}
    return out


def parse(value, t):
    if value is None:
        return None
    if t in ("double", "float"):
        return float(value)
    if t.startswith("decimal"):
        return Decimal(value)
    return value


def key(value, t):
    """Spark's order: NaN is the largest double, -0.0 = 0.0; strings by UTF-8 bytes."""
    if t in ("double", "float"):
        return (1, 0.0) if math.isnan(value) else (0, value)
    if t == "string":
        return value.encode("utf-8")
    return value


def check_bounds(desc, act, columns=COLUMNS):
    """Every known bound bounds the data; every known NULL count and row count is exact. Returns
    {g: file entry} (g = the file's group, None for an empty file)."""
    by_group = {}
    assert len(desc["files"]) >= len(act)
    for f in desc["files"]:
        a = act.get(local(f["path"]))
        if a is None:  # no rows in the file
            assert f["rows"] in (0, None), f
            by_group[None] = f
            continue
        if f["rows"] is not None:
            assert f["rows"] == a["rows"], f["path"]
        by_group[a["g"][0] if "g" in a else f["path"]] = f
        for c, st in f["cols"].items():
            t = columns[c]
            lo, hi, nulls = a[c]
            where = (f["path"], c, st, a[c])
            if st["nulls"] is not None:
                assert st["nulls"] == nulls, where
            if lo is None:
                continue  # only NULLs: any bound holds
            if st["min"] is not None:
                assert key(parse(st["min"], t), t) <= key(lo, t), where
            if st["max"] is not None:
                assert key(parse(st["max"], t), t) >= key(hi, t), where
    return by_group


def assert_exact(f, a, c, columns=COLUMNS, lo=True, hi=True):
    t = columns[c]
    st = f["cols"][c]
    if lo:
        assert st["min"] is not None and key(parse(st["min"], t), t) == key(a[c][0], t), (c, st, a[c])
    if hi:
        assert st["max"] is not None and key(parse(st["max"], t), t) == key(a[c][1], t), (c, st, a[c])


def actual_by_group(act):
    return {a["g"][0]: a for a in act.values()}


@pytest.fixture(scope="module")
def s(spark, dbt_schema):
    spark.sql(f"create database if not exists {dbt_schema}")
    store(spark).clearCaches()
    return dbt_schema


@pytest.mark.parametrize("storage", STORAGES)
def test_parquet_footers_bound_the_data_and_drop_what_is_doubtful(spark, s, s3, storage):
    t = f"{database_on(spark, s3, s, storage)}.pq_footers"
    build(spark, t, "parquet")
    desc = describe(spark, t)
    act = actual(spark, t)
    assert (desc["fromSidecar"], desc["fromFooter"], desc["unknown"]) == (0, len(FILES) + 1, 0)
    files = check_bounds(desc, act)
    by_g = actual_by_group(act)
    assert files[None]["rows"] == 0  # the empty file: zero rows, known
    for g, f in files.items():
        if g is None:
            continue
        # Spark's parquet-mr (1.13-1.17 on every line) makes a NaN the chunk's max, and parquet's
        # reader then drops the chunk's bounds: a float column's bounds are exact, or unknown with a NaN
        for c in FLOATS:
            if by_g[g][c][0] is None:
                continue
            if math.isnan(by_g[g][c][1]):
                assert f["cols"].get(c, {}).get("min") is None and f["cols"].get(c, {}).get("max") is None, (g, c, f)
            else:
                assert_exact(f, by_g[g], c)
        exact = {"g", "i", "l", "b", "dec", "bo", "s", "dt", "ts", "ntz"} - {c for c in COLUMNS if by_g[g][c][0] is None}
        if g == 2:
            exact -= {"s"}  # the maximum has 5002 bytes: never a known bound
            assert f["cols"]["s"]["max"] is None
        if g == 3:
            assert "ts" not in f["cols"]  # INT96
            exact -= {"ts"}
        if g == 5:
            assert not DATETIMES & set(f["cols"]), f  # legacy calendar
            exact -= DATETIMES
        for c in exact:
            assert_exact(f, by_g[g], c)
    assert {g for g in by_g if any(by_g[g][c][1] is not None and math.isnan(by_g[g][c][1]) for c in FLOATS)} == {2, 3, 4}
    assert files[7]["cols"]["i"] == {"min": None, "max": None, "nulls": 2}


def test_truncated_parquet_string_statistics_still_bound_the_data(spark, s):
    # parquet-mr truncates without marking the bound inexact: a prefix for min, rounded up for max
    t = f"{s}.pq_truncated"
    new_table(spark, t, "(s string) using parquet")
    with confs(spark, {"parquet.statistics.truncate.length": "8"}):
        spark.sql(f"insert into {t} select /*+ REPARTITION(1) */ * from values ('{'a' * 30}'), ('{'z' * 30}'), "
                  f"('é{'ÿ' * 20}'), ('mmm') as v(s)")
    columns = {"s": "string"}
    desc = describe(spark, t)
    check_bounds(desc, actual(spark, t, columns), columns)
    (f,) = desc["files"]
    assert f["cols"]["s"]["min"] is None or len(f["cols"]["s"]["min"].encode()) <= 8


def test_orc_footers_bound_the_data(spark, s):
    t = f"{s}.orc_footers"
    build(spark, t, "orc")
    desc = describe(spark, t)
    act = actual(spark, t)
    assert desc["unknown"] == 0 and desc["fromSidecar"] == 0
    files = check_bounds(desc, act)
    by_g = actual_by_group(act)
    for g, f in files.items():
        if g is None:
            continue
        assert "ts" not in f["cols"] and "ntz" not in f["cols"], f  # orc timestamps: unknown
        assert all(f["cols"][c]["max"] is None for c in FLOATS), f
        exact = {"g", "i", "l", "b", "dec", "bo", "s", "dt"} - {c for c in COLUMNS if by_g[g][c][0] is None}
        if g == 2:
            exact -= {"s"}
            assert_exact(f, by_g[g], "s", hi=False)  # orc keeps only an upper bound of a long max
        for c in exact:
            assert_exact(f, by_g[g], c)  # dates before 1582 included: rebased as Spark reads them
    assert_exact(files[1], by_g[1], "d", hi=False)


@pytest.mark.parametrize("storage", STORAGES)
def test_sidecar_is_exact_and_incremental(spark, s, s3, storage):
    t = f"{database_on(spark, s3, s, storage)}.pq_sidecar"
    build(spark, t, "parquet")
    n = len(FILES) + 1
    result = write_stats(spark, t)
    assert (result["files"], result["files_scanned"]) == (n, n)
    assert os.path.basename(local(result["sidecar"])) in sidecar_files(spark, t)
    desc = describe(spark, t)
    assert (desc["fromSidecar"], desc["fromFooter"], desc["unknown"]) == (n, 0, 0)
    act = actual(spark, t)
    files = check_bounds(desc, act)
    by_g = actual_by_group(act)
    assert files[None]["rows"] == 0 and all(c["nulls"] == 0 for c in files[None]["cols"].values())
    for g, f in files.items():
        if g is None:
            continue
        assert set(f["cols"]) == set(COLUMNS)  # INT96, legacy calendar and floats too
        for c in COLUMNS:
            if by_g[g][c][0] is None:
                assert f["cols"][c] == {"min": None, "max": None, "nulls": by_g[g]["rows"]}
            elif g == 2 and c == "s":
                assert_exact(f, by_g[g], c, hi=False)  # the 5002-byte max is not recorded
                assert f["cols"][c]["max"] is None
            else:
                assert_exact(f, by_g[g], c)
    assert files[2]["cols"]["d"]["max"] == "NaN"

    # new files come from their footers until the next write_file_stats, which reads only them
    insert(spark, t, [row(8, 42, 42, 42, "4.2D", "4.2", "'42'", "date'2042-04-02'", "timestamp'2042-04-02 00:00:00'",
                          "timestamp_ntz'2042-04-02 00:00:00'", "'forty-two'", "true")])
    desc = describe(spark, t)
    assert (desc["fromSidecar"], desc["fromFooter"]) == (n, 1)
    check_bounds(desc, actual(spark, t))
    result = write_stats(spark, t)
    assert (result["files"], result["files_scanned"]) == (n + 1, 1)
    assert [p for p in sidecar_files(spark, t) if p.startswith("stats-")] == [os.path.basename(local(result["sidecar"]))]
    assert describe(spark, t)["fromSidecar"] == n + 1
    # nothing new: nothing scanned, the generation stays; rebuild reads everything again
    again = write_stats(spark, t)
    assert (again["files_scanned"], again["sidecar"]) == (0, result["sidecar"])
    rebuilt = write_stats(spark, t, "'true'")
    assert (rebuilt["files"], rebuilt["files_scanned"]) == (n + 1, n + 1)
    assert len([p for p in sidecar_files(spark, t) if p.startswith("stats-")]) == 1


def test_write_file_stats_reads_only_the_columns_no_footer_proves(spark, s):
    """write_file_stats takes a file's bounds from its footer when the footer gives the column's exact
    min, max and NULL count (what clustered_table writes for most tables), and reads only the
    columns it cannot trust: a parquet string (Spark's writer flags no string bound exact, and a
    writer may cut them; read once here, every later measure takes them from the sidecar) and an
    INT96 timestamp. Without those columns no Spark job runs at all."""
    columns = {"g": "int", "i": "bigint", "dec": "decimal(10,2)", "dt": "date", "s": "string", "ts": "timestamp"}
    t = f"{s}.pq_footer_exact"
    new_table(spark, t, "(" + ", ".join(f"{c} {ty}" for c, ty in columns.items()) + ") using parquet")

    def add(g, ts_type, rows):
        with confs(spark, {"spark.sql.parquet.outputTimestampType": ts_type}):
            spark.sql(f"insert into {t} select /*+ REPARTITION(1) */ * from values {', '.join(rows)} "
                      f"as v({', '.join(columns)})")

    add(1, "TIMESTAMP_MICROS", ["(1, 5, 1.25, date'2020-01-02', 'b', timestamp'2020-01-02 03:04:05')",
                                "(1, -7, null, date'2019-12-31', null, null)", "(1, null, 9.5, null, 'a', null)"])
    add(2, "TIMESTAMP_MICROS", ["(2, null, null, null, null, null)"])  # only NULLs beside g
    sc = spark.sparkContext

    def jobs_of(group, call):
        sc.setJobGroup(group, group)
        try:
            call()
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        return list(sc.statusTracker().getJobIdsForGroup(group))

    footers_only = {}
    assert jobs_of("sc_footers_only", lambda: footers_only.update(write_stats(spark, t))) != []
    assert footers_only["columns_scanned"] == ["s"], footers_only
    desc = describe(spark, t)
    assert desc["fromSidecar"] == 2
    act = actual(spark, t, columns)
    files = check_bounds(desc, act, columns)
    for f in files.values():
        g = f["cols"]["g"]["min"]
        a = next(x for x in act.values() if x["g"][0] == int(g))
        for c in columns:
            if a[c][0] is None:
                assert f["cols"][c] == {"min": None, "max": None, "nulls": a["rows"]}, (c, f)
            else:
                assert_exact(f, a, c, columns)
                assert f["cols"][c]["nulls"] == a[c][2], (c, f)

    add(3, "INT96", ["(3, 1, 1.00, date'2021-01-01', 'c', timestamp'2021-01-01 00:00:00')"])
    result = {}
    assert jobs_of("sc_int96_read", lambda: result.update(write_stats(spark, t))) != []
    # the job reads only the column no footer proves; the file's other bounds come from its footer
    assert result["columns_scanned"] == ["s", "ts"], result
    desc = describe(spark, t)
    assert desc["fromSidecar"] == 3
    act = actual(spark, t, columns)
    files = check_bounds(desc, act, columns)
    int96 = next(f for f in files.values() if int(f["cols"]["g"]["min"]) == 3)
    int96_actual = next(x for x in act.values() if x["g"][0] == 3)
    for c in columns:
        assert_exact(int96, int96_actual, c, columns)
        assert int96["cols"][c]["nulls"] == 0, (c, int96)
    assert int96["rows"] == 1, int96

    # no string, no INT96: every bound from the footers, no Spark job (a double's too: Spark's
    # parquet-mr makes a NaN the max, and the reader drops such bounds)
    t2 = f"{s}.pq_footer_exact_numbers"
    number_columns = {"g": "int", "i": "bigint", "dec": "decimal(10,2)", "dt": "date", "d": "double"}
    new_table(spark, t2, "(g int, i bigint, dec decimal(10,2), dt date, d double) using parquet")
    spark.sql(f"insert into {t2} select /*+ REPARTITION(1) */ * from values "
              f"(1, 5, 1.25, date'2020-01-02', 2.5D), (1, null, 9.5, null, -1.0D), (1, 7, null, null, null) "
              f"as v(g, i, dec, dt, d)")
    numbers = {}
    assert jobs_of("sc_numbers_only", lambda: numbers.update(write_stats(spark, t2))) == []
    assert numbers["columns_scanned"] == [], numbers
    # the adversary: a NaN in a file, which a footer max that left it out would hide from `d > 3`
    spark.sql(f"insert into {t2} select /*+ REPARTITION(1) */ * from values "
              f"(2, 1, 1.00, date'2021-01-01', cast('NaN' as double)), (2, 2, 2.00, date'2021-01-02', 1.0D) "
              f"as v(g, i, dec, dt, d)")
    with_nan = write_stats(spark, t2)
    assert with_nan["columns_scanned"] == ["d"], with_nan
    act = actual(spark, t2, number_columns)
    files = check_bounds(describe(spark, t2), act, number_columns)
    for g, a in actual_by_group(act).items():
        for c in number_columns:
            assert_exact(files[g], a, c, number_columns)
    assert files[2]["cols"]["d"]["max"] == "NaN" and files[1]["cols"]["d"]["max"] == "2.5", files
    assert spark.sql(f"select g from {t2} where d > 3").collect()[0][0] == 2


@pytest.mark.parametrize("cut_by", [None, "session", "table"])
def test_own_write_takes_parquet_string_bounds_from_footers_its_settings_keep_whole(spark, s, cut_by):
    """own_write (clustered_table's new table): the writing session knows its parquet settings, so
    string bounds come from the footers unless the session or the table sets
    parquet.statistics.truncate.length, under which parquet-mr cuts them (the adversary: a cut max
    would be taken as exact, and data skipping would drop files whose rows match)."""
    import pyarrow.parquet as pq

    columns = {"g": "int", "s": "string", "p": "string"}
    t = f"{s}.pq_own_strings_{cut_by or 'whole'}"
    options = " options ('parquet.statistics.truncate.length' = '12')" if cut_by == "table" else ""
    new_table(spark, t, f"(g int, s string, p string) using parquet{options}")
    # 40 shared characters before the part that differs; p short, NULL in some rows
    rows = "select cast(id % 3 as int) as g, concat('customers/loyalty-program/account-number/', " \
           "lpad(cast(id * 7919 % 100000 as string), 6, '0')) as s, " \
           "case when id % 5 = 0 then null else cast(id % 17 as string) end as p from range(3000)"
    # the session's settings hold from the write through the statistics, as in a build
    with confs(spark, {"parquet.statistics.truncate.length": "12"} if cut_by == "session" else {}):
        spark.sql(f"insert into {t} select /*+ REPARTITION(3, g) */ * from ({rows})")
        act = actual(spark, t, columns)
        maxima = [pq.ParquetFile(path).metadata.row_group(0).column(1).statistics.max for path in act]
        assert any(len(m) < 46 for m in maxima) == (cut_by is not None), (cut_by, maxima)  # the writer cut them
        not_own = spark.sql(f"select * from write_file_stats('{t}', 'true', 'false')").collect()[0].asDict()
        assert not_own["columns_scanned"] == ["s", "p"], not_own
        own = spark.sql(f"select * from write_file_stats('{t}', 'true', 'true')").collect()[0].asDict()
        assert own["columns_scanned"] == (["s", "p"] if cut_by else []), (cut_by, own)
    desc = describe(spark, t)
    assert desc["fromSidecar"] == len(act) >= 2, desc
    files = check_bounds(desc, act, columns)
    for g, a in actual_by_group(act).items():
        for c in columns:
            assert_exact(files[g], a, c, columns)


def test_many_new_files_are_read_through_the_root_listing(spark, s):
    # more than 32 new files: the job reads the root, cut to the new files by a file-path filter
    t = f"{s}.pq_many"
    new_table(spark, t, "(x bigint, y string) using parquet")
    spark.sql(f"insert into {t} select /*+ REPARTITION(3) */ id, cast(id as string) from range(30)")
    first = write_stats(spark, t)
    spark.sql(f"insert into {t} select /*+ REPARTITION(40) */ id, concat('n', id) from range(1000, 1400)")
    result = write_stats(spark, t)
    assert result["files"] == first["files"] + 40 and result["files_scanned"] == 40
    desc = describe(spark, t)
    assert desc["fromSidecar"] == result["files"]
    columns = {"x": "bigint", "y": "string"}
    act = actual(spark, t, columns)
    check_bounds(desc, act, columns)
    for f in desc["files"]:
        for c in columns:
            assert_exact(f, act[local(f["path"])], c, columns)


def test_sidecar_of_an_orc_table_includes_timestamps(spark, s):
    t = f"{s}.orc_sidecar"
    build(spark, t, "orc")
    write_stats(spark, t)
    desc = describe(spark, t)
    assert desc["fromSidecar"] == len(FILES) + 1
    act = actual(spark, t)
    files = check_bounds(desc, act)
    by_g = actual_by_group(act)
    for c in ("ts", "ntz", "d", "f", "dt"):
        assert_exact(files[1], by_g[1], c)


def test_a_file_changed_behind_the_sidecars_back_is_read_again(spark, s):
    t = f"{s}.pq_changed"
    create(spark, t, "parquet")
    for g in (1, 3):
        insert(spark, t, FILES[g][2])
    write_stats(spark, t)
    act = actual(spark, t)
    path = {a["g"][0]: p for p, a in act.items()}  # local paths
    assert describe(spark, t)["fromSidecar"] == 2
    # same bytes, another modification time
    target = path[1]
    st = os.stat(target)
    os.utime(target, (st.st_atime, st.st_mtime + 5))
    desc = describe(spark, t)
    assert (desc["fromSidecar"], desc["fromFooter"]) == (1, 1)
    # other bytes under the same name: neither the sidecar nor the cached footer answers
    shutil.copyfile(path[3], target)
    drop_checksum(target)
    spark.sql(f"refresh table {t}")
    desc = describe(spark, t)
    assert (desc["fromSidecar"], desc["fromFooter"]) == (1, 1)
    act = actual(spark, t)
    files = check_bounds(desc, act)
    replaced = next(f for f in desc["files"] if local(f["path"]) == target)
    assert replaced["cols"]["g"]["min"] == 3 and replaced["rows"] == 2
    assert len(files) == 1  # both files now hold group 3


def test_corrupt_and_foreign_sidecar_content_is_ignored(spark, s):
    t = f"{s}.pq_corrupt"
    create(spark, t, "parquet")
    for g in (1, 2):
        insert(spark, t, FILES[g][2])
    generation = str(local(write_stats(spark, t)["sidecar"]))
    directory = os.path.dirname(generation)
    lines = open(generation, encoding="utf-8").read().splitlines()
    entry = json.loads(lines[0])
    lie = dict(entry, cols={"i": {"type": "int", "min": "999999", "max": "999999", "nulls": 0}})
    with open(generation, "a", encoding="utf-8") as out:
        out.write("{not json\n")
        out.write(json.dumps({"v": 1, "path": entry["path"]}) + "\n")
        out.write(json.dumps(dict(entry, cols={"i": {"type": "int", "min": "one"}})) + "\n")
    drop_checksum(generation)
    with open(os.path.join(directory, "stats-9999999999999-future.json"), "w") as out:
        out.write(json.dumps(dict(lie, v=2)) + "\n")  # a format this reader does not know
    with open(os.path.join(directory, ".tmp-stats-9999999999998-x.json"), "w") as out:
        out.write(json.dumps(lie) + "\n")  # not published
    with open(os.path.join(directory, "stats-1-garbage.json"), "wb") as out:
        out.write(b"\x00\xff garbage \n\n}{")
    # a driver that starts now (this one answers the same files from its memo of the last lookup,
    # which took every file from the sidecar, without listing it again)
    store(spark).clearCaches()
    desc = describe(spark, t)
    assert (desc["fromSidecar"], desc["unknown"]) == (2, 0)
    check_bounds(desc, actual(spark, t))  # the lie (i = 999999) would fail this

    # a sidecar that is nothing but garbage: footers answer
    for p in glob.glob(os.path.join(directory, "stats-*.json")):
        if not p.endswith("future.json"):
            with open(p, "w") as out:
                out.write("[1, 2, 3]\n{}\n")
            drop_checksum(p)
    store(spark).clearCaches()
    desc = describe(spark, t)
    assert (desc["fromSidecar"], desc["fromFooter"]) == (0, 2)
    check_bounds(desc, actual(spark, t))

    # the writer replaces what it read and leaves what it does not understand
    result = write_stats(spark, t)
    assert result["files_scanned"] == 2
    names = sidecar_files(spark, t)
    assert "stats-9999999999999-future.json" in names and "stats-1-garbage.json" not in names
    assert ".tmp-stats-9999999999998-x.json" in names  # another writer's, still young
    assert sum(1 for p in names if p.startswith("stats-")) == 2
    assert describe(spark, t)["fromSidecar"] == 2


def test_partitions_odd_names_metadata_column_and_empty_table(spark, s):
    t = f"{s}.pq_parts"
    new_table(spark, t, "(x int, `_metadata` int, k string) using parquet partitioned by (k)")
    spark.sql(f"insert into {t} values (1, 10, 'a b%c'), (2, 20, 'x/y'), (3, 30, 'ü'), (4, 40, null), (5, 50, 'a b%c')")
    result = write_stats(spark, t)
    assert result["files"] == result["files_scanned"] >= 4
    desc = describe(spark, t)
    assert desc["fromSidecar"] == result["files"]
    columns = {"x": "int", "_metadata": "int"}
    # the data column named _metadata, read through the table (Spark's own column is hidden then)
    act = {}
    for r in spark.sql(f"select input_file_name(), count(*), min(x), max(x), count(*) - count(x), "
                       f"min(`_metadata`), max(`_metadata`), count(*) - count(`_metadata`) from {t} group by 1").collect():
        act[local(r[0])] = {"rows": r[1], "x": tuple(r[2:5]), "_metadata": tuple(r[5:8])}
    files = check_bounds(desc, act, columns)
    for f in desc["files"]:
        for c in columns:
            assert_exact(f, act[local(f["path"])], c, columns)
    assert len(files) == len(desc["files"])

    empty = f"{s}.pq_empty"
    new_table(spark, empty, "(x int) using parquet")
    assert (write_stats(spark, empty)["files"], write_stats(spark, empty)["sidecar"]) == (0, None)


def test_stats_for_through_the_scala_api(spark, s):
    t = f"{s}.pq_api"
    create(spark, t, "parquet")
    insert(spark, t, FILES[1][2])
    insert(spark, t, FILES[4][2])
    write_stats(spark, t)
    insert(spark, t, FILES[7][2])
    jvm = spark._jvm
    conv = jvm.scala.jdk.javaapi.CollectionConverters
    hadoop_conf = spark._jsparkSession.sessionState().newHadoopConf()
    root = jvm.org.apache.hadoop.fs.Path(location(spark, t))
    fs = root.getFileSystem(hadoop_conf)
    statuses = [st for st in fs.listStatus(root) if not st.getPath().getName().startswith(("_", "."))]
    files = jvm.java.util.ArrayList()
    for st in statuses:
        files.add(st)
    roots = jvm.java.util.ArrayList()
    roots.add(root)
    schema = spark._jsparkSession.table(t).schema()
    lookup = store(spark).statsFor(spark._jsparkSession, conv.asScala(roots).toSeq(), "parquet", schema,
                                   conv.asScala(files).toSeq())
    assert (lookup.fromSidecar(), lookup.fromFooter(), lookup.unknown()) == (2, 1, 0)
    assert lookup.stats().size() == 3
    rows = sorted(lookup.stats().apply(k).rowCount().get() for k in range(3))
    assert rows == [2, 3, 4]


def test_write_file_stats_argument_errors(spark, s):
    csv = f"{s}.csv_table"
    new_table(spark, csv, "(x int) using csv")
    with pytest.raises(Exception, match=r"write_file_stats: .*csv_table is not a parquet or orc table"):
        write_stats(spark, csv)
    spark.sql(f"create or replace view {s}.a_view as select 1 as x")
    with pytest.raises(Exception, match=r"a_view is not a parquet or orc table"):
        write_stats(spark, f"{s}.a_view")
    with pytest.raises(Exception, match=r"rebuild must be true or false"):
        write_stats(spark, csv, "'maybe'")
    with pytest.raises(Exception, match=r"WRONG_NUM_ARGS|write_file_stats"):
        spark.sql("select * from write_file_stats()").collect()


# --- file_stats from the metadata (table_file_stats) ------------------------------------------------
# What file_stats runs on a plain table with the jar loaded: per file the sidecar's or the footer's
# exact statistics, the rows of only the other files. The reference is the GROUP BY file_stats runs
# without the jar, compared value for value (types, -0.0, NULLs, the row of every file with rows).

MEASURED = {"i": "int", "l": "bigint", "dt": "date", "ts": "timestamp", "dec": "decimal(15,2)", "d": "double",
            "s": "string"}
LONG_PREFIX = "p" * 5000  # past parquet's 4096-byte statistics limit and orc's 1024-character one
TRUNCATED_PREFIX = "q" * 30  # past the truncation set below
# What a parquet footer written by Spark holds exactly: a double without NaN too (its parquet-mr
# makes a NaN the max, and the reader drops such bounds), not a string (parquet-mr may cut it
# without saying so)
FOOTER_EXACT = ["i", "l", "dt", "ts", "dec", "d"]


def measured_row(i="null", l="null", dt="null", ts="null", dec="null", d="null", s="null"):
    values = [i, l, dt, ts, dec, d, s]
    return "(" + ", ".join(f"cast({v} as {t})" for v, t in zip(values, MEASURED.values())) + ")"


# One file each: (name, parquet timestamp type, hadoop settings of the write, rows)
MEASURED_FILES = [
    ("ordinary", "TIMESTAMP_MICROS", {}, [
        measured_row(1, 10000000000, "date'2020-01-02'", "timestamp'2020-01-02 03:04:05.123456'", "12.34", "1.5D",
                     "'abc'"),
        measured_row(-5, "null", "date'1969-12-31'", "null", "-0.01", "-0.0D", "null"),
        measured_row("null", -3, "null", "timestamp'1969-12-31 23:59:59.999999'", "null", "null", "'é日本'")]),
    ("long strings", "TIMESTAMP_MICROS", {}, [
        measured_row(2, 2, "date'2021-01-01'", "timestamp'2021-01-01 00:00:00'", "1.00", "2.0D",
                     f"concat('{LONG_PREFIX}', 'b')"),
        measured_row(3, 3, "date'2021-01-02'", "timestamp'2021-01-02 00:00:00'", "2.00", "3.0D",
                     f"concat('{LONG_PREFIX}', 'a')")]),
    # parquet-mr cuts the bounds without marking them inexact on some lines: a prefix for min, the
    # prefix rounded up for max
    ("truncated strings", "TIMESTAMP_MICROS", {"parquet.statistics.truncate.length": "16"}, [
        measured_row(4, 4, "date'2022-01-01'", "timestamp'2022-01-01 00:00:00'", "3.00", "4.0D",
                     f"'{TRUNCATED_PREFIX}x'"),
        measured_row(5, 5, "date'2022-01-02'", "timestamp'2022-01-02 00:00:00'", "4.00", "5.0D",
                     f"'{TRUNCATED_PREFIX}y'")]),
    ("all null", "TIMESTAMP_MICROS", {}, [
        measured_row(6, 6, "date'2023-01-01'", "timestamp'2023-01-01 00:00:00'"),
        measured_row(7, 7, "date'2023-01-02'", "timestamp'2023-01-02 00:00:00'")]),
    # INT96: Spark's default, written without statistics
    ("int96", "INT96", {}, [
        measured_row(8, 8, "date'2024-01-01'", "timestamp'2024-01-01 00:00:00'", "5.00", "6.0D", "'z'")]),
]


def measured_table(spark, table, fmt, files=MEASURED_FILES):
    """One file per entry of `files`, and one with zero rows."""
    new_table(spark, table, "(" + ", ".join(f"{c} {t}" for c, t in MEASURED.items()) + f") using {fmt}")
    for _, ts_type, settings, rows in files:
        with confs(spark, {"spark.sql.parquet.outputTimestampType": ts_type, **settings}):
            spark.sql(f"insert into {table} select /*+ REPARTITION(1) */ * from values {', '.join(rows)} "
                      f"as v({', '.join(MEASURED)})")
    spark.sql(f"insert into {table} select * from {table} where false")


def row_scan_sql(table, columns):
    """file_stats's SQL without the jar (macros/stats/file_stats.sql)."""
    aggregates = "".join(f", min(`{c}`) as `{c}__min`, max(`{c}`) as `{c}__max`, "
                         f"count(*) - count(`{c}`) as `{c}__null_count`" for c in columns)
    return (f"select _metadata.file_path as file_path, count(*) as row_count{aggregates} "
            f"from {table} group by _metadata.file_path")


def measured_sql(table, columns):
    return f"select * from table_file_stats('{table}', array({', '.join(repr(c) for c in columns)}))"


def exact_rows(df):
    """The rows with their schema, floats by their bits (-0.0 is not 0.0, NaN is NaN), by file."""
    def value(v):
        return ("double", struct.pack(">d", v)) if isinstance(v, float) else v
    rows = sorted((tuple(value(v) for v in r) for r in df.collect()), key=lambda r: r[0])
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields], rows


def assert_measured_is_the_row_scan(spark, table, columns):
    measured = exact_rows(spark.sql(measured_sql(table, columns)))
    scanned = exact_rows(spark.sql(row_scan_sql(table, columns)))
    assert measured == scanned
    return measured


def data_files(table_location):
    return sorted(p for p in glob.glob(os.path.join(table_location, "**", "*"), recursive=True)
                  if os.path.isfile(p) and not os.path.basename(p).startswith((".", "_")))


def zero_parquet_data(path):
    """Zero every byte between the leading magic and the footer: the footer (and so the statistics)
    stays readable, any read of a row fails on its page header. Size and mtime are kept (the file's
    cache keys, and the sidecar's)."""
    st = os.stat(path)
    with open(path, "r+b") as fh:
        fh.seek(-8, os.SEEK_END)
        footer_length = int.from_bytes(fh.read(4), "little")
        data_end = st.st_size - 8 - footer_length
        fh.seek(4)
        fh.write(b"\0" * (data_end - 4))
    drop_checksum(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def jobs_in(spark, group, call):
    """The Spark jobs `call` started (none: no row of any file was read)."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        result = call()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return list(sc.statusTracker().getJobIdsForGroup(group)), result


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_file_stats_from_metadata_equal_the_row_scan(spark, s, dbt, fmt):
    t = f"{s}.measure_{fmt}"
    measured_table(spark, t, fmt)
    # every column, then without the double (exact in a footer only when no NaN made it drop its bounds)
    assert_measured_is_the_row_scan(spark, t, list(MEASURED))
    _, rows = assert_measured_is_the_row_scan(spark, t, [c for c in MEASURED if c != "d"])
    assert len(rows) == len(MEASURED_FILES)  # the file with zero rows has none, as in the row scan
    assert_measured_is_the_row_scan(spark, t, ["s", "i"])  # any order, any subset
    # from the sidecar (Spark's own min / max, doubles and INT96 timestamps too)
    write_stats(spark, t)
    assert_measured_is_the_row_scan(spark, t, list(MEASURED))
    # file_stats is this call on a plain table when the jar is loaded
    _, text = dbt_output(dbt, ["run-operation", "metrics_file_stats_sql", "--args",
                               json.dumps({"schema": s, "tables": [f"measure_{fmt}"], "columns": ["i", "s"]})],
                         WORK / "pytest" / "dbt_target_file_stats_store")
    sql = json.loads(next(line for line in text.splitlines()
                          if line.startswith("metrics_file_stats_sql: ")).split(": ", 1)[1])[f"measure_{fmt}"]
    assert "table_file_stats(" in sql and "group by" not in sql.lower(), sql
    assert exact_rows(spark.sql(sql)) == exact_rows(spark.sql(row_scan_sql(t, ["i", "s"])))


def test_measuring_a_table_with_exact_footers_reads_no_rows(spark, s):
    """The data of every file zeroed, footers intact: reading any row fails (the row scan shows it),
    the measure returns what the row scan returned before, and starts no Spark job."""
    columns = FOOTER_EXACT
    files = [f for f in MEASURED_FILES if f[0] in ("ordinary", "all null")]
    t = f"{s}.measure_no_rows"
    measured_table(spark, t, "parquet", files)
    before = exact_rows(spark.sql(row_scan_sql(t, columns)))
    for path in data_files(location(spark, t)):
        zero_parquet_data(path)
    spark.sql(f"refresh table {t}")
    with pytest.raises(Exception):
        spark.sql(row_scan_sql(t, columns)).collect()
    jobs, measured = jobs_in(spark, "sc_measure_no_rows", lambda: exact_rows(spark.sql(measured_sql(t, columns))))
    assert measured == before
    assert jobs == []

    # the sidecar, written before the data was lost: the double and INT96 timestamps too (Spark's own
    # min / max); strings there are the footer's unless write_file_stats read them, so not asked
    t = f"{s}.measure_no_rows_sidecar"
    columns = [c for c in MEASURED if c != "s"]
    measured_table(spark, t, "parquet", MEASURED_FILES)
    before = exact_rows(spark.sql(row_scan_sql(t, columns)))
    write_stats(spark, t)
    for path in data_files(location(spark, t)):
        zero_parquet_data(path)
    spark.sql(f"refresh table {t}")
    jobs, measured = jobs_in(spark, "sc_measure_no_rows_sidecar", lambda: exact_rows(spark.sql(measured_sql(t, columns))))
    assert measured == before
    assert jobs == []


def test_only_a_file_without_usable_statistics_is_read(spark, s):
    """An INT96 file (no timestamp statistics) beside files with exact footers whose data is zeroed:
    the measure reads the INT96 file's rows (a job) and no row of the others (they would fail it)."""
    t = f"{s}.measure_one_file_read"
    files = [f for f in MEASURED_FILES if f[0] in ("ordinary", "all null", "int96")]
    measured_table(spark, t, "parquet", files)
    columns = FOOTER_EXACT
    before = exact_rows(spark.sql(row_scan_sql(t, columns)))
    int96 = [r for r in before[1] if r[1] == 1]
    assert len(int96) == 1
    for path in data_files(location(spark, t)):
        if local(int96[0][0]) != local("file:" + path):
            zero_parquet_data(path)
    spark.sql(f"refresh table {t}")
    jobs, measured = jobs_in(spark, "sc_measure_one_file", lambda: exact_rows(spark.sql(measured_sql(t, columns))))
    assert measured == before
    assert jobs != []


def test_table_file_stats_argument_errors(spark, s):
    t = f"{s}.measure_errors"
    new_table(spark, t, "(x int) using parquet")
    with pytest.raises(Exception, match="has no column nope"):
        spark.sql(measured_sql(t, ["x", "nope"])).collect()
    assert spark.sql(measured_sql(t, ["X"])).columns == ["file_path", "row_count", "X__min", "X__max", "X__null_count"]
    assert spark.sql(measured_sql(t, ["x"])).collect() == []
