"""The Python implementation of range_id / zorder_key / hilbert_key (spark_clustering_udfs).

Pure tests: the numpy code (curves.py) against the scalar reference (reference.py) and against the
defining properties (Hilbert walk = bijection with unit steps, Z-order = bit interleaving, BIGINT /
BINARY at 63 bits, range_id = searchsorted(side='right') + 1 under Spark's ordering), error texts.
Spark tests: the registered Arrow UDFs (`py_` prefix, registered by conftest) give the numpy values
on a few thousand rows, and the native functions' values when the jar is loaded.
"""
from __future__ import annotations

import datetime as dt
import os
import sys
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_clustering_udfs import curves
from spark_clustering_udfs import reference as ref
from spark_clustering_udfs.curves import CurveArgumentError
from spark_clustering_udfs.spark import _rows_identical, key_batch, range_id_batch

# The Arrow UDFs run in Python workers that need numpy + pyarrow: use this interpreter (read when
# the shared SparkContext starts, after collection).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def key_int(key) -> int:
    return ref.key_as_int(key)


def deinterleave(key: int, n: int, bits: int) -> list[int]:
    return [sum(((key >> (level * n + (n - 1 - i))) & 1) << level for level in range(bits)) for i in range(n)]


# ---------------------------------------------------------------------------------------------
# Keys: properties
# ---------------------------------------------------------------------------------------------

def test_zorder_small_examples():
    # id_1 = 1 (bit 0 -> position 1), id_2 = 2 (bit 1 -> position 2): 0b110.
    assert curves.zorder_key(2, [1], [2]).tolist() == [6]
    assert curves.zorder_key(1, [0, 0, 1, 1], [0, 1, 0, 1]).tolist() == [0, 1, 2, 3]
    assert curves.zorder_key(3, [5]).tolist() == [5]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_zorder_is_bit_interleaving(data):
    n = data.draw(st.integers(1, 32))
    bits = data.draw(st.integers(1, 31))
    rows = data.draw(st.lists(st.lists(st.integers(0, (1 << bits) - 1), min_size=n, max_size=n),
                              min_size=1, max_size=8))
    keys = curves.zorder_key(bits, *[np.array(col) for col in zip(*rows)])
    for row, key in zip(rows, keys):
        k = key_int(key)
        assert 0 <= k < 1 << (n * bits)
        assert deinterleave(k, n, bits) == row


HILBERT_GRIDS = [(2, 5), (3, 3), (4, 3), (5, 2), (6, 2)]


