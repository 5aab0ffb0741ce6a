"""Vectorized (numpy) range ids and Z-order / Hilbert keys.

Semantics are shared bit for bit with the native Scala functions and the SQL fallback macros:

* ``range_id(value, boundaries)``: NULL -> 0, else ``1 + #{b in boundaries : b <= value}`` under
  Spark's ordering (NaN greatest and NaN = NaN, -0.0 = 0.0, strings by code point = UTF-8 bytes);
  a NULL boundaries array or a NULL element in it is an error.
* ``zorder_key(bits, id_1..id_n)``: bit ``L`` of ``id_i`` (1-based ``i``) lands at position
  ``L*n + (n - i)``; a BIGINT when ``n*bits <= 63``, else a big-endian unsigned byte string of
  ``ceil(n*bits/8)`` bytes (left-padded with zero bits), so byte order = key order.
* ``hilbert_key``: Skilling's AxesToTranspose on ``[id_1..id_n]``, then the Z-order interleave of the
  transposed axes; ``n = 1`` gives the id itself.

Every function here works on whole arrays: loops run over bit levels and dimensions, never rows.
The key functions take non-null ids (``spark.py`` masks NULL rows); the error messages are the
native functions' texts.
"""
from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from typing import Sequence

import numpy as np

MAX_BITS = 31
MAX_IDS = 32
BIGINT_KEY_BITS = 63


class CurveArgumentError(ValueError):
    """An argument of range_id / zorder_key / hilbert_key is outside its allowed domain."""


# ----------------------------------------------------------------------------------------------
# Argument checks (messages are shared with reference.py and the SQL fallback macros)
# ----------------------------------------------------------------------------------------------

def usage(function: str) -> str:
    return f"call {function}(bits, id_1, ..., id_n), e.g. {function}(10, id_a, id_b)"


def bits_error(function: str, bits: object) -> str:
    shown = "NULL" if bits is None else bits
    return (f"{function}: bits (argument 1) must be between 1 and {MAX_BITS}, but got {shown}; use the "
            "smallest bits with 2^bits > the largest range_id (number of boundaries + 1)")


def bits_not_constant_error(function: str, expression: str) -> str:
    return (f"{function}: bits (argument 1) must be a constant INT literal between 1 and {MAX_BITS}, "
            f"but got the non-constant expression {expression}; pass the bits per id as a literal: "
            f"{usage(function)}")


def arity_error(function: str, n: int) -> str:
    return f"{function} takes 1 to {MAX_IDS} id arguments after bits, but got {n}; {usage(function)}"


def id_error(function: str, bits: int, position: int, value: object) -> str:
    """`position` is the 1-based index of the id; the argument number counts bits as argument 1."""
    return (f"{function}: argument {position + 1} = {value} is outside [0, {(1 << bits) - 1}] for "
            f"bits = {bits} (ids must be range_id results and bits must cover the number of ranges)")


def id_type_error(function: str, position: int, type_name: str) -> str:
    return (f"{function}: argument {position + 1} must be an integral type (TINYINT, SMALLINT, INT or "
            f"BIGINT), but got {type_name}")


NULL_BOUNDARIES_ERROR = (
    "range_id: the boundaries array is NULL; pass a non-NULL ARRAY of sorted boundaries "
    "(an empty array() puts every non-NULL value in range 1)")


def null_boundary_error(index: int) -> str:
    return (f"range_id: boundaries[{index}] (0-based) is NULL; boundaries must not contain NULLs "
            "(drop NULLs when computing the boundaries, NULL values get range 0 anyway)")


def check_bits(function: str, bits: object) -> int:
    if isinstance(bits, (bool, np.bool_)) or not isinstance(bits, (int, np.integer)) \
            or not 1 <= int(bits) <= MAX_BITS:
        raise CurveArgumentError(bits_error(function, bits))
    return int(bits)


def check_arity(function: str, n: int) -> None:
    if not 1 <= n <= MAX_IDS:
        raise CurveArgumentError(arity_error(function, n))


def key_is_bigint(bits: int, n: int) -> bool:
    """True when the key fits a signed 64-bit BIGINT (n*bits <= 63), else it is BINARY."""
    return n * bits <= BIGINT_KEY_BITS


