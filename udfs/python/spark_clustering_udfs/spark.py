"""Arrow-vectorized Spark UDFs: `{prefix}range_id`, `{prefix}zorder_key`, `{prefix}hilbert_key`.

Each function is a scalar Arrow UDF (`pyspark.sql.functions.arrow_udf`, Spark 4.x): Spark ships
record batches, the UDF gets `pyarrow.Array`s and answers with one, and all the work is numpy over
the whole batch (curves.py). Arrow in and out rather than pandas: no pandas conversion per batch
(pandas 3 is only partly supported by pyspark), and the BINARY keys are built straight into one
Arrow buffer instead of one Python `bytes` object per row.

Variadic SQL signature. A Python UDF's declared arity is not checked by Spark: an UDF defined as
`f(*cols)` and registered with `spark.udf.register` accepts any number of arguments in SQL, so
`zorder_key(bits, id_1, ..., id_n)` works as is for n = 1..32.

BIGINT or BINARY. The key type depends on n*bits, while a registered Python UDF has ONE declared
return type. In a classic (py4j) session, `register` therefore installs a function *builder* in the
session's function registry (the same registry `spark.udf.register` writes to): at analysis time
it reads the constant `bits` argument and the number of ids and builds the call of the BIGINT
twin (n*bits <= 63) or of the BINARY twin of the UDF. Both twins run the same Python code, and the
SQL name is the one asked for. The builder runs on the driver through py4j's callback server
(`pyspark.java_gateway.ensure_callback_server_started`, as streaming's foreachBatch does). Where
that is not possible (Spark Connect, no JVM), the function is registered with `spark.udf.register`
as BIGINT only, and a call with n*bits > 63 fails with a message that says so.
"""
from __future__ import annotations

import logging
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_clustering_udfs import curves
from spark_clustering_udfs.curves import CurveArgumentError

log = logging.getLogger(__name__)

KEY_FUNCTIONS = ("zorder_key", "hilbert_key")


# ----------------------------------------------------------------------------------------------
# Arrow -> sortable numpy
# ----------------------------------------------------------------------------------------------

