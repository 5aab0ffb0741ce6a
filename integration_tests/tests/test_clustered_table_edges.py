"""`clustered_table` on awkward data, bad config and injected failures."""
from __future__ import annotations

import contextlib
import os

import pytest

from harness.plans import skipping_summary
from harness.storage import database_location, database_on, names
from harness.storage import location as storage_location
from spark_clustering_dev.layout import fingerprint, file_ranges


def build(dbt, source, alias, expect_success=True, extra_vars=None, schema=None, **case):
    vars_ = {"case_source": source, "case_alias": alias, **{f"case_{k}": v for k, v in case.items()},
             **(extra_vars or {})}
    kw = {"schema": schema} if schema else {}
    return dbt(["run", "--select", "cluster_case"], vars=vars_, expect_success=expect_success, **kw)


# Steps of the jar's swap_staging_table (one call with the extension loaded, as here): its test hook
# is the Spark conf spark.sparkclustering.test.pauseAt, not the macros' var.
SWAP_STEPS = {"after_backup", "after_promote"}


@contextlib.contextmanager
def failing_at(spark, point):
    """The test hook that makes clustered_table raise at `point` (docs/concurrency.md, "Test hooks"):
    yields the dbt vars of the build that should fail there."""
    if point not in SWAP_STEPS:
        yield {"spark_clustering_test_hooks": {f"clustered_table.{point}": "fail"}}
        return
    spark.conf.set("spark.sparkclustering.test.pauseAt", f"clustered_table.{point}:fail")
    try:
        yield {}
    finally:
        spark.conf.unset("spark.sparkclustering.test.pauseAt")


def make_table(spark, name, sql):
    spark.sql(f"drop table if exists {name}")
    spark.sql(f"create table {name} using parquet as {sql}")
    return name


@pytest.fixture(scope="module")
def s(spark, dbt_schema):
    spark.sql(f"create database if not exists {dbt_schema}")
    return dbt_schema


def assert_same_rows(spark, a, b):
    assert fingerprint(spark, a) == fingerprint(spark, b)


def test_skewed_column_with_a_heavy_hitter(spark, dbt, s):
    # 40 % of the rows share one value of `a`. Its repeated boundaries leave it a slab of a's id
    # space as wide as its share, so the curve spreads it over many files, each narrow in `b`.
    src = make_table(spark, f"{s}.skewed", """select id,
        case when id % 5 < 2 then 500 else cast(abs(xxhash64(id)) % 1000 as int) end as a,
        cast(abs(xxhash64(id, 9)) % 100000 as int) as b from range(50000)""")
    build(dbt, src, "skewed_h", num_files=20, cluster_by=["a", "b"])
    assert_same_rows(spark, src, f"{s}.skewed_h")
    ranges = file_ranges(spark, f"{s}.skewed_h", ["a", "b"])
    assert len(ranges) == 20
    # The heavy hitter's rows differ in b, so their keys differ and the file cuts spread them: no
    # file gets its 40 %.
    sizes = [f["n"] for f in ranges]
    assert max(sizes) <= 1.3 * (sum(sizes) / len(sizes)), sizes
    hot = [f for f in ranges if f["a__lo"] == 500]
    assert len(hot) >= 0.3 * len(ranges), ranges
    hot_b_width = sum((f["b__hi"] - f["b__lo"]) / 99999 for f in hot) / len(hot)
    assert hot_b_width < 0.25, hot
    # All files stay narrow: mean share of each column's range per file, summed, far below the ~2.0
    # of files that span everything.
    width = sum((f["a__hi"] - f["a__lo"]) / 999 + (f["b__hi"] - f["b__lo"]) / 99999 for f in ranges) / len(ranges)
    assert width < 0.8, width


