"""Slow, obviously-correct scalar versions of range_id / zorder_key / hilbert_key (for tests).

Written straight from the specification, one row at a time with Python integers, so that the
vectorized numpy code, the SQL fallback and the native functions can all be checked against it.
"""
from __future__ import annotations

import datetime as _dt
import functools
import math

from spark_clustering_udfs.curves import (
    BIGINT_KEY_BITS,
    NULL_BOUNDARIES_ERROR,
    CurveArgumentError,
    check_arity,
    check_bits,
    id_error,
    null_boundary_error,
)


# ----------------------------------------------------------------------------------------------
# Spark's ordering, written out
# ----------------------------------------------------------------------------------------------

def _rank(value):
    """A sort key equal to Spark's ascending order for one value type (non-null values)."""
    if isinstance(value, float):
        if math.isnan(value):
            return (1, 0.0)  # NaN is greater than +Infinity, and NaN = NaN
        return (0, value + 0.0)  # -0.0 = 0.0
    if isinstance(value, str):
        return value.encode("utf-8")  # full strings, unsigned bytes
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return value
    if isinstance(value, _dt.date):
        return _dt.datetime(value.year, value.month, value.day)
    return value  # int, bool, Decimal, bytes compare correctly as they are


def spark_compare(a, b) -> int:
    """-1 / 0 / 1 like Spark's ordering (non-null values)."""
    if isinstance(a, float) or isinstance(b, float):  # int vs double widens to double
        a, b = float(a), float(b)
    ra, rb = _rank(a), _rank(b)
    return (ra > rb) - (ra < rb)


def spark_sorted(values):
    return sorted(values, key=functools.cmp_to_key(spark_compare))


def range_id(value, boundaries) -> int:
    """0 for NULL, else 1 + the number of boundaries b with b <= value. NULLs in or as the
    boundaries are errors."""
    if boundaries is None:
        raise CurveArgumentError(NULL_BOUNDARIES_ERROR)
    for index, b in enumerate(boundaries):
        if b is None:
            raise CurveArgumentError(null_boundary_error(index))
    if value is None:
        return 0
    count = 0
    for b in boundaries:
        if spark_compare(b, value) <= 0:
            count += 1
    return 1 + count


# ----------------------------------------------------------------------------------------------
# Keys
# ----------------------------------------------------------------------------------------------

def _check(function, bits, ids):
    """Bits and arity always; the ids only when none is NULL (a NULL id makes the key NULL)."""
    bits = check_bits(function, bits)
    check_arity(function, len(ids))
    if any(v is None for v in ids):
        return bits
    for position, value in enumerate(ids, start=1):
        if not 0 <= value < (1 << bits):
            raise CurveArgumentError(id_error(function, bits, position, value))
    return bits


def _to_key(key: int, bits: int, n: int):
    """BIGINT (a Python int) when n*bits <= 63, else big-endian bytes of ceil(n*bits/8)."""
    if n * bits <= BIGINT_KEY_BITS:
        return key
    return key.to_bytes((n * bits + 7) // 8, "big")


def interleave(X, bits: int) -> int:
    """Bit L of X[i] (0-based i) goes to position L*n + (n-1-i)."""
    n = len(X)
    key = 0
    for L in range(bits - 1, -1, -1):
        for i in range(n):
            key |= ((X[i] >> L) & 1) << (L * n + (n - 1 - i))
    return key


def zorder_key(bits, *ids):
    bits = _check("zorder_key", bits, ids)
    if any(v is None for v in ids):
        return None
    return _to_key(interleave([int(v) for v in ids], bits), bits, len(ids))


def axes_to_transpose(X, b):
    """John Skilling, "Programming the Hilbert curve" (2004), AxesToTranspose."""
    n = len(X)
    M = 1 << (b - 1)
    Q = M
    while Q > 1:
        P = Q - 1
        for i in range(n):
            if X[i] & Q:
                X[0] ^= P
            else:
                t = (X[0] ^ X[i]) & P
                X[0] ^= t
                X[i] ^= t
        Q >>= 1
    for i in range(1, n):
        X[i] ^= X[i - 1]
    t = 0
    Q = M
    while Q > 1:
        if X[n - 1] & Q:
            t ^= Q - 1
        Q >>= 1
    for i in range(n):
        X[i] ^= t
    return X


def hilbert_key(bits, *ids):
    bits = _check("hilbert_key", bits, ids)
    if any(v is None for v in ids):
        return None
    X = [int(v) for v in ids]
    if len(X) > 1:
        X = axes_to_transpose(X, bits)
    return _to_key(interleave(X, bits), bits, len(X))


def key_as_int(key) -> int | None:
    """BIGINT or BINARY key -> the unsigned integer it encodes (for order comparisons)."""
    if key is None:
        return None
    if isinstance(key, (bytes, bytearray, memoryview)):
        return int.from_bytes(bytes(key), "big")
    return int(key)


__all__ = ["range_id", "zorder_key", "hilbert_key", "axes_to_transpose", "interleave",
           "spark_compare", "spark_sorted", "key_as_int"]