def _nulls(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.zeros(len(arr), dtype=bool)
    return arr.is_null().to_numpy(zero_copy_only=False)


def _decimal_unscaled(arr: pa.Array) -> np.ndarray | None:
    """Unscaled int64 values of a decimal128 array of precision <= 18 (exact), else None."""
    t = arr.type
    if not (pa.types.is_decimal128(t) and t.precision <= 18) or arr.buffers()[1] is None:
        return None
    words = np.frombuffer(arr.buffers()[1], dtype="<i8")  # 16-byte little-endian values
    return words[2 * arr.offset: 2 * (arr.offset + len(arr)): 2].copy()


def _sortable(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(numpy array whose numpy order is Spark's order, null mask) for one Arrow array."""
    t = arr.type
    nulls = _nulls(arr)
    if pa.types.is_null(t):
        return np.zeros(len(arr), dtype=np.int64), np.ones(len(arr), dtype=bool)
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        return pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(), nulls
    if pa.types.is_floating(t):
        # + 0.0 folds -0.0 into 0.0; numpy already orders NaN last with NaN = NaN, like Spark.
        return pc.fill_null(arr.cast(pa.float64()), 0.0).to_numpy() + 0.0, nulls
    if pa.types.is_date(t):
        arr = arr.cast(pa.timestamp("us"))
        t = arr.type
    if pa.types.is_timestamp(t):
        micros = arr.cast(pa.timestamp("us", tz=t.tz)).cast(pa.int64())
        return pc.fill_null(micros, 0).to_numpy(), nulls
    # Strings (code point order = UTF-8 byte order), binary, decimals: Python objects.
    out = arr.to_numpy(zero_copy_only=False).astype(object)
    if nulls.any():
        present = out[~nulls]
        out[nulls] = present[0] if len(present) else 0
    return out, nulls


def _sortable_pair(values: pa.Array, bounds: pa.Array):
    """Sortable numpy for the values and the flattened boundaries, on one comparable scale."""
    if pa.types.is_decimal(values.type) and pa.types.is_decimal(bounds.type) \
            and values.type.scale == bounds.type.scale:
        v, b = _decimal_unscaled(values), _decimal_unscaled(bounds)
        if v is not None and (b is not None or len(bounds) == 0):  # exact int64 fast path
            return (v, _nulls(values)), (b if b is not None else v[:0], _nulls(bounds))
    return _sortable(values), _sortable(bounds)


def _byte_width(t: pa.DataType) -> int:
    """Bytes per value of a fixed-width type (0 for variable-width or bit-packed types)."""
    try:
        bits = t.bit_width
    except ValueError:  # variable width
        return 0
    return bits // 8 if bits % 8 == 0 else 0


def _chunks_equal(raw: np.ndarray, rows: int, width: int) -> bool:
    """Are the `rows` consecutive `width`-byte chunks of `raw` all equal to the first one?"""
    raw = raw.reshape(rows, width)
    for unit in (np.uint64, np.uint32, np.uint16):  # compare in the widest words that fit
        size = np.dtype(unit).itemsize
        if width % size == 0:
            raw = np.ascontiguousarray(raw).view(unit)
            break
    return bool((raw == raw[0]).all())


def _rows_identical(flat: pa.Array, rows: int, k: int) -> bool:
    """True when the `rows` consecutive chunks of length k of `flat` are byte-for-byte equal.

    A cheap numpy comparison of the raw Arrow buffers; "False" only costs the general path.
    """
    if rows <= 1 or k == 0:
        return True
    if flat.null_count:
        nulls = _nulls(flat).reshape(rows, k)
        if not (nulls == nulls[0]).all():
            return False
        flat = pc.fill_null(flat, flat.drop_null()[0]) if len(flat.drop_null()) else flat
    t = flat.type
    bufs = flat.buffers()
    if pa.types.is_boolean(t):
        v = flat.to_numpy(zero_copy_only=False).reshape(rows, k)
        return bool((v == v[0]).all())
    w = _byte_width(t)
    if w and bufs[1] is not None:
        raw = np.frombuffer(bufs[1], dtype=np.uint8)[flat.offset * w:(flat.offset + len(flat)) * w]
        return _chunks_equal(raw, rows, k * w)
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) \
            or pa.types.is_large_binary(t):
        odt = np.int64 if (pa.types.is_large_string(t) or pa.types.is_large_binary(t)) else np.int32
        offs = np.frombuffer(bufs[1], dtype=odt)[flat.offset:flat.offset + len(flat) + 1].astype(np.int64)
        lens = np.diff(offs).reshape(rows, k)
        if not (lens == lens[0]).all():
            return False
        per_row = int(lens[0].sum())
        if per_row == 0:
            return True
        return _chunks_equal(np.frombuffer(bufs[2], dtype=np.uint8)[offs[0]:offs[-1]], rows, per_row)
    return False


def range_id_batch(values: pa.Array, boundaries: pa.Array) -> pa.Array:
    """Range ids of one batch (NULL boundaries arrays or elements fail like the native function)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(boundaries, pa.ChunkedArray):
        boundaries = boundaries.combine_chunks()
    if boundaries.null_count or pa.types.is_null(boundaries.type):
        raise CurveArgumentError(curves.NULL_BOUNDARIES_ERROR)
    rows = len(values)
    if rows == 0:
        return pa.array([], type=pa.int32())
    lengths = pc.list_value_length(boundaries).to_numpy().astype(np.int64)
    flat = boundaries.flatten()  # honours slicing
    k = int(lengths[0])
    if (lengths == k).all() and _rows_identical(flat, rows, k):
        # The usual case (a literal / broadcast array, shipped once per row): convert the first
        # row's boundaries only and search the whole batch against them at once.
        (vals, vnull), (bounds, bnull) = _sortable_pair(values, flat.slice(0, k))
        ids = curves.count_le(vals, vnull, bounds, bnull)
    else:
        (vals, vnull), (bounds, bnull) = _sortable_pair(values, flat)
        ids = curves.count_le_rows(vals, vnull, bounds, bnull, lengths)
    return pa.array(ids, type=pa.int32())


# ----------------------------------------------------------------------------------------------
# Keys
# ----------------------------------------------------------------------------------------------

def _id_column(function: str, position: int, arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values with NULLs as 0, null mask) of the `position`-th id (1-based)."""
    nulls = _nulls(arr)
    t = arr.type
    if pa.types.is_null(t):
        return np.zeros(len(arr), dtype=np.int64), nulls
    if not pa.types.is_integer(t):
        raise CurveArgumentError(curves.id_type_error(function, position, str(t)))
    return pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(), nulls


def _bits_values(function: str, arr: pa.Array) -> np.ndarray:
    if arr.null_count:
        raise CurveArgumentError(curves.bits_error(function, None))
    if not pa.types.is_integer(arr.type):
        raise CurveArgumentError(curves.bits_error(function, arr[0].as_py() if len(arr) else None))
    return arr.cast(pa.int64()).to_numpy()


def key_batch(function: str, binary: bool, cols) -> pa.Array:
    """Keys of one batch; `binary` is the declared return type (False: BIGINT)."""
    cols = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in cols]
    n = len(cols) - 1
    curves.check_arity(function, n)
    rows = len(cols[0])
    bits_np = _bits_values(function, cols[0])
    ids, nulls = zip(*(_id_column(function, p, c) for p, c in enumerate(cols[1:], start=1)))
    any_null = np.logical_or.reduce(nulls)
    distinct = np.unique(bits_np).tolist()
    if len(distinct) > 1 and binary:
        raise CurveArgumentError(curves.bits_not_constant_error(function, "(a column)"))
    out = None if binary else np.zeros(rows, dtype=np.int64)
    for bits in distinct:
        curves.check_bits(function, bits)
        if curves.key_is_bigint(bits, n) == binary:
            raise CurveArgumentError(
                f"{function}: n*bits = {n}*{bits} = {n * bits} needs a "
                f"{'BIGINT' if binary else 'BINARY'} key, but this Python registration returns "
                f"{'BINARY' if binary else 'BIGINT'} only; pass bits as a literal in a classic "
                "SparkSession (the result type is then chosen per call) or lower bits so that "
                "n*bits <= 63")
        if len(distinct) == 1:
            group_ids, group_nulls = ids, nulls
        else:  # bits varies per row: only possible in the BIGINT-only fallback registration
            rows_mask = bits_np == bits
            group_ids = [c[rows_mask] for c in ids]
            group_nulls = [m[rows_mask] for m in nulls]
        curves.check_ids(function, bits, group_ids, group_nulls)
        matrix = curves.hilbert_matrix if function == "hilbert_key" else curves.zorder_matrix
        keys = matrix(bits, group_ids)
        if binary or len(distinct) == 1:
            out = keys  # int64 keys, or the (rows, width) uint8 matrix
        else:
            out[bits_np == bits] = keys
    if not binary:
        return pa.array(out, type=pa.int64(), mask=any_null if any_null.any() else None)
    width = out.shape[1]
    validity = pa.array(~any_null).buffers()[1] if any_null.any() else None
    fixed = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), rows, [validity, pa.py_buffer(np.ascontiguousarray(out).tobytes())],
        null_count=int(any_null.sum()))
    return fixed.cast(pa.binary())


