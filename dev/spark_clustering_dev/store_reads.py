"""What a JVM read from the local store, measured, and per dbt statement: shared by the recluster tests
and bench_format_maintenance.py. Two measures:

- store_bytes_read: Hadoop's statistics of the `file:` scheme. Parquet's vectored reads of a local file
  bypass these counters: turn them off (`parquet.hadoop.vectored.io.enabled=false`) where the figures
  matter. Iceberg's Parquet reader turns vectored reads on whatever that setting says, so on Iceberg
  these counters see only part of what a scan reads (148 KB of a 19.4 MB scan).
- ProcessReads: what the JVM read by system calls (`rchar` of /proc/<pid>/io) less the shuffle
  blocks its tasks read back (Spark's status store) and the class files Spark reads per job: every
  reader alike, vectored or not.
  Local mode only (driver and executors in the one JVM), Linux only.
"""
from __future__ import annotations


def store_bytes_read(spark) -> int:
    """Bytes read from the local file system by this JVM so far: data files, footers, logs, manifests
    and sidecars alike, driver and executors (local mode)."""
    return sum(st.getBytesRead() for st in spark._jvm.org.apache.hadoop.fs.FileSystem.getAllStatistics()
               if st.getScheme() == "file")


class ProcessReads:
    """Bytes this JVM read from files so far, whichever library read them: rchar (every read(2) and
    pread(2) of the process, which counts the threads of asynchronous and vectored reads too) less
    what rchar counts that no store read is:
    - the shuffle blocks its tasks read back (the status store's executor totals);
    - the class files Spark reads from its spark-core jar for every job it runs (~156 KB measured;
      most likely its closure cleaner reading the bytecode of a job's function classes, not proved)
      and every task (~2.2 KB), measured at the start on jobs that read nothing and charged per job
      and per task run since;
    - the measure's own calls over py4j's socket.
    Left in, and small beside a scan: the metastore's pages, the commands of the work measured,
    classes loaded for the first time (a few MB the first time a kind of statement runs). Not
    subtracted: spills read back (none in the benchmark's sessions, 6 GiB of heap for tens of MB).
    Call it before and after the work measured."""

    def __init__(self, spark) -> None:
        self.context = spark.sparkContext._jsc.sc()
        self.pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        self.own = 0  # what the measure's own py4j calls made the JVM read
        self.per_job = self.per_task = 0
        sc = spark.sparkContext
        for _ in range(2):  # warm: the classes of a job are loaded once
            sc.parallelize(range(16), 16).count()
        one = sorted(self._read_by(lambda: sc.parallelize(range(1), 1).count()) for _ in range(3))[1]
        sixteen = sorted(self._read_by(lambda: sc.parallelize(range(16), 16).count()) for _ in range(3))[1]
        self.per_task = max(0, (sixteen - one) // 15)
        self.per_job = max(0, one - self.per_task)

    def _read_by(self, work) -> int:
        """rchar's growth (less the measure's own reads) while `work` runs."""
        before = self._counts()[0]
        work()
        return self._counts()[0] - before

    def rchar(self) -> int:
        with open(f"/proc/{self.pid}/io") as io:
            return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))

    def _counts(self) -> tuple[int, int, int, int]:
        """(rchar less the measure's own reads, shuffle bytes read, jobs, tasks) so far."""
        before = self.rchar()
        # the status store has seen every task that ended (an executor's totals are written when its
        # last active task ends)
        self.context.listenerBus().waitUntilEmpty(30_000)
        executors = self.context.statusStore().executorList(True)
        shuffle_read = tasks = 0
        for i in range(executors.size()):
            executor = executors.apply(i)
            shuffle_read += int(executor.totalShuffleRead())
            tasks += int(executor.totalTasks())
        jobs = int(self.context.dagScheduler().nextJobId())
        after = self.rchar()
        self.own += after - before
        return after - self.own, shuffle_read, jobs, tasks

    def __call__(self) -> int:
        rchar, shuffle_read, jobs, tasks = self._counts()
        return rchar - shuffle_read - jobs * self.per_job - tasks * self.per_task


class StatementReads:
    """A dbt event callback: the bytes read from the store between one SQL statement's start and the
    next's, so a run's reads are told apart by statement (by `measure`: store_bytes_read by default,
    or a ProcessReads)."""

    def __init__(self, spark, measure=None) -> None:
        self.marks = []  # (statement, store bytes read when it started)
        self.measure = measure or (lambda: store_bytes_read(spark))

    def __call__(self, event) -> None:
        if event.info.name == "SQLQuery":
            self.marks.append((" ".join(event.data.sql.split()).split("*/", 1)[-1], self.measure()))

    def per_statement(self) -> list[tuple[int, str]]:
        """(bytes read, statement) of every statement seen, the largest first."""
        ends = [b for _, b in self.marks[1:]] + [self.measure()]
        return sorted(((end - start, sql) for (sql, start), end in zip(self.marks, ends)), reverse=True)
