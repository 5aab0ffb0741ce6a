"""Timing a benchmark's steps: wall time, and the Spark JVM's CPU time, which other processes on a
shared machine disturb much less than wall time."""
from __future__ import annotations

import os
import time
from pathlib import Path


def timed(fn) -> float:
    """Wall seconds of `fn()`."""
    start = time.monotonic()
    fn()
    return time.monotonic() - start


class JvmCpu:
    """CPU seconds used by the Spark JVM (driver + executor threads in local mode), from /proc.

    On a machine shared with other jobs the wall time of a query swings with their load; the CPU
    time the query needed swings much less, so the table shows a CPU-based ratio too."""

    def __init__(self, spark):
        self.path = None
        try:
            pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
            path = Path(f"/proc/{pid}/stat")
            if path.exists():
                self.path = path
        except Exception:  # noqa: BLE001 - not Linux / no py4j access: wall time only
            self.path = None

    def seconds(self) -> float | None:
        if self.path is None:
            return None
        fields = self.path.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def with_cpu(cpu, build) -> tuple[float, float | None]:
    """(the build's own wall seconds, JVM CPU seconds it used): on a shared machine the CPU time a
    build needs moves much less than its wall time."""
    before = cpu.seconds()
    wall = build()
    after = cpu.seconds()
    return wall, (after - before) if before is not None and after is not None else None


def ctas(spark, table: str, select: str, files: int) -> float:
    """CTAS timed with AQE partition coalescing off, so ORDER BY keeps `files` partitions."""
    spark.sql(f"drop table if exists {table}")
    spark.conf.set("spark.sql.shuffle.partitions", str(files))
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    try:
        return timed(lambda: spark.sql(f"create table {table} using parquet as {select}"))
    finally:
        spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")
