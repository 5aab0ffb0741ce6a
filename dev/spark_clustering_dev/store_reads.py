"""What a JVM read from the local store, measured (Hadoop's statistics of the `file:` scheme), and per
dbt statement: shared by the recluster tests and bench_format_maintenance.py. Parquet's vectored reads
of a local file bypass these counters: turn them off (`parquet.hadoop.vectored.io.enabled=false`)
where the figures matter."""
from __future__ import annotations


def store_bytes_read(spark) -> int:
    """Bytes read from the local file system by this JVM so far: data files, footers, logs, manifests
    and sidecars alike, driver and executors (local mode)."""
    return sum(st.getBytesRead() for st in spark._jvm.org.apache.hadoop.fs.FileSystem.getAllStatistics()
               if st.getScheme() == "file")


class StatementReads:
    """A dbt event callback: the bytes read from the store between one SQL statement's start and the
    next's, so a run's reads are told apart by statement."""

    def __init__(self, spark) -> None:
        self.spark, self.marks = spark, []  # (statement, store bytes read when it started)

    def __call__(self, event) -> None:
        if event.info.name == "SQLQuery":
            self.marks.append((" ".join(event.data.sql.split()).split("*/", 1)[-1], store_bytes_read(self.spark)))

    def per_statement(self) -> list[tuple[int, str]]:
        """(bytes read, statement) of every statement seen, the largest first."""
        ends = [b for _, b in self.marks[1:]] + [store_bytes_read(self.spark)]
        return sorted(((end - start, sql) for (sql, start), end in zip(self.marks, ends)), reverse=True)