def test_strings_sharing_a_long_prefix_keep_full_order(spark, dbt, s):
    # Iceberg truncates string bounds to 8 bytes; here the distinguishing part starts at char 17.
    src = make_table(spark, f"{s}.prefixed", """select id,
        concat('sensor/region-01/', lpad(cast(abs(xxhash64(id)) % 100000 as string), 6, '0')) as a,
        cast(abs(xxhash64(id, 5)) % 1000 as int) as b from range(40000)""")
    build(dbt, src, "prefixed_h", num_files=16, cluster_by=["a", "b"])
    assert_same_rows(spark, src, f"{s}.prefixed_h")
    ranges = file_ranges(spark, f"{s}.prefixed_h", ["a"])
    # Files split the suffix space: none covers more than half of it.
    spans = [int(f["a__hi"][-6:]) - int(f["a__lo"][-6:]) for f in ranges]
    assert max(spans) < 50000, spans


def test_null_heavy_column_gets_its_own_range(spark, dbt, s):
    src = make_table(spark, f"{s}.nullish", """select id,
        case when id % 10 < 7 then null else cast(abs(xxhash64(id)) % 1000 as int) end as a,
        cast(abs(xxhash64(id, 3)) % 1000 as int) as b from range(30000)""")
    build(dbt, src, "nullish_h", num_files=8, cluster_by=["a", "b"])
    assert_same_rows(spark, src, f"{s}.nullish_h")
    per_file = spark.sql(f"""select _metadata.file_path, count(*) as n, count(a) as non_null
                             from {s}.nullish_h group by 1""").collect()
    # NULLs are not mixed into the smallest values: most files are all-NULL or all-non-NULL.
    pure = [r for r in per_file if r.non_null in (0, r.n)]
    assert len(pure) >= len(per_file) - 2, per_file


@pytest.mark.parametrize("rows", [0, 1])
def test_empty_and_single_row_sources(spark, dbt, s, rows):
    src = make_table(spark, f"{s}.tiny{rows}", f"select id, cast(id as int) as a, cast(id * 2 as double) as b from range({rows})")
    build(dbt, src, f"tiny{rows}_h", cluster_by=["a", "b"])
    assert spark.table(f"{s}.tiny{rows}_h").count() == rows
    assert_same_rows(spark, src, f"{s}.tiny{rows}_h")


def test_all_types_and_all_null_and_constant_columns(spark, dbt, s):
    src = make_table(spark, f"{s}.typed", """select id,
        cast(id % 3 = 0 as boolean) as flag, date_add(date'2024-01-01', cast(id % 400 as int)) as d,
        timestamp_seconds(1700000000 + id * 37) as t, cast(id / 7 as decimal(12, 3)) as dec,
        case when id % 50 = 0 then cast('NaN' as double) else cast(id as double) / 3 end as x,
        cast(null as string) as always_null, 'same' as constant
        from range(20000)""")
    build(dbt, src, "typed_h", num_files=6,
          cluster_by=["flag", "d", "t", "dec", "x", "always_null", "constant"])
    assert_same_rows(spark, src, f"{s}.typed_h")
    assert len(file_ranges(spark, f"{s}.typed_h", ["d"])) == 6


