"""The pure-SQL fallback of range_id / zorder_key / hilbert_key (macros/curves/*.sql) on Spark.

The macros are rendered by dbt for real (one `run-operation curve_key_sql` creates a view per
case), the views are evaluated on the shared session, and every value is compared with the scalar
Python reference and, when the jar is loaded, with the native functions on the same rows. Also:
Hilbert walks from the SQL keys, the error texts at run time (the native ones) and at compile time.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from spark_clustering_udfs import reference as ref


def h(seed: int, modulo: int) -> str:
    """A deterministic pseudo-random INT in [0, modulo) per row."""
    return f"CAST(pmod(xxhash64(id, {seed}), {modulo}) AS INT)"


def id_column(i: int, bits: int, alias: str) -> str:
    """Mixed magnitudes and the edges: 0, the max id, NULL, narrow and full-width random ids."""
    top = (1 << bits) - 1
    narrow = 1 << max(1, bits // (1 + i % 3))
    return (f"CASE WHEN id % 41 = {i} THEN NULL WHEN id % 7 = {i % 7} THEN {top} WHEN id % 11 = {i % 11} THEN 0 "
            f"WHEN id % 2 = 0 THEN {h(100 + i, narrow)} ELSE {h(200 + i, 1 << bits)} END AS {alias}")


def shape_ids(n: int, bits: int) -> list[str]:
    return [f"s{n}_{bits}_c{i}" for i in range(n)]


KEY_SHAPES = [(1, 31), (2, 31), (3, 21), (4, 15), (5, 12), (6, 10), (7, 9), (8, 7), (2, 1), (8, 1), (5, 3)]
GRIDS = [(2, 4), (3, 3), (4, 2), (5, 2), (6, 2)]

UFFFF = "decode(unhex('EFBFBF'), 'UTF-8')"
EMOJI = "decode(unhex('F09F9880'), 'UTF-8')"

RANGE_CASES = {
    # name: (value SQL over range(N), boundaries SQL)
    "double": ("CASE WHEN id % 29 = 0 THEN NULL WHEN id % 13 = 0 THEN CAST('NaN' AS DOUBLE) "
               "WHEN id % 17 = 0 THEN -0.0D WHEN id % 19 = 0 THEN 0.0D WHEN id % 5 = 0 THEN 2.5D "
               "WHEN id % 97 = 0 THEN CAST('Infinity' AS DOUBLE) "
               f"ELSE ({h(1, 2001)} - 1000) / 100.0D END",
               "array(CAST('-Infinity' AS DOUBLE), -5.0D, -0.0D, 0.0D, 2.5D, 2.5D, 2.5D, 7.25D, "
               "CAST('Infinity' AS DOUBLE), CAST('NaN' AS DOUBLE), CAST('NaN' AS DOUBLE))"),
    "float": (f"IF(id % 13 = 0, CAST('NaN' AS FLOAT), CAST(({h(2, 2001)} - 1000) / 8.0 AS FLOAT))",
              "array(CAST(-100 AS FLOAT), CAST(-0.0 AS FLOAT), CAST(0.125 AS FLOAT), CAST('NaN' AS FLOAT))"),
    "int_heavy": (f"IF(id % 31 = 0, NULL, IF(id % 5 < 2, 500, {h(3, 1000)}))",
                  "array(0, 100, 500, 500, 500, 500, 501, 999)"),
    "bigint": ("xxhash64(id, 4)", "array(-9223372036854775808L, -1L, 0L, 0L, 4611686018427387904L, 9223372036854775807L)"),
    # U+FFFF and U+1F600 spelled through their UTF-8 bytes (dbt's --args YAML rejects U+FFFF):
    # code point order = UTF-8 byte order puts U+1F600 after U+FFFF (UTF-16 order would not).
    "string": ("IF(id % 23 = 0, NULL, concat('abcdefghijklmnop', element_at(array('', 'a', 'b', 'é', '中', "
               f"{UFFFF}, {EMOJI}, 'zz'), {h(5, 8)} + 1), IF(id % 3 = 0, '', '0')))",
               "array('', 'abcdefghijklmnop', 'abcdefghijklmnopa', 'abcdefghijklmnopé', "
               f"concat('abcdefghijklmnop', {UFFFF}), concat('abcdefghijklmnop', {EMOJI}))"),
    "date": (f"date_add(DATE'2000-01-01', {h(7, 5000)})",
             "array(DATE'2001-01-01', DATE'2005-06-30', DATE'2005-06-30', DATE'2010-01-01')"),
    "timestamp": (f"timestamp_micros(946684800000000 + CAST({h(8, 100000)} AS BIGINT) * 1000003)",
                  "array(TIMESTAMP'2000-01-01 06:00:00', TIMESTAMP'2000-01-01 12:00:00', "
                  "TIMESTAMP'2000-01-01 12:00:00', TIMESTAMP'2000-01-02 00:00:00')"),
    "decimal": (f"CAST(({h(9, 200001)} - 100000) / 100 AS DECIMAL(12, 2))",
                "array(CAST(-500.5 AS DECIMAL(12, 2)), CAST(0 AS DECIMAL(12, 2)), CAST(1.1 AS DECIMAL(12, 2)))"),
    "binary": (f"substr(unhex(lpad(hex({h(10, 1 << 24)}), 6, '0')), 1, 1 + {h(11, 3)})",
               "array(X'7F', X'80', X'80', X'FFFFFF')"),
    "boolean": ("IF(id % 5 = 0, NULL, id % 3 = 0)", "array(false, true, true)"),
    "empty": ("IF(id % 4 = 0, NULL, CAST(id AS DOUBLE))", "CAST(array() AS ARRAY<DOUBLE>)"),
    "one": ("CAST(id % 5 AS INT)", "array(2)"),
}
# Boundaries that differ per row (not a constant): the per-row search path.
PER_ROW = "IF(id % 3 = 0, {b}, slice({b}, 1, 2))"

ERROR_CASES = {
    "err_zorder": ("zorder_key", 4, ["c0"], "SELECT IF(id = 1, -5, 1) AS c0 FROM range(3)",
                   "zorder_key: argument 2 = -5 is outside [0, 15] for bits = 4 (ids must be range_id results "
                   "and bits must cover the number of ranges)"),
    "err_hilbert": ("hilbert_key", 10, ["c0", "c1 + 0"], "SELECT 1 AS c0, IF(id = 2, 1030, 1) AS c1 FROM range(3)",
                    "hilbert_key: argument 3 = 1030 is outside [0, 1023] for bits = 10"),
    "err_bigint_id": ("zorder_key", 4, ["c0"], "SELECT id + 4294967296 AS c0 FROM range(1)",
                      "zorder_key: argument 2 = 4294967296 is outside [0, 15]"),
}
RANGE_ERRORS = {
    "err_null_array": ("CAST(id AS BIGINT)", "IF(id < 0, array(1L), NULL)", "range_id: the boundaries array is NULL"),
    "err_null_element": ("CAST(id AS BIGINT)", "array(1L, NULL, 3L)",
                         "range_id: boundaries[1] (0-based) is NULL; boundaries must not contain NULLs"),
}

ROWS = 1000
V = "curve_sql_"  # prefix of the temporary views


def keys(function, bits, ids, backend="sql"):
    spec = {"function": function, "bits": bits, "ids": ids}
    return {**spec, "backend": backend} if backend else spec


def build_cases() -> list[dict]:
    # Every key shape in one view (one query): ids s<n>_<bits>_c<i>, keys z_<n>_<bits> etc.
    sources, columns = [], {}
    for n, bits in KEY_SHAPES:
        ids = shape_ids(n, bits)
        sources += [id_column(i, bits, alias) for i, alias in enumerate(ids)]
        columns.update({f"z_{n}_{bits}": keys("zorder_key", bits, ids), f"h_{n}_{bits}": keys("hilbert_key", bits, ids),
                        # Non-trivial id expressions: bound once through a lambda, not used as they are.
                        f"zb_{n}_{bits}": keys("zorder_key", bits, [f"{c} + 0" for c in ids]),
                        f"hb_{n}_{bits}": keys("hilbert_key", bits, [f"{c} + 0" for c in ids])})
    cases = [{"name": f"{V}keys", "source": f"SELECT id, {', '.join(sources)} FROM range({ROWS})", "columns": columns}]
    for n, bits in GRIDS:
        mask = (1 << bits) - 1
        cols = ", ".join(f"CAST(shiftright(id, {i * bits}) & {mask} AS INT) AS c{i}" for i in range(n))
        cases.append({"name": f"{V}grid_{n}_{bits}", "source": f"SELECT id, {cols} FROM range({1 << (n * bits)})",
                      "columns": {"k": keys("hilbert_key", bits, [f"c{i}" for i in range(n)])}})
    for name, (value_sql, boundaries_sql) in RANGE_CASES.items():
        cases.append({
            "name": f"{V}range_{name}",
            "source": f"SELECT id, {value_sql} AS v, {boundaries_sql} AS b FROM range({ROWS})",
            "columns": {"k": {"function": "range_id", "value": "v", "boundaries": boundaries_sql, "backend": "sql"},
                        "k_rows": {"function": "range_id", "value": "v", "boundaries": PER_ROW.format(b="b"),
                                   "backend": "sql"}}})
    for name, (function, bits, ids, source, _) in ERROR_CASES.items():
        cases.append({"name": V + name, "source": source, "columns": {"k": keys(function, bits, ids)}})
    for name, (value_sql, boundaries_sql, _) in RANGE_ERRORS.items():
        cases.append({"name": V + name, "source": "SELECT id FROM range(3)",
                      "columns": {"k": {"function": "range_id", "value": value_sql, "boundaries": boundaries_sql,
                                        "backend": "sql"}}})
    top = [f"c{i}" for i in range(7)]
    cases.append({"name": f"{V}top", "source": "SELECT " + ", ".join(f"511 AS {c}" for c in top),
                  "columns": {"z": keys("zorder_key", 9, top), "h": keys("hilbert_key", 9, top)}})
    # No backend given: spark_clustering.udf_backend() decides ('auto').
    cases.append({"name": f"{V}auto_backend", "source": "SELECT 1 AS c0, 2 AS c1",
                  "columns": {"k": keys("zorder_key", 4, ["c0", "c1"], backend=None)}})
    pairs = ", ".join(f"({lo}L, {hi}L)" for lo, hi in ROUNDEST_PAIRS)
    cases.append({"name": f"{V}roundest", "source": f"SELECT * FROM VALUES {pairs} AS t(lo, hi)",
                  "columns": {"k": {"function": "roundest_key", "lo": "lo", "hi": "hi"}}})
    return cases


def roundest_reference(lo: int, hi: int) -> int:
    """The integer in [lo, hi] with the most trailing zero bits (0 counts as the roundest)."""
    if lo <= 0 <= hi:
        return 0
    for b in range(63, -1, -1):
        c = -((-lo) // (1 << b)) * (1 << b)  # the first multiple of 2^b at or above lo
        if c <= hi:
            return c
    raise AssertionError((lo, hi))


def roundest_pairs() -> list[tuple[int, int]]:
    """Windows of sorted sampled keys as _file_routing cuts them: random non-negative keys of
    every width, narrow and wide windows, equal ends, powers of two and their neighbours, 0, the
    largest BIGINT; and negative ranges (no curve key is negative, the helper still answers)."""
    rng = np.random.default_rng(5)
    pairs = [(0, 0), (0, 5), (1, 1), (7, 9), (8, 8), (9, 15), (2**62 - 1, 2**63 - 1), (2**63 - 1, 2**63 - 1),
             (2**40 + 1, 2**41 - 1), (2**40 - 1, 2**40), (-5, -3), (-8, -1), (-9, 4), (-(2**63), -(2**62) - 7)]
    for _ in range(400):
        bits = int(rng.integers(1, 63))
        lo = int(rng.integers(0, 1 << bits))
        span = int(rng.integers(0, 1 << int(rng.integers(0, bits + 1))))
        pairs.append((lo, min(lo + span, 2**63 - 1)))
    return pairs


ROUNDEST_PAIRS = roundest_pairs()


@pytest.fixture(scope="module")
def views(dbt):
    """Render every case with dbt (one run-operation) into temporary views of the shared session."""
    dbt(["run-operation", "curve_key_sql", "--args", json.dumps({"cases": build_cases()}, ensure_ascii=False)])
    return V


@pytest.fixture(scope="module")
def native(spark) -> bool:
    return any(r[0] == "hilbert_key" for r in spark.sql("SHOW FUNCTIONS LIKE 'hilbert_key'").collect())


@pytest.fixture(scope="module")
def key_rows(spark, views, native):
    """All key shapes, SQL fallback (plain and bound ids) and native, in one query."""
    extra = []
    if native:
        for n, bits in KEY_SHAPES:
            cols = ", ".join(shape_ids(n, bits))
            extra += [f"zorder_key({bits}, {cols}) AS nz_{n}_{bits}", f"hilbert_key({bits}, {cols}) AS nh_{n}_{bits}"]
    return spark.sql(f"SELECT * {', ' if extra else ''}{', '.join(extra)} FROM {views}keys").collect()


@pytest.mark.parametrize("n,bits", KEY_SHAPES, ids=[f"n{n}_bits{b}" for n, b in KEY_SHAPES])
def test_sql_keys_match_reference_and_native(key_rows, native, n, bits):
    assert len(key_rows) == ROWS
    nulls = 0
    for r in key_rows:
        ids = [r[c] for c in shape_ids(n, bits)]
        z, h = ref.zorder_key(bits, *ids), ref.hilbert_key(bits, *ids)
        s = f"{n}_{bits}"
        assert (r[f"z_{s}"], r[f"h_{s}"], r[f"zb_{s}"], r[f"hb_{s}"]) == (z, h, z, h), ids
        if native:
            assert (r[f"nz_{s}"], r[f"nh_{s}"]) == (z, h)
        nulls += z is None
    assert 0 < nulls < ROWS // 4
    top = (1 << bits) - 1
    assert any(top in [r[c] for c in shape_ids(n, bits)] for r in key_rows)
    assert any(0 in [r[c] for c in shape_ids(n, bits)] for r in key_rows)


def test_sql_key_types_and_extremes(spark, views):
    row = spark.sql(f"SELECT z, h, typeof(z) AS t FROM {views}top").first()
    assert row.t == "bigint"
    assert row.z == (1 << 63) - 1  # every id at its max: the largest BIGINT key, still positive
    assert row.h == ref.hilbert_key(9, *[511] * 7) and row.h > 0


@pytest.mark.parametrize("n,bits", GRIDS, ids=[f"n{n}_bits{b}" for n, b in GRIDS])
def test_sql_hilbert_walks_the_full_grid(spark, views, n, bits):
    rows = spark.sql(f"SELECT array({', '.join(f'c{i}' for i in range(n))}) AS ids, k "
                     f"FROM {views}grid_{n}_{bits} ORDER BY k").collect()
    assert [r.k for r in rows] == list(range(1 << (n * bits))), "not a bijection"
    walk = np.array([r.ids for r in rows])
    assert np.abs(np.diff(walk, axis=0)).sum(axis=1).tolist() == [1] * (len(rows) - 1)
    assert walk[0].tolist() == [0] * n


@pytest.mark.parametrize("case", list(RANGE_CASES))
def test_sql_range_id_matches_reference_and_native(spark, views, native, case):
    _, boundaries_sql = RANGE_CASES[case]
    extra = (f", range_id(v, {boundaries_sql}) AS native_k, range_id(v, {PER_ROW.format(b='b')}) AS native_rows"
             if native else "")
    rows = spark.sql(f"SELECT id, v, b, k, k_rows{extra} FROM {views}range_{case}").collect()
    assert len(rows) == ROWS
    bounds = rows[0].b
    for r in rows:
        assert r.k == ref.range_id(r.v, bounds), (r.v, r.k)
        assert r.k_rows == ref.range_id(r.v, bounds if r.id % 3 == 0 else bounds[:2]), (r.v, r.k_rows)
        if native:
            assert (r.k, r.k_rows) == (r.native_k, r.native_rows)
    assert len({r.k for r in rows}) >= {"empty": 1, "one": 2}.get(case, 3)


@pytest.mark.parametrize("name", list(ERROR_CASES) + list(RANGE_ERRORS))
def test_sql_runtime_errors_have_the_native_text(spark, views, name):
    text = (ERROR_CASES.get(name) or RANGE_ERRORS[name])[-1]
    with pytest.raises(Exception) as info:
        spark.sql(f"SELECT k FROM {views}{name}").collect()
    assert text in str(info.value)


def test_auto_backend_uses_the_native_functions_when_loaded(spark, views, native):
    plan = spark.sql(f"EXPLAIN EXTENDED SELECT k FROM {views}auto_backend").first()[0]
    analyzed = plan.split("== Analyzed Logical Plan ==")[1].split("== Optimized Logical Plan ==")[0]
    if native:
        assert "zorder_key(4, c0" in analyzed and "shiftleft" not in analyzed
    else:
        assert "shiftleft" in analyzed
    assert spark.sql(f"SELECT k FROM {views}auto_backend").first().k == ref.zorder_key(4, 1, 2)


COMPILE_ERRORS = [
    ({"function": "zorder_key", "bits": 0, "ids": ["a"]},
     "spark_clustering.zorder_key: argument 'bits' must be an integer between 1 and 31, but got \"0\"; "
     "pass the bits per id, e.g. spark_clustering.zorder_key(10, ['id_a', 'id_b'])"),
    ({"function": "hilbert_key", "bits": 1, "ids": [f"c{i}" for i in range(33)]},
     "spark_clustering.hilbert_key: argument 'id_sqls' must hold 1 to 32 id expressions, but got 33"),
    ({"function": "zorder_key", "bits": 16, "ids": ["a", "b", "c", "d"], "backend": "sql"},
     "spark_clustering.zorder_key: the SQL fallback builds BIGINT keys only, so ids * bits must be <= 63, "
     "but got 4 ids * 16 bits = 64; lower bits to 15 or less, or enable the native functions (spark.jars="),
]


def run_failing(dbt, capfd, spec, vars=None) -> str:
    """Run one case that must fail at compile time; returns what dbt printed (the error is there:
    a failed run-operation reports no message in its result)."""
    capfd.readouterr()
    case = {"name": f"{V}never_created", "columns": {"k": spec}}
    dbt(["run-operation", "curve_key_sql", "--args", json.dumps({"cases": [case]})], vars=vars, expect_success=False)
    out = capfd.readouterr()
    return out.out + out.err


@pytest.mark.parametrize("spec,text", COMPILE_ERRORS, ids=["bits", "ids_33", "sql_63_bits"])
def test_compile_time_errors(dbt, capfd, spec, text):
    assert text in run_failing(dbt, capfd, spec)


def test_invalid_backend_var(dbt, capfd):
    spec = {"function": "range_id", "value": "v", "boundaries": "b"}
    printed = run_failing(dbt, capfd, spec, vars={"spark_clustering_udf_backend": "gpu"})
    assert ("spark_clustering: var 'spark_clustering_udf_backend' is \"gpu\", but it must be one of "
            "auto, native, python, sql") in printed


def test_file_cuts_move_to_the_roundest_key_of_their_window(spark, views):
    """_file_routing moves each file cut to the key of its window with the most trailing zero bits."""
    rows = spark.sql(f"SELECT lo, hi, k FROM {views}roundest").collect()
    assert len(rows) == len(ROUNDEST_PAIRS)
    for r in rows:
        assert r.lo <= r.k <= r.hi and r.k == roundest_reference(r.lo, r.hi), (r.lo, r.hi, r.k)