def key_bytes(bits: int, n: int) -> int:
    """Length of the BINARY key: ceil(n*bits / 8)."""
    return (n * bits + 7) // 8


def _as_id_columns(function: str, bits: int, ids: Sequence) -> list[np.ndarray]:
    """Validate non-null id arrays and convert them to int64 arrays of one common length."""
    check_arity(function, len(ids))
    cols = []
    for position, col in enumerate(ids, start=1):
        arr = np.asarray(col)
        if arr.ndim == 0:
            arr = arr.reshape(1)
        if arr.dtype.kind == "O" and all(isinstance(v, (int, np.integer)) for v in arr.tolist()):
            arr = arr.astype(np.int64) if len(arr) else arr.astype(np.int64)
        if arr.dtype.kind not in "iu":
            raise CurveArgumentError(id_type_error(function, position, str(arr.dtype)))
        cols.append(arr)
    size = max(len(c) for c in cols)
    if any(len(c) not in (1, size) for c in cols):
        raise ValueError(f"{function}: id arrays have different lengths {[len(c) for c in cols]}")
    cols = [np.broadcast_to(c, size) if len(c) == 1 else c for c in cols]
    check_ids(function, bits, cols)
    return [c.astype(np.int64) for c in cols]


def check_ids(function: str, bits: int, cols: Sequence[np.ndarray], nulls=None) -> None:
    """Raise for the first row (then the first id in it) holding an id outside [0, 2^bits).

    Rows where any id is NULL (`nulls`: per-id masks) give NULL and are not checked.
    """
    top = (1 << bits) - 1
    bad = np.stack([(c < 0) | (c > top) for c in cols])  # (n, rows)
    if nulls is not None:
        bad &= ~np.logical_or.reduce(nulls)
    if bad.any():
        row = int(np.argmax(bad.any(axis=0)))
        position = int(np.argmax(bad[:, row]))
        raise CurveArgumentError(id_error(function, bits, position + 1, int(cols[position][row])))


# ----------------------------------------------------------------------------------------------
# Interleaving
# ----------------------------------------------------------------------------------------------

def interleave_bigint(bits: int, cols: Sequence[np.ndarray]) -> np.ndarray:
    """Z-order interleave of n int64 columns into one int64 key (requires n*bits <= 63)."""
    n = len(cols)
    assert key_is_bigint(bits, n)
    key = np.zeros(len(cols[0]), dtype=np.int64)
    for level in range(bits):
        mask = np.int64(1 << level)
        for i, col in enumerate(cols):  # i is 0-based: bit `level` of col goes to level*n + n-1-i
            shift = level * (n - 1) + (n - 1 - i)
            key |= (col & mask) << np.int64(shift)
    return key