def test_integer_boundaries_at_the_limits_of_their_types(spark, dbt, s):
    # Integer boundaries are typed literals (-128Y, -32768S, -2147483648, -9223372036854775808L).
    # A tenth of the rows sit at each type's minimum and a tenth at its maximum, so those values
    # are boundaries. The four columns rise together with id, so each column's range id rises
    # with id and the zorder key over their ids does too: each file must hold one id interval, and
    # its values of every column must come after the previous file's. A literal read as another
    # value moves its column's ids against the others' and breaks that order.
    n = 6000
    limits = {"t8": ("tinyint", -128, 127), "t16": ("smallint", -32768, 32767),
              "t32": ("int", -2147483648, 2147483647), "t64": ("bigint", -9223372036854775808, 9223372036854775807)}
    cols = ", ".join(
        f"case when id < {n // 10} then cast({lo} as {t}) when id >= {n - n // 10} then cast({hi} as {t}) "
        f"else cast(cast({lo} as decimal(20, 0)) + 1 + (id - {n // 10}) * "
        f"floor((cast({hi} as decimal(20, 0)) - {lo} - 2) / {n - n // 5}) as {t}) end as {c}"
        for c, (t, lo, hi) in limits.items())
    src = make_table(spark, f"{s}.int_limits", f"select id, {cols} from range({n})")
    build(dbt, src, "int_limits_z", num_files=6, cluster_by=list(limits), method="zorder")
    assert_same_rows(spark, src, f"{s}.int_limits_z")
    ranges = sorted(file_ranges(spark, f"{s}.int_limits_z", ["id", *limits]), key=lambda f: f["id__lo"])
    assert len(ranges) == 6
    for before, after in zip(ranges, ranges[1:]):
        for c in ["id", *limits]:
            assert before[f"{c}__hi"] <= after[f"{c}__lo"], (c, before, after)
    assert ranges[0]["t64__lo"] == -9223372036854775808 and ranges[-1]["t8__hi"] == 127


def test_target_file_bytes_uses_the_measured_bytes_per_row(spark, dbt, s):
    src = make_table(spark, f"{s}.sized", """select id, cast(abs(xxhash64(id)) % 100000 as int) as a,
        cast(abs(xxhash64(id, 2)) % 100000 as int) as b, repeat(cast(id % 97 as string), 5) as pad from range(60000)""")
    build(dbt, src, "sized_h", cluster_by=["a", "b"])  # first build: rows target only -> 1 file
    props = {r.key: r.value for r in spark.sql(f"show tblproperties {s}.sized_h").collect()}
    files = spark.sql(f"select distinct _metadata.file_path, _metadata.file_size from {s}.sized_h").collect()
    assert len(files) == 1
    assert float(props["spark_clustering.bytes_per_row"]) == pytest.approx(files[0].file_size / 60000, rel=0.01)
    target = files[0].file_size // 6
    build(dbt, src, "sized_h", cluster_by=["a", "b"], file_bytes=int(target))
    sizes = [r.file_size for r in spark.sql(f"select distinct _metadata.file_path, _metadata.file_size from {s}.sized_h").collect()]
    # ceil(1 file / (1/6)) = 6 files; smaller files compress a little worse, so allow 25 % over target.
    assert len(sizes) == 6, sizes
    assert max(sizes) <= 1.25 * target and min(sizes) >= 0.5 * target, (sizes, target)
    assert_same_rows(spark, src, f"{s}.sized_h")


def test_location_root_builds_beside_the_live_table_and_swaps(spark, dbt, s, tmp_path):
    root = str(tmp_path / "external")
    v1 = make_table(spark, f"{s}.loc_v1", "select id, cast(id % 50 as int) as a, cast(id % 31 as int) as b from range(2000)")
    v2 = make_table(spark, f"{s}.loc_v2", "select id, cast(id % 50 as int) as a, cast(id % 31 as int) as b from range(3000)")
    locations = []
    for src in (v1, v2):
        build(dbt, src, "located", num_files=2, location_root=root)
        assert_same_rows(spark, src, f"{s}.located")
        detail = {r.col_name: r.data_type for r in spark.sql(f"describe table extended {s}.located").collect()}
        assert detail["Type"] == "EXTERNAL"
        locations.append(detail["Location"])
    # Each build writes a directory of its own under location_root, so the live table's files are
    # never overwritten while the new version is built.
    assert all(loc.startswith("file:" + root + "/located__sc_") for loc in locations), locations
    assert locations[0] != locations[1]
    # ... and the previous version's directory goes with its table: exactly one data directory
    assert sorted(p.name for p in (tmp_path / "external").iterdir()) == [locations[1].rsplit("/", 1)[1]]