# ----------------------------------------------------------------------------------------------
# Registration
# ----------------------------------------------------------------------------------------------

def _named(fn: Callable, name: str) -> Callable:
    fn.__name__ = fn.__qualname__ = name
    return fn


def _key_udf(function: str, name: str, binary: bool):
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.types import BinaryType, LongType

    def key(*cols: pa.Array) -> pa.Array:
        return key_batch(function, binary, cols)

    return arrow_udf(_named(key, name), BinaryType() if binary else LongType())


def _range_udf(name: str):
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.types import IntegerType

    def range_id(values: pa.Array, boundaries: pa.Array) -> pa.Array:
        return range_id_batch(values, boundaries)

    return arrow_udf(_named(range_id, name), IntegerType())


class _KeyBuilder:
    """py4j proxy of java.util.function.Function[Seq[Expression], Expression]: picks the twin."""

    def __init__(self, bigint_judf, binary_judf):
        self._bigint = bigint_judf
        self._binary = binary_judf

    def apply(self, children):
        # Never raise here (a Python exception would surface as an opaque py4j error): any
        # argument problem is reported by the UDF itself, with its own message, when it runs.
        try:
            n = children.size() - 1
            first = children.apply(0) if n >= 0 else None
            bits = first.eval(None) if first is not None and first.foldable() else None
            if isinstance(bits, int) and not isinstance(bits, bool) \
                    and 1 <= bits <= curves.MAX_BITS and 1 <= n <= curves.MAX_IDS \
                    and not curves.key_is_bigint(bits, n):
                return self._binary.builder(children)
        except Exception:  # pragma: no cover - defensive
            log.exception("spark_clustering_udfs: key builder failed; using the BIGINT UDF")
        return self._bigint.builder(children)

    class Java:
        implements = ["java.util.function.Function"]


