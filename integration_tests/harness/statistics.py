"""Per-file statistics as the data-skipping reference sees a file: exact ones from the rows, the
sidecar's view of them, and parquet footers' as pyarrow reads them."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

from harness.tables import BY_KEY, COLUMNS, PARTITION_COLUMNS, Column, domain_of, f32, sort_key

LONG_STRING_BYTES = 4096  # longer string bounds are not kept (FileStats.MaxStringBytes, parquet-mr's limit)


@dataclass
class ColStats:
    nonnull: int | None  # None = unknown
    nulls: int | None
    lo: Any = None  # canonical value, None = unknown
    hi: Any = None


@dataclass
class FileStats:
    rows: int | None
    cols: dict[str, ColStats]


UNKNOWN_COL = ColStats(None, None)


def exact_stats(rows: list[dict], columns: list[Column] = COLUMNS) -> FileStats:
    cols = {}
    for c in columns:
        values = [r[c.key] for r in rows if r[c.key] is not None]
        key = lambda v, c=c: sort_key(domain_of(c.kind), v)  # noqa: E731
        cols[c.key] = ColStats(len(values), len(rows) - len(values),
                               min(values, key=key) if values else None, max(values, key=key) if values else None)
    return FileStats(len(rows), cols)


def sidecar_view(stats: FileStats) -> FileStats:
    """Exact statistics as a sidecar can hold them: string bounds longer than the kept length are
    unknown (the only documented loss)."""
    cols = {}
    for name, cs in stats.cols.items():
        if name in PARTITION_COLUMNS:
            continue  # not in the data files: the rule has no statistics for it
        if BY_KEY[name].kind == "string":
            lo = cs.lo if cs.lo is None or len(cs.lo.encode()) <= LONG_STRING_BYTES else None
            hi = cs.hi if cs.hi is None or len(cs.hi.encode()) <= LONG_STRING_BYTES else None
            cs = ColStats(cs.nonnull, cs.nulls, lo, hi)
        cols[name] = cs
    return FileStats(stats.rows, cols)


def parquet_footer_stats(path: str) -> tuple[FileStats, dict]:
    """File-level bounds from a parquet footer (pyarrow), canonical. A bound is known when every row
    group holding a non-NULL value has it. Also returns facts about the file (timestamp unit,
    legacy-calendar marker)."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    kv = {k.decode(): v.decode() for k, v in (meta.metadata or {}).items()}
    facts = {"legacy_datetime": "org.apache.spark.legacyDateTime" in kv or "org.apache.spark.legacyINT96" in kv,
             "row_groups": meta.num_row_groups, "ts_physical": None}
    names = [meta.schema.column(j).name.lower() for j in range(meta.num_columns)]
    cols = {}
    for c in COLUMNS:
        if c.key not in names:
            cols[c.key] = UNKNOWN_COL
            continue
        j = names.index(c.key)
        logical = str(meta.schema.column(j).logical_type)
        physical = meta.schema.column(j).physical_type
        if c.key == "ts":
            facts["ts_physical"] = physical + ("" if physical == "INT96" else f" {logical}")
        lo = hi = None
        lo_known = hi_known = True
        nulls: int | None = 0
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            if rg.num_rows == 0:
                continue
            st = rg.column(j).statistics
            if st is None:
                lo_known = hi_known = False
                nulls = None
                continue
            nulls = nulls + st.null_count if (nulls is not None and st.has_null_count) else None
            if st.has_null_count and st.null_count == rg.num_rows:
                continue
            if not st.has_min_max:
                lo_known = hi_known = False
                continue
            a = _parquet_value(c, physical, logical, st.min_raw, lambda: st.min)
            b = _parquet_value(c, physical, logical, st.max_raw, lambda: st.max)
            if a is None:
                lo_known = False
            if b is None:
                hi_known = False
            k = lambda v, c=c: sort_key(domain_of(c.kind), v)  # noqa: E731
            if lo_known:
                lo = a if lo is None else min(lo, a, key=k)
            if hi_known:
                hi = b if hi is None else max(hi, b, key=k)
        nonnull = None if nulls is None else meta.num_rows - nulls
        cols[c.key] = ColStats(nonnull, nulls, lo if lo_known else None, hi if hi_known else None)
    return FileStats(meta.num_rows, cols), facts


def _parquet_value(c: Column, physical: str, logical: str, raw: Any, value: Callable[[], Any]) -> Any:
    if c.kind in ("dec38", "dec9"):
        v = value()
        return Decimal(v) if v is not None else None
    if c.kind == "string":
        return raw.decode("utf-8") if isinstance(raw, bytes) else raw
    if c.kind == "ts" or c.kind == "ntz":
        if physical != "INT64":
            return None
        if "milliseconds" in logical.lower() or "MILLIS" in logical:
            return raw * 1000
        if "nanoseconds" in logical.lower() or "NANOS" in logical:
            return None
        return raw
    if c.kind == "float":
        return f32(raw)
    return raw