@pytest.mark.parametrize("n,bits", HILBERT_GRIDS, ids=[f"n{n}_bits{b}" for n, b in HILBERT_GRIDS])
def test_hilbert_walks_the_full_grid_in_unit_steps(n, bits):
    cells = np.indices((1 << bits,) * n).reshape(n, -1)  # every cell of the grid once
    keys = curves.hilbert_key(bits, *cells)
    order = np.argsort(keys)
    assert keys[order].tolist() == list(range(1 << (n * bits))), "not a bijection"
    walk = cells[:, order]
    assert np.abs(np.diff(walk, axis=1)).sum(axis=0).tolist() == [1] * ((1 << (n * bits)) - 1)
    assert walk[:, 0].tolist() == [0] * n
    sample = range(0, cells.shape[1], max(1, cells.shape[1] // 300))
    assert [keys[j] for j in sample] == [ref.hilbert_key(bits, *cells[:, j].tolist()) for j in sample]


def test_hilbert_2x2_walk_and_single_id():
    assert curves.hilbert_key(1, [0, 0, 1, 1], [0, 1, 1, 0]).tolist() == [0, 1, 2, 3]
    ids = np.array([0, 1, 7, 1000003, (1 << 31) - 1])
    assert curves.hilbert_key(31, ids).tolist() == ids.tolist()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_numpy_equals_reference(data):
    n = data.draw(st.one_of(st.integers(1, 8), st.integers(1, 32)))
    bits = data.draw(st.integers(1, 31))
    size = data.draw(st.integers(1, 12))
    id_value = st.one_of(st.integers(0, (1 << bits) - 1), st.sampled_from([0, (1 << bits) - 1]))
    cols = [np.array(data.draw(st.lists(id_value, min_size=size, max_size=size)), dtype=np.int64)
            for _ in range(n)]
    z = curves.zorder_key(bits, *cols)
    h = curves.hilbert_key(bits, *cols)
    for r in range(size):
        row = [int(c[r]) for c in cols]
        assert z[r] == ref.zorder_key(bits, *row)
        assert h[r] == ref.hilbert_key(bits, *row)


BOUNDARY = [(7, 9, False), (3, 21, False), (9, 7, False), (1, 31, False), (21, 3, False),
            (8, 8, True), (4, 16, True), (16, 4, True), (32, 2, True), (3, 22, True), (5, 13, True),
            (32, 31, True)]


@pytest.mark.parametrize("n,bits,binary", BOUNDARY, ids=[f"n{n}_bits{b}" for n, b, _ in BOUNDARY])
def test_bigint_binary_boundary_at_63_bits(n, bits, binary):
    assert curves.key_is_bigint(bits, n) is (not binary)
    key = curves.zorder_key(bits, *[np.array([(1 << bits) - 1])] * n)[0]  # every bit set
    if binary:
        assert isinstance(key, bytes) and len(key) == (n * bits + 7) // 8
        assert int.from_bytes(key, "big") == (1 << (n * bits)) - 1  # zero padding only on the left
    else:
        assert isinstance(key, np.integer) and key == (1 << (n * bits)) - 1
    rng = np.random.default_rng(n * 100 + bits)
    cols = [rng.integers(0, 1 << bits, 500) for _ in range(n)]
    for fn, reference in ((curves.zorder_key, ref.zorder_key), (curves.hilbert_key, ref.hilbert_key)):
        keys = fn(bits, *cols)
        assert keys.dtype == (object if binary else np.int64)
        expected = [reference(bits, *[int(c[r]) for c in cols]) for r in range(500)]
        assert list(keys) == expected
        # Unsigned byte order (and BIGINT order, all keys >= 0) is the key order.
        assert sorted(keys.tolist()) == sorted(expected, key=key_int)


def test_largest_bigint_key_is_positive():
    keys = curves.zorder_key(9, *[np.array([511])] * 7)
    assert keys.dtype == np.int64 and keys[0] == (1 << 63) - 1
    h = curves.hilbert_key(9, *[np.array([511, 0])] * 7)
    assert (h >= 0).all()


# ---------------------------------------------------------------------------------------------
# range_id
# ---------------------------------------------------------------------------------------------

def spark_searchsorted(values, boundaries) -> list[int]:
    return [ref.range_id(v, boundaries) for v in values]


def test_range_id_floats_duplicates_heavy_hitters_nan_negative_zero():
    rng = np.random.default_rng(7)
    data = np.concatenate([rng.normal(0, 100, 3000), np.full(2000, 42.0),  # 40 % heavy hitter
                           [np.nan] * 50, [-0.0] * 30, [0.0] * 30, [np.inf, -np.inf] * 10])
    rng.shuffle(data)
    bounds = np.sort(rng.choice(data, 64))  # numpy sorts NaN last, like Spark
    bounds = np.concatenate([bounds[:10], [42.0, 42.0, 42.0, -0.0, 0.0], bounds[10:]])
    bounds = np.sort(bounds)
    ids = curves.range_id(data, bounds)
    expected = np.searchsorted(bounds, data, side="right") + 1
    assert ids.tolist() == expected.tolist()
    assert ids.tolist() == spark_searchsorted(data.tolist(), bounds.tolist())
    assert len(set(ids[data == 42.0].tolist())) == 1  # all copies of a heavy hitter share a range
    with_null = curves.range_id([np.nan, None, -0.0, 0.0, np.inf], [-0.0, 0.0, np.inf, np.nan, np.nan])
    assert with_null.tolist() == [6, 0, 3, 3, 4]  # NaN = NaN: every boundary is <= NaN


def test_range_id_integers_empty_and_extremes():
    assert curves.range_id([5, None, -1], []).tolist() == [1, 0, 1]
    b = [-(1 << 63), -5, 0, 0, 0, 7, (1 << 63) - 1]
    vals = [-(1 << 63), -6, -5, 0, 1, 7, (1 << 63) - 1, None]
    assert curves.range_id(vals, b).tolist() == spark_searchsorted(vals, b) == [2, 2, 3, 6, 6, 7, 8, 0]
    assert curves.range_id(np.array([True, False]), np.array([False])).tolist() == [2, 2]


def test_range_id_strings_with_a_common_16_char_prefix():
    prefix = "abcdefghijklmnop"
    suffixes = ["", "a", "b", "ab", "é", "中", "\uffff", "\U0001F600", "z" * 20, "\x00"]
    values = [prefix + s + t for s in suffixes for t in ["", "0", "9"]] + ["", "abc", None]
    bounds = sorted({prefix + s for s in suffixes})
    # Code point order = UTF-8 byte order (not UTF-16: U+1F600 sorts after U+FFFF).
    assert bounds == sorted(bounds, key=lambda s: s.encode("utf-8"))
    assert bounds.index(prefix + "\U0001F600") > bounds.index(prefix + "\uffff")
    ids = curves.range_id(values, bounds)
    assert ids.tolist() == spark_searchsorted(values, bounds)
    assert ids[:-1].tolist() == (np.searchsorted(np.array(bounds, dtype=object),
                                                 np.array(values[:-1], dtype=object), side="right") + 1).tolist()


def test_range_id_dates_timestamps_decimals():
    days = [dt.date(2000, 1, 1) + dt.timedelta(days=int(d)) for d in np.random.default_rng(3).integers(0, 5000, 500)]
    date_bounds = sorted(days[:40]) + [dt.date(2030, 1, 1)]
    date_bounds.sort()
    assert curves.range_id(days + [None], date_bounds).tolist() == spark_searchsorted(days + [None], date_bounds)
    as_np = np.array(days, dtype="datetime64[D]")
    assert curves.range_id(as_np, np.array(date_bounds, dtype="datetime64[D]")).tolist() == \
        spark_searchsorted(days, date_bounds)

    utc = dt.timezone.utc
    stamps = [dt.datetime(2020, 1, 1, tzinfo=utc) + dt.timedelta(microseconds=int(m) * 7919)
              for m in np.random.default_rng(4).integers(0, 10**9, 500)]
    ts_bounds = sorted(stamps[:30])
    assert curves.range_id(stamps, ts_bounds).tolist() == spark_searchsorted(stamps, ts_bounds)
    np_stamps = np.array([s.replace(tzinfo=None) for s in stamps], dtype="datetime64[us]")
    np_bounds = np.array([s.replace(tzinfo=None) for s in ts_bounds], dtype="datetime64[us]")
    assert curves.range_id(np_stamps, np_bounds).tolist() == spark_searchsorted(stamps, ts_bounds)

    decs = [Decimal(int(x)) / 100 for x in np.random.default_rng(5).integers(-100000, 100000, 500)]
    dec_bounds = sorted(decs[:50] + [Decimal("1.10"), Decimal("1.1"), Decimal("-0.00")])
    ids = curves.range_id(decs + [Decimal("1.100"), None], dec_bounds)
    assert ids.tolist() == spark_searchsorted(decs + [Decimal("1.100"), None], dec_bounds)


SORTABLE = {
    "double": st.floats(allow_nan=True, allow_infinity=True, width=64) | st.sampled_from([0.0, -0.0, float("nan")]),
    "bigint": st.integers(-(1 << 63), (1 << 63) - 1) | st.sampled_from([0, -1, 1]),
    "string": st.text(alphabet=st.sampled_from(["a", "b", "é", "\uffff", "\U0001F600", "\x00"]), max_size=4)
              .map(lambda t: "abcdefghijklmnop" + t),
}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_range_id_equals_reference_on_generated_inputs(data):
    kind = data.draw(st.sampled_from(sorted(SORTABLE)))
    element = SORTABLE[kind]
    bounds = ref.spark_sorted(data.draw(st.lists(element, max_size=12)))
    bounds += data.draw(st.lists(st.sampled_from(bounds), max_size=4)) if bounds else []  # duplicates
    bounds = ref.spark_sorted(bounds)
    values = data.draw(st.lists(element | st.none() | st.sampled_from(bounds or [None]), min_size=1, max_size=20))
    expected = [ref.range_id(v, bounds) for v in values]
    assert curves.range_id(values, bounds).tolist() == expected
    assert curves.range_id_rows(values, [bounds] * len(values)).tolist() == expected
    arrow_type = {"double": pa.float64(), "bigint": pa.int64(), "string": pa.string()}[kind]
    batch = range_id_batch(pa.array(values, type=arrow_type), pa.array([bounds] * len(values), type=pa.list_(arrow_type)))
    assert batch.to_pylist() == expected


def test_range_id_rows_with_their_own_boundaries():
    rng = np.random.default_rng(11)
    values = rng.integers(-50, 50, 400).astype(float).tolist()
    values[::37] = [None] * len(values[::37])
    values[5] = float("nan")
    rows = [sorted(rng.integers(-60, 60, int(rng.integers(0, 12))).astype(float).tolist()) for _ in values]
    rows[5] = [1.0, float("nan")]
    assert curves.range_id_rows(values, rows).tolist() == [ref.range_id(v, b) for v, b in zip(values, rows)]


# ---------------------------------------------------------------------------------------------
# The Arrow batch functions (what the UDFs run), without Spark
# ---------------------------------------------------------------------------------------------

def test_range_id_batch_constant_and_per_row_paths_agree():
    rng = np.random.default_rng(2)
    values = pa.array([None if i % 17 == 0 else float(x) for i, x in enumerate(rng.normal(0, 10, 1000))])
    bounds = sorted(rng.normal(0, 10, 31).tolist()) + [float("nan")]
    same = pa.array([bounds] * 1000, type=pa.list_(pa.float64()))
    assert _rows_identical(same.flatten(), 1000, len(bounds))
    expected = [ref.range_id(v, bounds) for v in values.to_pylist()]
    assert range_id_batch(values, same).to_pylist() == expected
    # A slice (Arrow offsets not starting at 0) and one row that differs: the per-row path.
    assert range_id_batch(values.slice(100, 300), same.slice(100, 300)).to_pylist() == expected[100:400]
    for changed in ([0.0], bounds[:5] + [0.5] + bounds[6:]):  # another length / another value
        rows = [bounds] * 1000
        rows[500] = sorted(changed, key=lambda x: (x != x, x))
        varying = pa.array(rows, type=pa.list_(pa.float64()))
        if len(changed) == len(bounds):
            assert not _rows_identical(varying.flatten(), 1000, len(bounds))
        got = range_id_batch(values, varying).to_pylist()
        assert got == [ref.range_id(v, b) for v, b in zip(values.to_pylist(), rows)]

    strings = pa.array([None if s is None else "abcdefghijklmnop" + s for s in ["b", "", None, "é", "\U0001F600", "zz"]])
    sb = ["abcdefghijklmnop", "abcdefghijklmnopa", "abcdefghijklmnopé"]
    same_s = pa.array([sb] * 6, type=pa.list_(pa.string()))
    assert _rows_identical(same_s.flatten(), 6, 3)
    assert range_id_batch(strings, same_s).to_pylist() == [ref.range_id(v, sb) for v in strings.to_pylist()]


def test_key_batch_nulls_and_binary_buffers():
    a = pa.array([1, None, 3, 0], type=pa.int32())
    b = pa.array([2, 2, None, 7], type=pa.int64())
    bits8 = pa.array([8] * 4, type=pa.int32())
    assert key_batch("zorder_key", False, [bits8, a, b]).to_pylist() == [
        ref.zorder_key(8, 1, 2), None, None, ref.zorder_key(8, 0, 7)]
    bits31 = pa.array([31] * 4, type=pa.int32())
    out = key_batch("hilbert_key", True, [bits31, a, b, a])
    assert out.type == pa.binary()
    assert out.to_pylist() == [ref.hilbert_key(31, 1, 2, 1), None, None, ref.hilbert_key(31, 0, 7, 0)]


# ---------------------------------------------------------------------------------------------
# Error texts (the same as the native functions' and the SQL fallback's)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bits,shown", [(0, "0"), (32, "32"), (True, "True"), ("8", "8"), (None, "NULL")])
def test_bits_errors(bits, shown):
    with pytest.raises(CurveArgumentError) as info:
        curves.zorder_key(bits, [1])
    assert str(info.value) == (
        f"zorder_key: bits (argument 1) must be between 1 and 31, but got {shown}; use the smallest "
        "bits with 2^bits > the largest range_id (number of boundaries + 1)")


@pytest.mark.parametrize("n", [0, 33])
def test_arity_errors(n):
    with pytest.raises(CurveArgumentError) as info:
        curves.hilbert_key(2, *[[0]] * n)
    assert str(info.value) == (f"hilbert_key takes 1 to 32 id arguments after bits, but got {n}; "
                               "call hilbert_key(bits, id_1, ..., id_n), e.g. hilbert_key(10, id_a, id_b)")


def test_id_errors():
    with pytest.raises(CurveArgumentError) as info:
        curves.zorder_key(4, [1, 2], [3, -5])
    assert str(info.value) == ("zorder_key: argument 3 = -5 is outside [0, 15] for bits = 4 (ids must be "
                               "range_id results and bits must cover the number of ranges)")
    with pytest.raises(CurveArgumentError, match=r"^hilbert_key: argument 2 = 1024 is outside \[0, 1023\] for bits = 10"):
        curves.hilbert_key(10, [1024], [0])
    with pytest.raises(CurveArgumentError, match="argument 2 must be an integral type"):
        curves.zorder_key(4, np.array([1.5]))
    with pytest.raises(CurveArgumentError, match="^hilbert_key: argument 2 = 16 is outside"):
        ref.hilbert_key(4, 16, 0)
    assert ref.zorder_key(4, None, 99) is None  # a NULL id makes the key NULL before any check
    with pytest.raises(CurveArgumentError) as info:
        key_batch("zorder_key", False, [pa.array([4, 4]), pa.array([None, 3]), pa.array([99, 16])])
    assert str(info.value).startswith("zorder_key: argument 3 = 16 is outside [0, 15] for bits = 4")


def test_range_id_null_boundaries_errors():
    with pytest.raises(CurveArgumentError) as info:
        curves.range_id([1.0], None)
    assert str(info.value) == curves.NULL_BOUNDARIES_ERROR
    assert str(info.value).startswith("range_id: the boundaries array is NULL")
    with pytest.raises(CurveArgumentError) as info:
        curves.range_id([1.0], [1.0, None, 3.0])
    assert str(info.value).startswith("range_id: boundaries[1] (0-based) is NULL; boundaries must not contain NULLs")
    with pytest.raises(CurveArgumentError, match=r"boundaries\[2\] \(0-based\) is NULL"):
        curves.range_id_rows([1, 2, 3], [[1], [], [1, 2, None]])
    with pytest.raises(CurveArgumentError, match="the boundaries array is NULL"):
        range_id_batch(pa.array([1, 2]), pa.array([[1], None], type=pa.list_(pa.int64())))


# ---------------------------------------------------------------------------------------------
# Spark: the registered Arrow UDFs (py_ prefix) on real batches
# ---------------------------------------------------------------------------------------------

def h(seed: int, modulo: int) -> str:
    return f"CAST(pmod(xxhash64(id, {seed}), {modulo}) AS INT)"


KEY_CASES = [(1, 31), (2, 31), (3, 21), (3, 22), (4, 10), (5, 12), (7, 9), (8, 8), (8, 3), (32, 2)]


def native_functions_loaded(spark) -> bool:
    return any(r[0] == "hilbert_key" for r in spark.sql("SHOW FUNCTIONS LIKE 'hilbert_key'").collect())


@pytest.fixture(scope="module")
def small_batches(spark):
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    saved = spark.conf.get(key, None)
    spark.conf.set(key, "700")  # several Arrow batches per task
    yield
    if saved is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, saved)


def test_registered_functions_and_result_types(spark):
    from spark_clustering_udfs.spark import register

    assert register(spark, prefix="py_") == {"py_range_id": "int", "py_zorder_key": "bigint|binary",
                                             "py_hilbert_key": "bigint|binary"}
    ones = ", ".join(["1"] * 8)
    row = spark.sql(f"SELECT typeof(py_zorder_key(9, 1, 1, 1, 1, 1, 1, 1)) AS a, "
                    f"typeof(py_hilbert_key(8, {ones})) AS b, typeof(py_range_id(1, array(1))) AS c").first()
    assert (row.a, row.b, row.c) == ("bigint", "binary", "int")


def test_bigint_only_fallback_registration(spark, monkeypatch):
    # Where the per-call return type cannot be installed (e.g. Spark Connect), the keys are
    # registered as BIGINT-only UDFs and n*bits > 63 fails with a message that says why.
    from spark_clustering_udfs import spark as udf_spark

    monkeypatch.setattr(udf_spark, "_register_typed_dispatch", lambda *args: False)
    assert udf_spark.register(spark, prefix="py64_")["py64_hilbert_key"] == "bigint"
    row = spark.sql("SELECT py64_hilbert_key(9, 1, 2, 3, 4, 5, 6, 7) AS h, "
                    "typeof(py64_zorder_key(9, 1, 2, 3, 4, 5, 6, 7)) AS t").first()
    assert (row.h, row.t) == (ref.hilbert_key(9, 1, 2, 3, 4, 5, 6, 7), "bigint")
    with pytest.raises(Exception) as info:
        spark.sql("SELECT py64_zorder_key(8, 1, 2, 3, 4, 5, 6, 7, 8)").collect()
    assert ("zorder_key: n*bits = 8*8 = 64 needs a BINARY key, but this Python registration returns "
            "BIGINT only") in str(info.value)


def test_udf_keys_match_numpy_on_thousands_of_rows(spark, small_batches):
    n_max = max(n for n, _ in KEY_CASES)
    cols = [f"IF(id % {13 + i} = 0 AND {i} < 3, NULL, {h(i + 1, 1 << 31)}) AS c{i}" for i in range(n_max)]
    spark.sql(f"SELECT id, {', '.join(cols)} FROM range(3000)").createOrReplaceTempView("py_key_ids")
    select = []
    for n, bits in KEY_CASES:
        ids = ", ".join(f"c{i} % {1 << bits}" for i in range(n))
        select += [f"py_zorder_key({bits}, {ids}) AS z_{n}_{bits}", f"py_hilbert_key({bits}, {ids}) AS h_{n}_{bits}"]
    df = spark.sql(f"SELECT id, {', '.join(f'c{i}' for i in range(n_max))}, {', '.join(select)} "
                   f"FROM py_key_ids ORDER BY id")
    names = df.columns
    rows = [tuple(r) for r in df.collect()]
    assert len(rows) == 3000
    column = {name: [r[j] for r in rows] for j, name in enumerate(names)}
    for n, bits in KEY_CASES:
        raw = [column[f"c{i}"] for i in range(n)]
        valid = np.array([all(col[j] is not None for col in raw) for j in range(len(rows))])
        cols_np = [np.array([0 if v is None else v % (1 << bits) for v in col], dtype=np.int64) for col in raw]
        for prefix, fn in (("z", curves.zorder_key), ("h", curves.hilbert_key)):
            expected = fn(bits, *cols_np).tolist()
            got = [bytes(g) if isinstance(g, (bytes, bytearray)) else g for g in column[f"{prefix}_{n}_{bits}"]]
            assert got == [e if v else None for e, v in zip(expected, valid)], (prefix, n, bits)
        if n == 2 and bits == 31:  # and a sample against the scalar reference
            for j in range(0, len(rows), 97):
                ids = [int(c[j]) for c in cols_np]
                if valid[j]:
                    assert column["h_2_31"][j] == ref.hilbert_key(bits, *ids)


RANGE_VALUES = {
    "double": ("CASE WHEN id % 29 = 0 THEN NULL WHEN id % 13 = 0 THEN CAST('NaN' AS DOUBLE) "
               "WHEN id % 17 = 0 THEN -0.0D WHEN id % 19 = 0 THEN 0.0D WHEN id % 5 = 0 THEN 2.5D "
               f"ELSE ({h(1, 2001)} - 1000) / 100.0D END",
               "array(-5.0D, -0.0D, 0.0D, 2.5D, 2.5D, 2.5D, 7.25D, CAST('NaN' AS DOUBLE))"),
    "bigint": (f"IF(id % 31 = 0, NULL, CAST({h(3, 2001)} AS BIGINT) - 1000)",
               "array(-1000L, -3L, 0L, 0L, 999L, 1000L)"),
    "string": ("IF(id % 23 = 0, NULL, concat('abcdefghijklmnop', element_at(array('', 'a', 'b', 'é', "
               f"'中', '\U0001F600', 'zz'), {h(5, 7)} + 1)))",
               "array('abcdefghijklmnop', 'abcdefghijklmnopa', 'abcdefghijklmnopé', 'abcdefghijklmnop\uffff')"),
    "date": (f"date_add(DATE'2000-01-01', {h(7, 5000)})",
             "array(DATE'2001-01-01', DATE'2005-06-30', DATE'2005-06-30', DATE'2010-01-01')"),
    "timestamp": (f"timestamp_micros(946684800000000 + CAST({h(8, 100000)} AS BIGINT) * 1000003)",
                  "array(TIMESTAMP'2000-01-01 06:00:00', TIMESTAMP'2000-01-01 12:00:00', TIMESTAMP'2000-01-01 12:00:00', "
                  "TIMESTAMP'2000-01-02 00:00:00')"),
    "decimal": (f"CAST(({h(9, 200001)} - 100000) / 100 AS DECIMAL(12, 2))",
                "array(CAST(-500.5 AS DECIMAL(12, 2)), CAST(0 AS DECIMAL(12, 2)), CAST(1.1 AS DECIMAL(12, 2)))"),
    "binary": (f"substr(unhex(lpad(hex({h(10, 1 << 24)}), 6, '0')), 1, 1 + {h(11, 3)})",
               "array(X'7F', X'80', X'80', X'FFFFFF')"),
    "boolean": ("IF(id % 5 = 0, NULL, id % 3 = 0)", "array(false, true, true)"),
    "decimal_wide": (f"CAST(({h(9, 200001)} - 100000) / 100 AS DECIMAL(30, 2))",
                     "array(CAST(-500.5 AS DECIMAL(30, 2)), CAST(0 AS DECIMAL(30, 2)))"),
}


@pytest.mark.parametrize("case", list(RANGE_VALUES))
def test_udf_range_id_matches_numpy(spark, small_batches, case):
    value_sql, array_sql = RANGE_VALUES[case]
    native = native_functions_loaded(spark)
    assert native, "native range_id/zorder_key/hilbert_key are not loaded"
    extra = (f", range_id(v, {array_sql}) AS native_ids" if native else "")
    rows = spark.sql(
        f"SELECT id, v, {array_sql} AS b, py_range_id(v, {array_sql}) AS constant_ids, "
        f"py_range_id(v, IF(id % 3 = 0, {array_sql}, slice({array_sql}, 1, 2))) AS row_ids{extra} "
        f"FROM (SELECT id, {value_sql} AS v FROM range(2500)) ORDER BY id").collect()
    values = [r.v for r in rows]
    bounds = rows[0].b
    assert [r.constant_ids for r in rows] == curves.range_id(values, bounds).tolist() \
        == [ref.range_id(v, bounds) for v in values]
    assert [r.row_ids for r in rows] == [ref.range_id(r.v, r.b if r.id % 3 == 0 else r.b[:2]) for r in rows]
    assert len({r.constant_ids for r in rows}) >= 3
    if native:
        assert [r.native_ids for r in rows] == [r.constant_ids for r in rows]


def test_udfs_equal_native_functions(spark, small_batches):
    # The shared session always loads the jar (spark_clustering_dev.spark); a missing function is a failure.
    assert native_functions_loaded(spark), "native range_id/zorder_key/hilbert_key are not loaded"
    exprs = []
    for n, bits in [(1, 31), (2, 31), (3, 21), (4, 16), (8, 8), (6, 3)]:
        ids = ", ".join(f"IF(id % {41 + i} = 0, NULL, {h(20 + i, 1 << bits)})" for i in range(n))
        exprs += [f"py_zorder_key({bits}, {ids}) <=> zorder_key({bits}, {ids})",
                  f"py_hilbert_key({bits}, {ids}) <=> hilbert_key({bits}, {ids})"]
    row = spark.sql(f"SELECT {', '.join(f'sum(IF({e}, 0, 1)) AS d{i}' for i, e in enumerate(exprs))} "
                    "FROM range(4000)").first()
    assert list(row) == [0] * len(exprs)


def test_udf_runtime_errors_have_the_native_text(spark):
    cases = {
        "py_zorder_key(4, IF(id = 1, -5, 1)) FROM range(3)":
            "zorder_key: argument 2 = -5 is outside [0, 15] for bits = 4 (ids must be range_id results "
            "and bits must cover the number of ranges)",
        "py_hilbert_key(16, 1, 2, 3, 4, IF(id = 1, 65536, 1)) FROM range(3)":
            "hilbert_key: argument 6 = 65536 is outside [0, 65535]",
        "py_range_id(id, IF(id < 0, array(1L), NULL)) FROM range(3)": "range_id: the boundaries array is NULL",
        "py_range_id(CAST(id AS BIGINT), array(1L, NULL, 3L)) FROM range(3)":
            "range_id: boundaries[1] (0-based) is NULL; boundaries must not contain NULLs",
        "py_zorder_key(0, 1)": "zorder_key: bits (argument 1) must be between 1 and 31, but got 0",
    }
    for query, text in cases.items():
        with pytest.raises(Exception) as info:
            spark.sql(f"SELECT {query}").collect()
        assert text in str(info.value), query
