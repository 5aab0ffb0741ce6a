"""Independent, obviously-correct (quadratic) implementation of docs/metrics.md "Metric definitions".

Used by the tests as the oracle for the package's Jinja implementation. Written straight from the
definitions, with no sweep, no ranks and no sparse table, so that it shares no cleverness (and no
bug) with `macros/metrics/_clustering_metrics.sql`.

A file's range on one column is `(lo, hi)`, or `None` when the file has no non-NULL value there.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Iterable, Sequence

Range = "tuple[Any, Any] | None"


def rounded_average(total: float, count: int, digits: int = 4) -> float:
    """total / count to `digits` decimals, half away from zero, as Databend rounds its averages
    (`(10000.0 * sum / count).round()` in Rust). Python's round() goes half to even: 37 / 32 =
    1.15625 gives 1.1562 there, 1.1563 here. Exact: the quotient is a Fraction, not a float."""
    if count == 0:
        return 0.0
    scaled = Fraction(total) * 10 ** digits / count
    whole = math.floor(abs(scaled) + Fraction(1, 2))
    return math.copysign(whole, scaled) / 10 ** digits


def depth_bucket(depth: int) -> int:
    """1..16 are their own bucket; above that, the smallest power of two >= depth."""
    if depth <= 16:
        return depth
    bucket = 32
    while bucket < depth:
        bucket *= 2
    return bucket


def nearest_rank(sorted_values: Sequence[int], percent: int) -> int:
    """Nearest-rank percentile: the value at rank ceil(percent/100 * n) (1-based)."""
    rank = -(-percent * len(sorted_values) // 100)  # ceil in integers: no float rounding doubt
    return sorted_values[max(rank, 1) - 1]


def column_metrics(ranges: Iterable[Range]) -> dict[str, Any]:
    ranges = list(ranges)
    files = [r for r in ranges if r is not None and r[0] is not None]
    null_only = len(ranges) - len(files)
    n = len(files)
    if n == 0:
        return {"total_file_count": 0, "constant_file_count": 0, "null_only_file_count": null_only,
                "average_overlaps": 0.0, "average_depth": 0.0, "p95_depth": 0, "p99_depth": 0, "max_depth": 0,
                "depth_histogram": {}}
    overlaps = []
    for i, (lo_i, hi_i) in enumerate(files):
        overlaps.append(sum(1 for j, (lo_j, hi_j) in enumerate(files)
                            if j != i and lo_j <= hi_i and hi_j >= lo_i))
    endpoints = {v for r in files for v in r}
    pointdepth = {p: sum(1 for lo, hi in files if lo <= p <= hi) for p in endpoints}
    depths = [max(pointdepth[p] for p in endpoints if lo <= p <= hi) for lo, hi in files]
    histogram: dict[str, int] = {}
    for d in depths:
        key = "%05d" % depth_bucket(d)
        histogram[key] = histogram.get(key, 0) + 1
    ordered = sorted(depths)
    return {
        "total_file_count": n,
        "constant_file_count": sum(1 for lo, hi in files if lo == hi),
        "null_only_file_count": null_only,
        "average_overlaps": rounded_average(sum(overlaps), n),
        "average_depth": rounded_average(sum(depths), n),
        "p95_depth": nearest_rank(ordered, 95),
        "p99_depth": nearest_rank(ordered, 99),
        "max_depth": ordered[-1],
        "depth_histogram": dict(sorted(histogram.items())),
    }


def box_metrics(files: Sequence[Sequence[Range]]) -> dict[str, Any]:
    """files[i][c] = range of file i on column c. Files NULL-only on any column are left out."""
    boxes = [f for f in files if all(r is not None and r[0] is not None for r in f)]
    n = len(boxes)
    overlaps = []
    for i, a in enumerate(boxes):
        overlaps.append(sum(
            1 for j, b in enumerate(boxes)
            if j != i and all(lo_b <= hi_a and hi_b >= lo_a for (lo_a, hi_a), (lo_b, hi_b) in zip(a, b))
        ))
    return {
        "total_file_count": n,
        "null_only_file_count": len(files) - n,
        "average_overlaps": rounded_average(sum(overlaps), n),
        "max_overlaps": max(overlaps) if n else 0,
        "exact": True,
    }


def clustering_metrics(files: Sequence[Sequence[Range]], columns: Sequence[str]) -> dict[str, Any]:
    """The `columns`/`box`/`total_files` part of `clustering_information`'s result."""
    return {
        "columns": {c: column_metrics(f[k] for f in files) for k, c in enumerate(columns)},
        "box": box_metrics(files),
        "total_files": len(files),
    }


def files_scanned(files: Sequence[dict[str, Range]], box: dict[str, tuple[Any, Any]]) -> int:
    """Files whose range intersects the (inclusive, None = open) box on every listed column."""
    def hits(r: Range, lo: Any, hi: Any) -> bool:
        if r is None or r[0] is None:
            return False
        return (lo is None or r[1] >= lo) and (hi is None or r[0] <= hi)

    return sum(1 for f in files if all(hits(f[c], lo, hi) for c, (lo, hi) in box.items()))


def ideal_files(matching_rows: int, total_rows: int, total_files: int) -> int:
    """ceil(matching_rows / (total_rows / total_files)), exactly (integer arithmetic)."""
    if total_rows == 0:
        return 0
    return -(-matching_rows * total_files // total_rows)
