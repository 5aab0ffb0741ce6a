"""The native Catalyst functions range_id / zorder_key / hilbert_key (Scala jar + extension).

Properties checked on real Spark: Hilbert adjacency + bijection on a full grid of each key path,
Z-order = bit interleaving, BIGINT/BINARY result types at the 63-bit boundary (BINARY order = key
order), range_id = numpy searchsorted(side='right') + 1 for many types, identical results from
whole-stage codegen, expression codegen and the interpreted path, and the error texts of every misuse.
"""
from __future__ import annotations

import itertools
import math
from decimal import Decimal

import numpy as np
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql.types import BinaryType, LongType
from spark_clustering_dev.spark import confs
from spark_clustering_udfs.reference import axes_to_transpose, interleave

# How each evaluation path is forced. fallback=false / CODEGEN_ONLY make a codegen bug fail the
# test instead of silently falling back to the interpreted path.
MODES = {
    "wholestage": {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.fallback": "false"},
    "expr_codegen": {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "CODEGEN_ONLY"},
    "interpreted": {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"},
}


def collect_in_modes(spark, query: str) -> dict[str, list]:
    results = {}
    for mode, settings in MODES.items():
        with confs(spark, settings):
            results[mode] = [tuple(r) for r in spark.sql(query).collect()]
    return results


def nan_safe(rows: list) -> list:
    """NaN != NaN, so compare NaNs as a marker."""
    return [tuple("NaN" if isinstance(v, float) and v != v else v for v in row) for row in rows]


def assert_modes_agree(results: dict[str, list]) -> list:
    first, *rest = results
    for mode in rest:
        assert nan_safe(results[mode]) == nan_safe(results[first]), f"{mode} differs from {first}"
    return results[first]


# ---------------------------------------------------------------------------------------------
# Python models of the keys: the scalar reference of udfs/python, written straight from the spec
# ---------------------------------------------------------------------------------------------

def hilbert_reference(ids, bits: int) -> int:
    return interleave(axes_to_transpose(list(ids), bits), bits)


def key_int(value) -> int:
    """A BIGINT key as is, a BINARY key as its big-endian unsigned integer."""
    return value if isinstance(value, int) else int.from_bytes(bytes(value), "big")


def ids_sql(n: int, bits: int, source: str = "id") -> list[str]:
    """n id columns that enumerate every grid cell as `source` runs over range(2^(n*bits))."""
    mask = (1 << bits) - 1
    return [f"CAST(shiftright({source}, {i * bits}) & {mask} AS INT)" for i in range(n)]


# ---------------------------------------------------------------------------------------------
# Curves
# ---------------------------------------------------------------------------------------------

# The jar's unit suite (CurveKeysTest) walks 15 grids (n = 2 to 6) without Spark; here one full grid
# of each Hilbert path through a real query: the state table (n <= 4) and the transpose loop (n >= 5).
GRIDS = [(2, 3), (5, 2)]


@pytest.mark.parametrize("n,bits", GRIDS, ids=[f"n{n}_bits{b}" for n, b in GRIDS])
def test_hilbert_is_a_bijective_adjacent_walk_and_zorder_interleaves(spark, n, bits):
    cols = ", ".join(ids_sql(n, bits))
    rows = spark.sql(
        f"SELECT id, hilbert_key({bits}, {cols}) AS h, zorder_key({bits}, {cols}) AS z "
        f"FROM range({1 << (n * bits)})").collect()
    mask = (1 << bits) - 1
    cells = {r.id: [(r.id >> (i * bits)) & mask for i in range(n)] for r in rows}

    by_key = sorted(rows, key=lambda r: r.h)
    assert [r.h for r in by_key] == list(range(1 << (n * bits))), "hilbert_key is not a bijection"
    for a, b in zip(by_key, by_key[1:]):
        distance = sum(abs(x - y) for x, y in zip(cells[a.id], cells[b.id]))
        assert distance == 1, f"keys {a.h} -> {b.h}: cells {cells[a.id]} -> {cells[b.id]}"
    assert cells[by_key[0].id] == [0] * n

    for r in rows:
        assert r.h == hilbert_reference(cells[r.id], bits)
        assert r.z == interleave(cells[r.id], bits)


def test_single_id_key_is_the_id(spark):
    rows = spark.sql("SELECT id, hilbert_key(31, CAST(id * 1000003 AS INT)) AS h, "
                     "zorder_key(31, CAST(id * 1000003 AS INT)) AS z FROM range(2000)").collect()
    assert all(r.h == r.z == r.id * 1000003 for r in rows)


# Also the widest BIGINT keys of the table-driven Hilbert path (n <= 4, several levels per lookup).
@pytest.mark.parametrize("n,bits,binary", [(7, 9, False), (8, 8, True), (3, 21, False), (3, 22, True),
                                           (1, 31, False), (32, 31, True), (2, 31, False), (4, 15, False),
                                           (5, 12, False)])
def test_result_type_at_the_63_bit_boundary(spark, n, bits, binary):
    cols = ", ".join(f"CAST(pmod(xxhash64(id, {i}), {1 << bits}) AS INT)" for i in range(n))
    query = (f"SELECT array({cols}) AS ids, hilbert_key({bits}, {cols}) AS h, "
             f"zorder_key({bits}, {cols}) AS z FROM range(300)")
    expected_type = BinaryType() if binary else LongType()
    schema = spark.sql(query).schema
    assert schema["h"].dataType == expected_type and schema["z"].dataType == expected_type
    # Many ids make the generated code large enough to be split into several methods: check that
    # in every mode (the other shapes run whole-stage only, to keep the module fast).
    rows = (assert_modes_agree(collect_in_modes(spark, query)) if n >= 7
            else [tuple(r) for r in spark.sql(query).collect()])
    for ids, h, z in rows:
        if binary:
            assert len(h) == len(z) == (n * bits + 7) // 8
        assert key_int(h) == hilbert_reference(ids, bits)
        assert key_int(z) == interleave(ids, bits)


def test_largest_bigint_key_is_positive(spark):
    top = ", ".join(["511"] * 7)
    row = spark.sql(f"SELECT zorder_key(9, {top}) AS z, hilbert_key(9, {top}) AS h").first()
    assert row.z == (1 << 63) - 1
    assert 0 <= row.h < 1 << 63


def test_binary_order_is_curve_order(spark):
    n, bits = 8, 8
    cols = ", ".join(f"CAST(pmod(xxhash64(id, {i}), 256) AS INT)" for i in range(n))
    rows = spark.sql(f"SELECT array({cols}) AS ids, hilbert_key({bits}, {cols}) AS h "
                     f"FROM range(3000) ORDER BY h").collect()
    keys = [key_int(r.h) for r in rows]
    assert keys == sorted(keys)
    assert keys == [hilbert_reference(r.ids, bits) for r in rows]
    assert keys[0] < 1 << 63 <= keys[-1], "the sample should cross the sign bit of the first byte"


CURVE_MODES_QUERY = """
SELECT
  hilbert_key(4, a, b, c) AS h3, zorder_key(4, a, b, c) AS z3,
  hilbert_key(10, a, b, c, d) AS h4, zorder_key(10, a, b, c, d) AS z4,
  hilbert_key(16, a, b, c, d) AS h4_binary, zorder_key(16, a, b, c, d) AS z4_binary,
  hilbert_key(10, CAST(a AS BIGINT), CAST(b AS TINYINT), CAST(c AS SMALLINT)) AS h_integral,
  a, b, c, d
FROM (
  SELECT
    IF(id % 11 = 0, NULL, CAST(pmod(xxhash64(id, 1), 16) AS INT)) AS a,
    CAST(pmod(xxhash64(id, 2), 16) AS INT) AS b,
    CAST(pmod(xxhash64(id, 3), 16) AS INT) AS c,
    IF(id % 13 = 0, NULL, CAST(pmod(xxhash64(id, 4), 1024) AS INT)) AS d
  FROM range(3000)
)
"""


def test_curve_keys_agree_across_codegen_and_interpreted(spark):
    rows = assert_modes_agree(collect_in_modes(spark, CURVE_MODES_QUERY))
    for h3, z3, h4, z4, h4b, z4b, hi, a, b, c, d in rows:
        if a is None:
            assert h3 is z3 is h4 is z4 is h4b is z4b is hi is None
            continue
        assert (h3, z3) == (hilbert_reference([a, b, c], 4), interleave([a, b, c], 4))
        assert hi == hilbert_reference([a, b, c], 10)
        if d is None:
            assert h4 is z4 is h4b is z4b is None
            continue
        assert (h4, z4) == (hilbert_reference([a, b, c, d], 10), interleave([a, b, c, d], 10))
        assert key_int(h4b) == hilbert_reference([a, b, c, d], 16)
        assert bytes(z4b) == interleave([a, b, c, d], 16).to_bytes(8, "big")


# ---------------------------------------------------------------------------------------------
# range_id
# ---------------------------------------------------------------------------------------------

def h(seed: int, modulo: int) -> str:
    """A deterministic pseudo-random integer in [0, modulo) per row."""
    return f"pmod(xxhash64(id, {seed}), {modulo})"


def sql_cast(type_sql: str):
    return lambda v: f"CAST('{v}' AS {type_sql})"


def double_literal(v: float) -> str:
    text = "NaN" if np.isnan(v) else "Infinity" if v == np.inf else "-Infinity" if v == -np.inf else repr(v)
    return f"CAST('{text}' AS DOUBLE)"


def sample_boundaries(keys: list, extra: list, count: int, seed: int) -> list:
    """Boundaries with duplicates (unsorted): a random sample of the data, where heavy hitters
    appear several times, plus `extra`."""
    rng = np.random.default_rng(seed)
    picks = [keys[i] for i in rng.integers(0, len(keys), count)]
    return picks + extra


STRING_SUFFIXES = ["", "a", "b", "ab", "é", "中", "\uff5e", "😀", "z" * 20]

# name -> (value SQL over range(N), key SQL (what numpy compares), literal(key) -> boundary SQL,
#          numpy dtype of the keys, extra boundaries)
RANGE_CASES = {
    "double": (
        f"CASE WHEN id % 29 = 0 THEN NULL WHEN id % 13 = 0 THEN CAST('NaN' AS DOUBLE) "
        f"WHEN id % 17 = 0 THEN -0.0D WHEN id % 19 = 0 THEN 0.0D WHEN id % 5 = 0 THEN 2.5D "
        f"WHEN id % 97 = 0 THEN CAST('Infinity' AS DOUBLE) WHEN id % 89 = 0 THEN CAST('-Infinity' AS DOUBLE) "
        f"ELSE ({h(1, 20001)} - 10000) / 100.0D END",
        "v", double_literal, np.float64,
        [2.5, 2.5, 0.0, -0.0, float("nan"), float("nan"), float("inf"), float("-inf"), 1e300],
    ),
    "float": (
        f"CASE WHEN id % 13 = 0 THEN CAST('NaN' AS FLOAT) WHEN id % 17 = 0 THEN CAST(-0.0D AS FLOAT) "
        f"ELSE CAST(({h(2, 2001)} - 1000) / 8.0 AS FLOAT) END",
        "CAST(v AS DOUBLE)", lambda v: f"CAST({double_literal(v)} AS FLOAT)", np.float64,
        [0.0, -0.0, float("nan"), 0.125],
    ),
    "int": (
        f"IF(id % 31 = 0, NULL, CAST({h(3, 2001)} - 1000 AS INT))",
        "v", sql_cast("INT"), np.int64, [-2147483648, 2147483647, 0, 0],
    ),
    "bigint": (
        "xxhash64(id, 4)", "v", sql_cast("BIGINT"), np.int64, [-(1 << 63), (1 << 63) - 1],
    ),
    "string": (
        "IF(id % 23 = 0, NULL, concat('abcdefghijklmnop', "
        f"element_at(array({', '.join(repr(s) for s in STRING_SUFFIXES)}), CAST({h(5, len(STRING_SUFFIXES))} + 1 AS INT)), "
        f"IF(id % 3 = 0, '', CAST({h(6, 5)} AS STRING))))",
        "v", lambda v: f"'{v}'", object, ["", "abcdefghijklmnop", "abcdefghijklmnopa", "abcdefghijklmnp"],
    ),
    "date": (
        f"date_add(DATE'2000-01-01', CAST({h(7, 5000)} AS INT))",
        "unix_date(v)", lambda v: f"date_from_unix_date({v})", np.int64, [10957, 10957],
    ),
    "timestamp": (
        f"timestamp_micros(946684800000000 + {h(8, 100000)} * 1000003)",
        "unix_micros(v)", lambda v: f"timestamp_micros({v})", np.int64, [946684800000000],
    ),
    "decimal": (
        f"CAST(({h(9, 200001)} - 100000) / 100 AS DECIMAL(12, 2))",
        "v", sql_cast("DECIMAL(12, 2)"), object, [Decimal("0.00"), Decimal("-1000.00")],
    ),
    # Over 18 digits: compared as decimals, not as unscaled longs.
    "wide_decimal": (
        f"CAST(({h(12, 200001)} - 100000) * 1000000007 / 1000 AS DECIMAL(24, 4))",
        "v", sql_cast("DECIMAL(24, 4)"), object, [Decimal("0.0000"), Decimal("-99999999999999999.9999")],
    ),
    "binary": (
        f"substr(unhex(lpad(hex({h(10, 1 << 24)}), 6, '0')), 1, CAST(1 + {h(11, 3)} AS INT))",
        "v", lambda v: f"X'{bytes(v).hex()}'", object, [b"\x7f", b"\x80", b"\x80", b"\xff\xff\xff"],
    ),
    "boolean": (
        "IF(id % 5 = 0, NULL, id % 3 = 0)", "v", lambda v: "true" if v else "false", object, [False, True, True],
    ),
}


@pytest.mark.parametrize("case", list(RANGE_CASES))
def test_range_id_matches_numpy_searchsorted(spark, case):
    value_sql, key_sql, literal, np_dtype, extra = RANGE_CASES[case]
    data = f"SELECT id, {value_sql} AS v FROM range(4000)"
    keys_rows = spark.sql(f"SELECT {key_sql} AS k FROM ({data})").collect()
    present = [bytes(r.k) if isinstance(r.k, (bytes, bytearray)) else r.k for r in keys_rows if r.k is not None]
    bounds = np.sort(np.array(sample_boundaries(present, extra, 60, seed=len(case)), dtype=np_dtype), kind="stable")
    array_sql = f"array({', '.join(literal(b) for b in bounds.tolist())})"
    query = (f"SELECT id, {key_sql} AS k, range_id(v, {array_sql}) AS constant_bounds, "
             # IF(id >= 0, ...) keeps the array out of constant folding: the per-row path.
             f"range_id(v, IF(id >= 0, {array_sql}, NULL)) AS row_bounds "
             f"FROM ({data}) ORDER BY id")
    rows = assert_modes_agree(collect_in_modes(spark, query))

    keys = [r[1] for r in rows]
    present_mask = np.array([k is not None for k in keys])
    values = np.array([bytes(k) if isinstance(k, (bytes, bytearray)) else k
                       for k in keys if k is not None], dtype=np_dtype)
    expected = np.zeros(len(keys), dtype=np.int64)
    expected[present_mask] = np.searchsorted(bounds, values, side="right") + 1
    assert [r[2] for r in rows] == expected.tolist()
    assert [r[3] for r in rows] == expected.tolist()
    assert len(set(expected.tolist())) >= 3
    if np_dtype is np.float64:  # the data really holds -0.0 and NaN
        assert any(k == 0 and math.copysign(1.0, k) < 0 for k in keys if k is not None)
        assert any(k != k for k in keys if k is not None)


def test_range_id_edge_cases(spark):
    row = spark.sql("""
        SELECT range_id(CAST(NULL AS DOUBLE), array(1.0D)) AS null_value,
               range_id(NULL, array(1.0D)) AS untyped_null,
               range_id(5.0D, CAST(array() AS ARRAY<DOUBLE>)) AS empty,
               range_id(5.0D, array()) AS untyped_empty,
               range_id(2, array(1, 2, 2, 2, 3)) AS duplicates,
               range_id(0, array(1, 2)) AS below, range_id(9, array(1, 2)) AS above,
               range_id(CAST('NaN' AS DOUBLE), array(1.0D, CAST('NaN' AS DOUBLE))) AS nan,
               range_id(-0.0D, array(0.0D)) AS negative_zero,
               range_id('abcdefghijklmnopB', array('abcdefghijklmnopA', 'abcdefghijklmnopC')) AS long_prefix
    """).first().asDict()
    assert row == {"null_value": 0, "untyped_null": 0, "empty": 1, "untyped_empty": 1, "duplicates": 5,
                   "below": 1, "above": 3, "nan": 3, "negative_zero": 2, "long_prefix": 2}
    df = spark.sql("SELECT range_id(v, array(1.0D)) AS r FROM VALUES (CAST(NULL AS DOUBLE)) AS t(v)")
    assert df.schema["r"].nullable is False and df.schema["r"].dataType.simpleString() == "int"


# ---------------------------------------------------------------------------------------------
# Misuse: each error names the function, the problem and the fix
# ---------------------------------------------------------------------------------------------

ANALYSIS_ERRORS = {
    "range_id(1)": ["WRONG_NUM_ARGS", "`range_id` requires 2", "actual number is 1", "range_id(value, boundaries)"],
    "range_id(1, array(1), 2)": ["`range_id` requires 2", "actual number is 3"],
    "zorder_key(3)": ["`zorder_key` requires 2 to 33", "actual number is 1", "zorder_key(bits, id_1, ..., id_n)"],
    "hilbert_key()": ["`hilbert_key` requires 2 to 33", "actual number is 0"],
    f"hilbert_key(1, {', '.join(['1'] * 33)})": ["`hilbert_key` requires 2 to 33", "actual number is 34"],
    "zorder_key(0, 1)": ["zorder_key: bits (argument 1) must be between 1 and 31, but got 0"],
    "hilbert_key(32, 1, 2)": ["hilbert_key: bits (argument 1) must be between 1 and 31, but got 32"],
    "zorder_key(CAST(NULL AS INT), 1)": ["zorder_key: bits (argument 1) must be between 1 and 31, but got NULL"],
    "zorder_key(CAST(id AS INT), 1) FROM range(1)": [
        "zorder_key: bits (argument 1) must be a constant INT literal", "non-constant expression", "as a literal"],
    "range_id(1.5D, array(1, 2))": [
        "range_id: the boundaries must be an ARRAY of the value's type DOUBLE, but got ARRAY<INT>",
        "CAST(boundaries AS ARRAY<DOUBLE>)"],
    "range_id(DATE'2020-01-01', array('2020-01-01'))": ["value's type DATE, but got ARRAY<STRING>"],
    "range_id(1, 2)": ["range_id: the second argument must be an ARRAY"],
    "zorder_key(4, 1.5D)": ["zorder_key(4, 1.5)", 'The second parameter requires the "INTEGRAL" type'],
}


@pytest.mark.parametrize("expr", list(ANALYSIS_ERRORS))
def test_analysis_errors(spark, expr):
    with pytest.raises(AnalysisException) as info:
        spark.sql(f"SELECT {expr}").collect()
    message = str(info.value)
    for text in ANALYSIS_ERRORS[expr]:
        assert text in message


# Every row fails with the same value, whichever partition reports first.
RUNTIME_ERRORS = {
    "zorder_key(4, IF(id >= 0, -5, 0)) FROM range(3)":
        "zorder_key: argument 2 = -5 is outside [0, 15] for bits = 4 (ids must be range_id results "
        "and bits must cover the number of ranges)",
    "hilbert_key(10, 1, IF(id >= 0, 1030, 0)) FROM range(3)":
        "hilbert_key: argument 3 = 1030 is outside [0, 1023] for bits = 10",
    # BIGINT ids are range-checked as BIGINT, not truncated to INT first.
    "zorder_key(4, IF(id >= 0, 4294967296, 0)) FROM range(2)": "zorder_key: argument 2 = 4294967296 is outside [0, 15]",
    "hilbert_key(16, 1, 2, 3, 4, IF(id >= 0, 65536, 0)) FROM range(2)": "hilbert_key: argument 6 = 65536 is outside [0, 65535]",
    "range_id(CAST(id AS BIGINT), array(1L, NULL, 3L)) FROM range(3)":
        "range_id: boundaries[1] (0-based) is NULL; boundaries must not contain NULLs",
    "range_id(CAST(id AS BIGINT), IF(id >= 0, array(1L, 2L, NULL), NULL)) FROM range(3)":
        "range_id: boundaries[2] (0-based) is NULL",
    "range_id(id, IF(id < 0, array(1L), NULL)) FROM range(3)": "range_id: the boundaries array is NULL",
    "range_id(id, CAST(NULL AS ARRAY<BIGINT>)) FROM range(3)": "range_id: the boundaries array is NULL",
}


@pytest.mark.parametrize("expr", list(RUNTIME_ERRORS))
def test_runtime_errors_in_every_mode(spark, expr):
    for mode, settings in MODES.items():
        with confs(spark, settings), pytest.raises(Exception) as info:
            spark.sql(f"SELECT {expr}").collect()
        assert RUNTIME_ERRORS[expr] in str(info.value), mode


def test_describe_function(spark):
    text = "\n".join(r[0] for r in spark.sql("DESCRIBE FUNCTION EXTENDED hilbert_key").collect())
    assert "org.apache.spark.sql.sparkclustering.curves.HilbertKey" in text and "hilbert_key(bits, id_1" in text


def test_all_combinations_of_two_ids_at_one_bit(spark):
    # The 2x2 Hilbert walk is (0,0) -> (0,1) -> (1,1) -> (1,0) with id_1 as the first axis.
    rows = spark.sql("SELECT a, b, hilbert_key(1, a, b) AS h, zorder_key(1, a, b) AS z "
                     "FROM VALUES (0, 0), (0, 1), (1, 0), (1, 1) AS t(a, b)").collect()
    assert {(r.a, r.b): r.h for r in rows} == {(0, 0): 0, (0, 1): 1, (1, 1): 2, (1, 0): 3}
    assert {(r.a, r.b): r.z for r in rows} == {(a, b): 2 * a + b for a, b in itertools.product((0, 1), repeat=2)}