def test_config_errors_name_model_key_and_fix(dbt, s, spark):
    src = make_table(spark, f"{s}.cfg_src", "select id, cast(id as int) as a, cast(id as int) as b from range(10)")
    cases = [
        ({"method": "hilbrt"}, "config 'cluster_method' = hilbrt", "use one of: hilbert, zorder, linear"),
        ({"cluster_by": []}, "config 'cluster_by'", "set it to a column or a list of columns"),
        ({"cluster_by": ["a", "nope"]}, "column 'nope' is not returned by the model", "its columns are: id, a, b"),
        ({"ranges": 1}, "config 'cluster_ranges' = 1", "whole number from 2 to 65535"),
        ({"format": "hudi"}, "config 'file_format' = hudi", "Hudi tables are clustered by Hudi's own clustering service"),
        ({"format": "csv"}, "config 'file_format' = csv", "use one of: parquet, orc, delta, iceberg"),
        ({"cluster_by": ["a", "A"]}, "config 'cluster_by'", "list each column once"),
    ]
    for case, *expected in cases:
        run = build(dbt, src, "cfg_bad", expect_success=False, **case)
        text = "\n".join(run.messages)
        assert "model 'cluster_case'" in text, text
        for fragment in expected:
            assert fragment in text, (case, text)
    assert not spark.catalog.tableExists(f"{s}.cfg_bad")


@pytest.mark.parametrize("mode, column_a, where, caught", [
    # rows dropped at random: each evaluation of the query has another count
    ("count", "cast(id % 100 as int)", "where rand() < 0.5", True),
    # same count, other values: only the checksum sees it (what `count` does not promise)
    ("count", "cast(rand() * 100 as int)", "", False),
    ("checksum", "cast(rand() * 100 as int)", "", True),
    (False, "cast(id % 100 as int)", "where rand() < 0.5", False),
])
def test_validation_catches_what_its_mode_promises(spark, dbt, s, mode, column_a, where, caught):
    """A nondeterministic model is the adversary: the sampling pass and the write read different
    rows. `count` stops a build whose copy has another number of rows, `checksum` also one whose
    values differ; either leaves the previous table as it was."""
    alias = f"validate_{str(mode).lower()}_{'rows' if where else 'values'}"
    good = make_table(spark, f"{s}.{alias}_good", "select id, cast(id % 100 as int) as a, cast(id % 77 as int) as b from range(20000)")
    spark.sql(f"create or replace view {s}.{alias}_bad as "
              f"select id, {column_a} as a, cast(id % 77 as int) as b from {good} {where}")
    build(dbt, good, alias, num_files=4, validate=mode)
    run = build(dbt, f"{s}.{alias}_bad", alias, num_files=4, validate=mode, expect_success=not caught)
    if caught:
        assert "the clustered copy does not match the model query" in "\n".join(run.messages), run.messages
        assert_same_rows(spark, good, f"{s}.{alias}")
    else:
        assert spark.table(f"{s}.{alias}").count() > 0
    tables = {r.tableName for r in spark.sql(f"show tables in {s}").collect()}
    assert not {t for t in tables if t.startswith(alias + "__sc_")}, tables


@pytest.mark.parametrize("storage,swap,point", [
    ("file", "rename", "after_staging_write"), ("file", "rename", "after_backup"), ("file", "rename", "after_promote"),
    ("file", "location", "after_backup"), ("file", "location", "after_promote"),
    # in a bucket the build location is the default (cluster_swap auto)
    ("s3a", "auto", "after_backup"), ("s3a", "auto", "after_promote")])
