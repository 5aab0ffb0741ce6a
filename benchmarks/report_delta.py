"""The delta-rs baseline: the same rows written as a Delta table by the `deltalake` package, then
`DeltaTable.optimize.z_order(columns)` with a target size tuned until the file count matches."""
from __future__ import annotations

import datetime
import decimal
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

MAX_ATTEMPTS = 7


@dataclass
class DeltaZorder:
    path: Path
    files: int
    target_size: int
    seconds: float  # the last z_order call
    bytes: int
    attempts: list[tuple[int, int]] = field(default_factory=list)  # (target_size, files) per call


def arrow_rows(parquet_files: list[Path]):
    """The rows of a Spark table's parquet files as one Arrow table; Spark's INT96 timestamps come
    back as naive nanoseconds and Delta wants microseconds, UTC."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    data = ds.dataset([str(f) for f in parquet_files], format="parquet").to_table()
    for i, f in enumerate(data.schema):
        if pa.types.is_timestamp(f.type):
            data = data.set_column(i, f.name, data.column(i).cast(pa.timestamp("us", tz="UTC")))
    return data


def write_delta(parquet_files: list[Path], path: Path) -> int:
    """Write the rows as a fresh Delta table; returns its data bytes."""
    from deltalake import DeltaTable, write_deltalake

    shutil.rmtree(path, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_deltalake(str(path), arrow_rows(parquet_files))
    return sum(a["size_bytes"] for a in add_actions(DeltaTable(str(path))))


def add_actions(dt) -> list[dict]:
    import pyarrow as pa

    return pa.table(dt.get_add_actions(flatten=True)).to_pylist()


def zorder_to_file_count(path: Path, columns: list[str], files: int, table_bytes: int) -> DeltaZorder:
    """z_order with target_size = bytes / files, re-run (z_order rewrites every file) until it gives
    `files` files: the file count is not proportional to the target (delta-rs checks the size between
    record batches), so the target is bisected between the closest sizes that gave too many / too few."""
    from deltalake import DeltaTable

    too_small, too_large = None, None  # targets that gave more / fewer files than wanted
    target = int(table_bytes / (files - 0.5))  # the last file is a remainder: aim a bit above
    attempts, seconds = [], 0.0
    for _ in range(MAX_ATTEMPTS):
        start = time.monotonic()
        DeltaTable(str(path)).optimize.z_order(columns, target_size=target)
        seconds = time.monotonic() - start
        got = len(DeltaTable(str(path)).file_uris())
        attempts.append((target, got))
        if got == files:
            break
        if got > files:
            too_small = target if too_small is None else max(too_small, target)
        else:
            too_large = target if too_large is None else min(too_large, target)
        if too_small is not None and too_large is not None:
            target = (too_small + too_large) // 2
        else:
            target = max(1, int(target * got / files))
    best_target, best_files = min(attempts, key=lambda a: abs(a[1] - files))
    if best_files != attempts[-1][1]:  # leave the table in the closest layout tried
        start = time.monotonic()
        DeltaTable(str(path)).optimize.z_order(columns, target_size=best_target)
        seconds = time.monotonic() - start
        attempts.append((best_target, len(DeltaTable(str(path)).file_uris())))
    actions = add_actions(DeltaTable(str(path)))
    return DeltaZorder(path, len(actions), attempts[-1][0], seconds, sum(a["size_bytes"] for a in actions), attempts)


def as_number(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    if isinstance(value, datetime.date):
        return float((value - datetime.date(1970, 1, 1)).days)
    if isinstance(value, (decimal.Decimal, int, float)):
        return float(value)
    raise TypeError(f"no numeric form for {type(value).__name__} stats")


def delta_file_boxes(path: Path, columns: list[str]) -> list[dict]:
    """Per-file rows and min/max of each column from the Delta log's add actions (what a Delta
    reader skips files with)."""
    from deltalake import DeltaTable

    return [{"path": a["path"], "n": a["num_records"],
             **{f"{c}_lo": as_number(a[f"min.{c}"]) for c in columns},
             **{f"{c}_hi": as_number(a[f"max.{c}"]) for c in columns}}
            for a in add_actions(DeltaTable(str(path)))]


def delta_data_files(path: Path) -> list[str]:
    from deltalake import DeltaTable

    return DeltaTable(str(path)).file_uris()