def _register_typed_dispatch(spark, name: str, bigint_udf, binary_udf) -> bool:
    """Install `name` with a return type chosen per call (classic sessions only)."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return False
    try:
        from pyspark.java_gateway import ensure_callback_server_started

        sc = spark.sparkContext
        ensure_callback_server_started(sc._gateway)
        builder = _KeyBuilder(bigint_udf._unwrapped._judf, binary_udf._unwrapped._judf)
        scala_fn = sc._jvm.scala.jdk.FunctionWrappers.FromJavaFunction(builder)
        jsession.sessionState().functionRegistry().createOrReplaceTempFunction(
            name, scala_fn, "python_udf")
        # Keep the proxy alive on the Python side for the life of the registration.
        _BUILDERS[(id(spark), name)] = builder
        return True
    except Exception as exc:  # noqa: BLE001 - any failure falls back to a BIGINT-only UDF
        log.warning("spark_clustering_udfs: per-call return type unavailable for %s (%s); "
                    "registering it as BIGINT only (n*bits <= 63)", name, exc)
        return False


_BUILDERS: dict = {}


def _ship_by_value() -> None:
    """Pickle this package's code by value, so Python workers need numpy + pyarrow, not the package."""
    import sys

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules["spark_clustering_udfs"])


def register(spark, prefix: str = "") -> dict[str, str]:
    """Register `{prefix}range_id`, `{prefix}zorder_key`, `{prefix}hilbert_key` on `spark`.

    Returns {sql name: return type}: "int" for range_id; for the keys "bigint|binary" (type
    chosen per call from n*bits, classic sessions) or "bigint" (fallback, n*bits <= 63 only).
    """
    _ship_by_value()
    registered = {}
    name = f"{prefix}range_id"
    spark.udf.register(name, _range_udf(name))
    registered[name] = "int"
    for function in KEY_FUNCTIONS:
        name = f"{prefix}{function}"
        bigint_udf = _key_udf(function, name, binary=False)
        binary_udf = _key_udf(function, name, binary=True)
        if _register_typed_dispatch(spark, name, bigint_udf, binary_udf):
            registered[name] = "bigint|binary"
        else:
            spark.udf.register(name, bigint_udf)
            registered[name] = "bigint"
    return registered