def interleave_bytes(bits: int, cols: Sequence[np.ndarray]) -> np.ndarray:
    """Z-order interleave into a (rows, ceil(n*bits/8)) uint8 matrix, big-endian per row."""
    n = len(cols)
    width = key_bytes(bits, n)
    out = np.zeros((len(cols[0]), width), dtype=np.uint8)
    for level in range(bits):
        for i, col in enumerate(cols):
            pos = level * n + (n - 1 - i)
            bit = ((col >> np.int64(level)) & 1).astype(np.uint8)
            out[:, width - 1 - pos // 8] |= bit << np.uint8(pos % 8)
    return out


def bytes_rows(matrix: np.ndarray) -> np.ndarray:
    """(rows, width) uint8 matrix -> object array of `bytes` (convenience for callers and tests)."""
    raw = matrix.tobytes()
    width = matrix.shape[1]
    return np.array([raw[r * width:(r + 1) * width] for r in range(matrix.shape[0])], dtype=object)


def axes_to_transpose(bits: int, cols: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Skilling's AxesToTranspose applied to every row at once (returns new arrays)."""
    x = [np.array(c, dtype=np.int64, copy=True) for c in cols]
    n = len(x)
    top = 1 << (bits - 1)
    q = top
    while q > 1:  # inverse undo: for each bit level from the top, for each axis in order
        p = np.int64(q - 1)
        for i in range(n):
            hit = (x[i] & q) != 0
            if i == 0:
                x[0] ^= np.where(hit, p, np.int64(0))  # the else branch is a no-op when i == 0
                continue
            t = np.where(hit, np.int64(0), (x[0] ^ x[i]) & p)  # exchange low bits where not hit
            x[0] ^= np.where(hit, p, t)  # invert low bits of x[0] where hit
            x[i] ^= t
        q >>= 1
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = top
    while q > 1:
        t ^= np.where((x[n - 1] & q) != 0, np.int64(q - 1), np.int64(0))
        q >>= 1
    for i in range(n):
        x[i] ^= t
    return x


def zorder_matrix(bits: int, cols: Sequence[np.ndarray]) -> np.ndarray:
    """int64 keys (n*bits <= 63) or the (rows, width) uint8 matrix, from validated int64 columns."""
    if key_is_bigint(bits, len(cols)):
        return interleave_bigint(bits, cols)
    return interleave_bytes(bits, cols)


def hilbert_matrix(bits: int, cols: Sequence[np.ndarray]) -> np.ndarray:
    """Like zorder_matrix, for the Hilbert key."""
    if len(cols) == 1:
        cols = [np.asarray(cols[0], dtype=np.int64)]
    else:
        cols = axes_to_transpose(bits, cols)
    return zorder_matrix(bits, cols)


def zorder_key(bits: int, *ids) -> np.ndarray:
    """Z-order keys of equally long id arrays: int64 array, or object array of `bytes` when n*bits > 63."""
    bits = check_bits("zorder_key", bits)
    cols = _as_id_columns("zorder_key", bits, ids)
    keys = zorder_matrix(bits, cols)
    return keys if keys.ndim == 1 else bytes_rows(keys)


def hilbert_key(bits: int, *ids) -> np.ndarray:
    """Hilbert keys of equally long id arrays: int64 array, or object array of `bytes` when n*bits > 63."""
    bits = check_bits("hilbert_key", bits)
    cols = _as_id_columns("hilbert_key", bits, ids)
    keys = hilbert_matrix(bits, cols)
    return keys if keys.ndim == 1 else bytes_rows(keys)


# ----------------------------------------------------------------------------------------------
# Range ids
# ----------------------------------------------------------------------------------------------

_EPOCH = _dt.datetime(1970, 1, 1)


def _micros(value: _dt.date) -> int:
    """Microseconds since the epoch (dates at midnight; aware datetimes in UTC)."""
    if not isinstance(value, _dt.datetime):
        value = _dt.datetime(value.year, value.month, value.day)
    elif value.tzinfo is not None:
        value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, _decimal.Decimal)


def sortable(values) -> tuple[np.ndarray, np.ndarray]:
    """(array whose numpy order is Spark's order, null mask) for a 1-D array or list of values.

    floats -> float64 with -0.0 folded into 0.0 (numpy already orders NaN last with NaN = NaN);
    integers / booleans -> int64; datetime64, dates and datetimes -> int64 microseconds since the
    epoch (dates at midnight UTC); str / bytes / Decimal stay Python objects (str compares by code
    point = UTF-8 byte order, bytes unsigned, Decimal exactly, whatever the scale). None is NULL.
    """
    arr = np.asarray(values) if not isinstance(values, list) else np.array(values, dtype=object)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    kind = arr.dtype.kind
    no_nulls = np.zeros(len(arr), dtype=bool)
    if kind == "f":
        return arr.astype(np.float64) + 0.0, no_nulls  # x + 0.0 turns -0.0 into 0.0
    if kind in "iub":
        return arr.astype(np.int64), no_nulls
    if kind == "M":
        return arr.astype("datetime64[us]").view(np.int64), np.isnat(arr)
    if kind == "U":
        return arr.astype(object), no_nulls
    if kind != "O":
        raise TypeError(f"range_id: unsupported value type {arr.dtype}")
    items = arr.tolist()
    nulls = np.array([v is None for v in items], dtype=bool)
    present = [v for v in items if v is not None]
    if not present:
        return np.zeros(len(arr), dtype=np.int64), nulls
    if all(_is_number(v) for v in present):
        if any(isinstance(v, (float, np.floating)) for v in present):
            return np.array([0.0 if v is None else float(v) for v in items]) + 0.0, nulls
        return np.array([0 if v is None else int(v) for v in items], dtype=np.int64), nulls
    if all(isinstance(v, _dt.date) for v in present):
        return np.array([0 if v is None else _micros(v) for v in items], dtype=np.int64), nulls
    out = np.empty(len(items), dtype=object)
    out[:] = [present[0] if v is None else v for v in items]  # same-type filler for NULL slots
    return out, nulls


def _common(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Make two sortable arrays comparable (integers vs floats -> float64, like Spark's widening)."""
    if a.dtype == b.dtype:
        return a, b
    if len(b) == 0:
        return a, b.astype(a.dtype)
    if a.dtype.kind in "if" and b.dtype.kind in "if":
        return a.astype(np.float64), b.astype(np.float64)
    return a.astype(object), b.astype(object)


def count_le(vals: np.ndarray, vnull: np.ndarray, bounds: np.ndarray, bnull: np.ndarray) -> np.ndarray:
    """Range ids against ONE boundaries array: a single binary search for the whole batch."""
    if bnull.any():
        raise CurveArgumentError(null_boundary_error(int(np.argmax(bnull))))
    if vnull.all():  # nothing to compare (and NULL placeholders have no comparable type)
        return np.zeros(len(vals), dtype=np.int32)
    vals, bounds = _common(vals, bounds)
    ids = (1 + np.searchsorted(bounds, vals, side="right")).astype(np.int32)
    ids[vnull] = 0
    return ids


def count_le_rows(vals: np.ndarray, vnull: np.ndarray, bounds: np.ndarray, bnull: np.ndarray,
                  lengths: np.ndarray) -> np.ndarray:
    """Range ids when row r has its own boundaries `bounds[offset_r : offset_r + lengths[r]]`.

    One lexicographic sort of (row, element, kind) over all rows at once: inside its row a value
    sorts right after every boundary <= it (boundaries first on ties), so its rank inside the row
    is the count.
    """
    rows = len(vals)
    lengths = np.asarray(lengths, dtype=np.int64)
    if bnull.any():
        first = int(np.argmax(bnull))
        starts = np.cumsum(lengths) - lengths
        row = int(np.searchsorted(starts, first, side="right")) - 1
        while lengths[row] == 0:  # empty rows share the start of the next one
            row -= 1
        raise CurveArgumentError(null_boundary_error(first - int(starts[row])))
    if vnull.all():
        return np.zeros(rows, dtype=np.int32)
    vals, bounds = _common(vals, bounds)
    b_rows = np.repeat(np.arange(rows, dtype=np.int64), lengths)
    b_vals = bounds
    elements = np.concatenate([b_vals, vals])
    row_key = np.concatenate([b_rows, np.arange(rows, dtype=np.int64)])
    kind = np.concatenate([np.zeros(len(b_vals), dtype=np.int8), np.ones(rows, dtype=np.int8)])
    order = np.lexsort((kind, elements, row_key))  # last key is the primary one
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    row_start = np.cumsum(np.bincount(b_rows, minlength=rows) + 1) - (
        np.bincount(b_rows, minlength=rows) + 1)  # each row holds its boundaries + its value
    ids = (1 + (rank[len(b_vals):] - row_start)).astype(np.int32)
    ids[vnull] = 0
    return ids


def range_id(values, boundaries) -> np.ndarray:
    """Range ids (int32) of `values` against one sorted `boundaries` array (duplicates allowed):
    NULL -> 0, else 1 + number of boundaries <= value."""
    if boundaries is None:
        raise CurveArgumentError(NULL_BOUNDARIES_ERROR)
    vals, vnull = sortable(values)
    bounds, bnull = sortable(boundaries)
    return count_le(vals, vnull, bounds, bnull)


def range_id_rows(values, boundaries_rows: Sequence) -> np.ndarray:
    """Range ids when every row has its own boundaries array (`boundaries_rows[r]`)."""
    if any(b is None for b in boundaries_rows):
        raise CurveArgumentError(NULL_BOUNDARIES_ERROR)
    vals, vnull = sortable(values)
    lengths = np.array([len(b) for b in boundaries_rows], dtype=np.int64)
    flat = [x for b in boundaries_rows for x in list(b)]
    bounds, bnull = sortable(flat) if flat else (vals[:0], vnull[:0])
    return count_le_rows(vals, vnull, bounds, bnull, lengths)