def test_failure_mid_build_leaves_readable_data(spark, dbt, s, s3, storage, swap, point):
    """Old rows stay readable at every failure point; the next run finishes or rolls back cleanly.
    cluster_swap 'location' (a build location): a rebuild of the same columns points the table at
    its new files in one update (after_promote: right after it), one that adds a column renames
    the old table to the backup name first (after_backup)."""
    schema = database_on(spark, s3, s, storage)
    alias = f"crash_{swap}_{point}"
    extra = ", cast(id % 3 as int) as c" if swap != "rename" and point == "after_backup" else ""
    v1 = make_table(spark, f"{schema}.{alias}_v1", "select id, cast(id % 100 as int) as a, cast(id % 77 as int) as b from range(5000)")
    v2 = make_table(spark, f"{schema}.{alias}_v2", f"select id, cast(id % 100 as int) as a, cast(id % 77 as int) as b{extra} from range(7000)")
    build(dbt, v1, alias, num_files=4, swap=swap, schema=schema)
    with failing_at(spark, point) as hook_vars:
        run = build(dbt, v2, alias, num_files=4, swap=swap, expect_success=False, extra_vars=hook_vars, schema=schema)
    assert f"injected failure at clustered_table.{point}" in "\n".join(run.messages)
    tables = {r.tableName for r in spark.sql(f"show tables in {schema}").collect()}
    if point == "after_backup":
        # The crash hit between the two renames: the old data is intact under the backup name.
        assert f"{alias}__sc_backup" in tables and alias not in tables
        assert_same_rows(spark, v1, f"{schema}.{alias}__sc_backup")
    elif point == "after_promote":
        # The new table is in place (it was validated before the swap started).
        assert_same_rows(spark, v2, f"{schema}.{alias}")
    else:
        assert_same_rows(spark, v1, f"{schema}.{alias}")
    # The next run recovers whatever was left and builds v2; no sidecar table remains.
    build(dbt, v2, alias, num_files=4, swap=swap, schema=schema)
    assert_same_rows(spark, v2, f"{schema}.{alias}")
    tables = {r.tableName for r in spark.sql(f"show tables in {schema}").collect()}
    assert not {t for t in tables if t.startswith(alias + "__sc_")}, tables
    # one directory is left, the live table's: the locations it replaced are gone
    live = table_location(spark, f"{schema}.{alias}")
    assert table_dirs(spark, schema, alias) == [live.rsplit("/", 1)[1]], live
    if storage == "s3a":
        assert f"/{alias}__sc_build_" in live, live  # written once at its build location, not renamed


def table_location(spark, table):
    return storage_location(spark, table)


def table_dirs(spark, s, alias):
    """The directories of `alias` in the database's directory: its own and its builds'."""
    return [d for d in names(spark, database_location(spark, s)) if d == alias or d.startswith(alias + "__sc_")]


def test_a_rebuild_with_cluster_swap_location_points_the_table_at_its_new_files(spark, dbt, s):
    """cluster_swap 'location' (the default on an object store): every build writes its files
    once, into a directory of their own beside the table, and the swap points the table there in
    one metastore update, so no file moves. The table becomes external (Spark renames a managed
    table by pointing it at the new name's default directory); its previous directory is deleted,
    a rebuild that adds a column takes the rename path, and a user's rename keeps the rows."""
    alias = "switched"
    v1 = make_table(spark, f"{s}.switched_v1", "select id, cast(id % 10 as int) as a, cast(id % 7 as int) as b from range(3000)")
    v2 = make_table(spark, f"{s}.switched_v2", "select id, cast(id % 10 as int) as a, cast(id % 7 as int) as b from range(4000)")
    v3 = make_table(spark, f"{s}.switched_v3", "select id, cast(id % 10 as int) as a, cast(id % 7 as int) as b, id % 2 as c from range(5000)")
    build(dbt, v1, f"{alias}_managed", num_files=3)
    info = {r.col_name: r.data_type for r in spark.sql(f"describe table extended {s}.{alias}_managed").collect()}
    assert info["Type"] == "MANAGED" and info["Location"].endswith(f"/{alias}_managed"), info
    spark.sql(f"alter table {s}.{alias}_managed rename to {s}.{alias}")
    # what a build that died before registering its staging table leaves: deleted by the next swap
    [row] = [r for r in spark.sql(f"describe schema extended {s}").collect() if r.info_name == "Location"]
    orphan = os.path.join(row.info_value.removeprefix("file:"), f"{alias}__sc_build_deadbeef")
    os.makedirs(orphan)
    open(os.path.join(orphan, "part-00000.parquet"), "wb").close()
    locations = []
    for source in (v1, v2, v3):
        build(dbt, source, alias, num_files=3, swap="location")
        assert_same_rows(spark, source, f"{s}.{alias}")
        info = {r.col_name: r.data_type for r in spark.sql(f"describe table extended {s}.{alias}").collect()}
        location = info["Location"].rstrip("/")
        assert f"/{alias}__sc_build_" in location and info["Type"] == "EXTERNAL", info
        assert table_dirs(spark, s, alias) == [location.rsplit("/", 1)[1]]
        locations.append(location)
    assert len(set(locations)) == 3, locations
    spark.sql(f"alter table {s}.{alias} rename to {s}.{alias}_renamed")
    assert_same_rows(spark, v3, f"{s}.{alias}_renamed")


@pytest.mark.parametrize("swap, location_root", [("location", False), ("rename", False), ("rename", True)])
def test_a_table_over_the_same_directory_in_another_catalog_after_a_rebuild(spark, dbt, s, tmp_path, swap,
                                                                            location_root):
    """A second reader with a catalog of its own (another Spark's metastore) registers the table
    over its directory; here a table of another name stands for it. A build at a new location
    (`cluster_swap: location`, the default on an object store; every build of a `location_root`
    model) deletes the directory that table points at: its cached listing fails on a deleted file,
    and once refreshed it reads no rows, with no error, until it is pointed at the new location. A
    `rename` swap leaves the table's directory where it was: REFRESH TABLE is enough
    (docs/concurrency.md, "Readers with a catalog of their own")."""
    alias = f"reread_{swap}" + ("_root" if location_root else "")
    v1 = make_table(spark, f"{s}.{alias}_v1", "select id, cast(id % 10 as int) as a, cast(id % 7 as int) as b from range(3000)")
    v2 = make_table(spark, f"{s}.{alias}_v2", "select id, cast(id % 10 as int) as a, cast(id % 7 as int) as b from range(4000)")
    case = {"num_files": 3, "swap": swap, **({"location_root": str(tmp_path / "root")} if location_root else {})}
    build(dbt, v1, alias, **case)
    first = table_location(spark, f"{s}.{alias}")
    reader = f"{s}.{alias}_reader"
    spark.sql(f"drop table if exists {reader}")
    spark.sql(f"create table {reader} using parquet location '{first}'")
    assert_same_rows(spark, v1, reader)
    build(dbt, v2, alias, **case)
    second = table_location(spark, f"{s}.{alias}")
    if swap == "location" or location_root:
        assert second != first and not names(spark, first), (first, second)
        # its listing, cached before the rebuild, names deleted files
        with pytest.raises(Exception) as err:
            spark.sql(f"select count(*) from {reader}").collect()
        assert "FileNotFoundException" in str(err.value) or "FILE_NOT_EXIST" in str(err.value), str(err.value)[:2000]
        spark.sql(f"refresh table {reader}")
        assert spark.sql(f"select count(*) from {reader}").first()[0] == 0  # a missing directory reads as empty
        spark.sql(f"alter table {reader} set location '{second}'")
    else:
        assert second == first
        spark.sql(f"refresh table {reader}")
    assert_same_rows(spark, v2, reader)
    # the build's statistics lie in its directory, keyed by paths relative to it: that catalog's
    # scans skip files with them too
    summary = skipping_summary(spark.sql(f"explain select * from {reader} where a = 3").first()[0])
    assert summary["sidecar"] == summary["total"] == 3, summary


def test_recovery_rolls_forward_a_validated_staging_table(spark, dbt, s):
    """A crash after staging was validated but before it was promoted: the next run promotes it."""
    alias = "rollfwd"
    v1 = make_table(spark, f"{s}.rollfwd_v1", "select id, cast(id % 10 as int) as a, cast(id % 7 as int) as b from range(300)")
    v2 = make_table(spark, f"{s}.rollfwd_v2", "select id, cast(id % 10 as int) as a, cast(id % 7 as int) as b from range(900)")
    build(dbt, v1, alias, num_files=2)
    with failing_at(spark, "after_backup") as hook_vars:
        build(dbt, v2, alias, num_files=2, expect_success=False, extra_vars=hook_vars)
    # Run a different model's source so the rebuild itself cannot be what restores v2.
    with failing_at(spark, "after_staging_write") as hook_vars:
        build(dbt, v1, alias, num_files=2, extra_vars=hook_vars, expect_success=False)
    # recover_swap ran first in that call: staging (v2, validated) was promoted, then v1's build failed.
    assert_same_rows(spark, v2, f"{s}.{alias}")


def test_a_rebuild_reads_its_source_twice_whether_it_grew_or_shrank(spark, dbt, s):
    """A rebuild of a query that a scan cannot count (here a Python UDF filters it; a join or an
    aggregate alike) counts the rows in its sampling pass (sized on the row count the last build
    recorded), so the model query runs twice, as for an ORDER BY: that pass and the write. A
    source that grew since is sampled too much and thinned; one that shrank to under ~40 % is
    sampled too little (the pass samples 1.25x the rows needed, half of them are enough) and
    sampled again. Either way the files keep their share of the rows and
    the recorded count is exact."""
    evaluated = spark.sparkContext.accumulator(0)

    def seen(_):
        evaluated.add(1)
        return True

    spark.udf.register("sc_test_seen", seen, "boolean")
    alias, sources = "resized", {}
    for rows in (60000, 180000, 90000, 20000):
        sources[rows] = make_table(spark, f"{s}.resized_{rows}", f"""select id, cast(abs(xxhash64(id)) % 5000 as int) as a,
            cast(abs(xxhash64(id, 3)) % 5000 as int) as b from range({rows})""")
    passes = []
    for rows in (60000, 60000, 180000, 90000, 20000):
        spark.sql(f"create or replace temporary view resized_src as select * from {sources[rows]} where sc_test_seen(id)")
        before = evaluated.value
        build(dbt, "resized_src", alias, num_files=4, ranges=256)
        passes.append((evaluated.value - before) / rows)
        assert_same_rows(spark, sources[rows], f"{s}.{alias}")
        props = {r.key: r.value for r in spark.sql(f"show tblproperties {s}.{alias}").collect()}
        assert int(props["spark_clustering.row_count"]) == rows
        sizes = [r.n for r in spark.sql(f"select count(*) as n from {s}.{alias} group by _metadata.file_path").collect()]
        assert len(sizes) == 4 and max(sizes) <= 1.1 * rows / 4 and min(sizes) >= 0.9 * rows / 4, (rows, sizes)
    # the first build counts first; shrinking from 90000 to 20000 rows left the pass too few sampled rows
    assert passes == [3, 2, 2, 2, 3], passes


def test_a_view_under_the_model_name_is_replaced_by_the_table(spark, dbt, s):
    """The model was a view before: the build drops it (it holds no data) and swaps the table in."""
    alias = "was_view"
    src = make_table(spark, f"{s}.was_view_src", "select id, cast(id % 10 as int) as a, cast(id % 7 as int) as b from range(3000)")
    spark.sql(f"create or replace view {s}.{alias} as select * from {src} where id < 10")
    build(dbt, src, alias, num_files=2)
    assert spark.sql(f"describe table extended {s}.{alias}").where("col_name = 'Type'").first()[1] == "MANAGED"
    assert_same_rows(spark, src, f"{s}.{alias}")
    tables = {r.tableName for r in spark.sql(f"show tables in {s}").collect()}
    assert not {t for t in tables if t.startswith(alias + "__sc_")}, tables
