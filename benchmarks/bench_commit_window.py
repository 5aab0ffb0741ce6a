"""How long a reader's listing of a table sees old and new files together while `table_rewrite_commit`
swaps them (the commit's moves, then its deletes, each run on up to 16 threads).

For each table size (--files, default 27 and 200 parquet files) and each of --rounds rounds: take the
table's lease, stage byte copies of all of its files in `<location>/_sc_recluster_<run>/` (the same
rows, as integration_tests/harness/commit_race.py does), and call `table_rewrite_commit` directly to replace every file
with its copy, while a reader thread lists the table directory in a tight loop (os.scandir, names not
starting with `_` or `.`, as Spark's listing skips them). Per round:

  window   the longest stretch of consecutive listings that held more files than the table has
           (old and new visible together), from the start of the first such listing to the end of
           the last one: what the reader saw. It can miss part of the true window (or all of it)
           when the reader thread is not scheduled, so also:
  bound    from the start of the last listing that held only the old files to the end of the first
           one after it that held only the new files: the true window (first move to last delete;
           the commit deletes only after every move) lies inside it, whatever the reader's
           scheduling;
  gap      the longest time between the starts of two consecutive listings inside the bound (the
           resolution: the bound exceeds the true window by at most about two gaps);
  commit   the wall time of the `select ... from table_rewrite_commit(...)` statement (lease check,
           listing, journal, moves, deletes, table refresh);
  moves start  from the start of the statement to the start of the last old-only listing (statement
           planning, lease check, listing, journal);
  fewest   the fewest files any listing held (below the table's count = a reader would miss rows).

Prints a markdown table and writes the figures to build/bench/commit_window.json (--json). Not a test;
it asserts only that every commit went through and that the table kept its rows and file count.
--load K runs K busy-looping processes during the measured rounds (a loaded driver machine).

--reader-rounds N (on the first --files table, after the listing rounds): N more such commits back
to back (a random 0-50 ms apart) while two Spark sessions of the same JVM read the whole table in a
loop (REFRESH TABLE, then count + order-independent checksums of every row): one with the extension's
commit view (snapshot/InFlightCommits: one side of a commit in flight), one with it switched off
(spark.sparkclustering.commitView.enabled=false: what a reader without the jar sees). Per reader:
reads whose rows were exactly the table's, reads with other rows (the window: rows twice), and reads
that failed on a file deleted under them (planned before a commit, run after its deletes).
--delete-delay S: the committing session keeps the replaced files S seconds after the new ones are in
place (spark.sparkclustering.commit.deleteDelaySeconds) in those rounds.

    .venv/bin/python benchmarks/bench_commit_window.py [--files 27 200] [--rounds 30] [--load 0] [--reader-rounds 0]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from spark_clustering_dev.layout import fingerprint
from spark_clustering_dev.paths import BUILD, WORK, local, uri
from spark_clustering_dev.recluster_case import location
from spark_clustering_dev.spark import get_spark
from spark_clustering_dev.sql import sql_str

SCHEMA = "bench_commit_window"


def visible(root: str, new_prefix: str) -> tuple[int, int]:
    """(visible files, visible files named by the commit) in one listing."""
    total = new = 0
    with os.scandir(root) as entries:
        for e in entries:
            if not e.name.startswith(("_", ".")):
                total += 1
                new += e.name.startswith(new_prefix)
    return total, new


class Lister(threading.Thread):
    """Lists `root` in a tight loop; each sample is (start, end, files listed, new files listed)."""

    def __init__(self, root: Path, new_prefix: str):
        super().__init__(daemon=True)
        self.root, self.new_prefix = str(root), new_prefix
        self.samples: list[tuple[float, float, int, int]] = []
        self.stop = threading.Event()

    def run(self):
        clock, samples, root, prefix = time.perf_counter, self.samples, self.root, self.new_prefix
        while not self.stop.is_set():
            start = clock()
            total, new = visible(root, prefix)
            samples.append((start, clock(), total, new))


def longest_window(samples, files: int) -> float:
    """Seconds of the longest run of consecutive listings holding more than `files` files."""
    best, first = 0.0, None
    for start, end, n, _ in samples:
        if n > files:
            first = start if first is None else first
            best = max(best, end - first)
        else:
            first = None
    return best


def bound_window(samples, files: int) -> tuple[float, float, float]:
    """(seconds from the start of the last old-only listing to the end of the first new-only one
    after it, the longest time from one listing's start to the next one's in between, and the
    bound's start). A listing reads the directory at some moment between its start and its end (the
    thread can be descheduled after reading), so the swap began after the old-only listing started
    and ended before the new-only one ended."""
    last_old = max(i for i, s in enumerate(samples) if s[2] == files and s[3] == 0)
    first_new = next(i for i in range(last_old + 1, len(samples)) if samples[i][2] == files and samples[i][3] == files)
    gaps = [samples[i + 1][0] - samples[i][0] for i in range(last_old, first_new)]
    return samples[first_new][1] - samples[last_old][0], max(gaps), samples[last_old][0]


def make_table(spark, table: str, files: int, rows_per_file: int) -> Path:
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"""create table {table} using parquet as
        select /*+ REPARTITION({files}) */ id, pmod(xxhash64(id), 1000) as a, concat('r', id) as b
        from range({files * rows_per_file})""")
    return location(spark, table)


def data_files(spark, table: str) -> list[tuple[str, int, int]]:
    return [(r[0], r[1], r[2]) for r in spark.sql(
        f"select file_path, file_size, modification_time from table_data_files('{table}')").collect()]


def commit_round(spark, table: str, root: Path, run: str, measure: bool) -> dict:
    token = spark.sql(f"select lease_token from table_lease_acquire('{table}', 'bench_commit_window', "
                      "'60', 'table')").first()[0]
    try:
        files = data_files(spark, table)
        staging = root / f"_sc_recluster_{run}"
        staging.mkdir()
        total = 0
        for i, (path, size, _) in enumerate(files):
            shutil.copyfile(local(path), staging / f"part-{i:05d}.parquet")
            total += size
        replaced = ", ".join(sql_str(f"{size}:{mtime}:{path}") for path, size, mtime in files)
        prefix = f"sc-l1-{run}"  # the staging directory's run: readers find the journal by it
        statement = (f"select status from table_rewrite_commit('{table}', '{token}', '', {sql_str(uri(staging))}, "
                     f"'{prefix}', '', '', '{total}', '', array({replaced}))")
        lister = Lister(root, prefix + "-") if measure else None
        if lister:
            lister.start()
            time.sleep(0.02)  # a few listings before the commit starts
        started = time.perf_counter()
        status = spark.sql(statement).first()[0]
        commit_s = time.perf_counter() - started
        if lister:
            time.sleep(0.02)
            lister.stop.set()
            lister.join()
        assert status == "committed", status
        assert not staging.exists(), f"{staging} left behind"
        if not lister:
            return {}
        samples = lister.samples
        during = [s for s in samples if s[0] >= started and s[1] <= started + commit_s]
        bound, gap, bound_start = bound_window(samples, len(files))
        return {
            "window_ms": longest_window(samples, len(files)) * 1000,
            "bound_ms": bound * 1000,
            "gap_ms": gap * 1000,
            "moves_start_ms": (bound_start - started) * 1000,
            "commit_ms": commit_s * 1000,
            "min_listed": min(s[2] for s in samples),
            "max_listed": max(s[2] for s in samples),
            "listings_during_commit": len(during),
            "listing_ms_median": statistics.median(s[1] - s[0] for s in samples) * 1000,
        }
    finally:
        spark.sql(f"select * from table_lease_release('{token}', 'false')").collect()


class SparkReader(threading.Thread):
    """Reads the whole table in a loop in a session of its own, with or without the commit view."""

    def __init__(self, spark, table: str, view: bool, expected):
        super().__init__(daemon=True)
        self.session = spark.newSession()
        self.session.conf.set("spark.sparkclustering.commitView.enabled", str(view).lower())
        self.table, self.view, self.expected = table, view, expected
        self.exact = self.wrong = self.failed = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.session.sql(f"refresh table {self.table}")
                got = fingerprint(self.session, self.table)
            except Exception as e:  # noqa: BLE001 - a file deleted under a scan planned before the commit
                if not any(m in str(e) for m in ("FileNotFound", "NoSuchFile", "does not exist")):
                    raise
                self.failed += 1
                continue
            if got == self.expected:
                self.exact += 1
            else:
                self.wrong += 1


def readers_during_commits(spark, table: str, root: Path, rounds: int, rows) -> list[dict]:
    readers = [SparkReader(spark, table, view, rows) for view in (True, False)]
    for r in readers:
        r.start()
    rng = __import__("random").Random(7)
    tag = uuid.uuid4().hex[:6]
    started = time.perf_counter()
    try:
        for i in range(rounds):
            commit_round(spark, table, root, f"r{tag}_{i}", measure=False)
            time.sleep(rng.uniform(0, 0.05))
    finally:
        for r in readers:
            r.stop.set()
        for r in readers:
            r.join()
    seconds = time.perf_counter() - started
    return [{"commit_view": r.view, "commits": rounds, "seconds": round(seconds, 1),
             "reads": r.exact + r.wrong + r.failed, "exact": r.exact, "wrong": r.wrong,
             "failed_on_a_deleted_file": r.failed} for r in readers]


def summarize(files: int, rounds: list[dict]) -> dict:
    windows = [r["window_ms"] for r in rounds]
    bounds = [r["bound_ms"] for r in rounds]
    commits = [r["commit_ms"] for r in rounds]
    return {
        "files": files, "rounds": len(rounds),
        "window_ms_median": round(statistics.median(windows), 1), "window_ms_max": round(max(windows), 1),
        "bound_ms_median": round(statistics.median(bounds), 1), "bound_ms_max": round(max(bounds), 1),
        "gap_ms_median": round(statistics.median(r["gap_ms"] for r in rounds), 2),
        "gap_ms_max": round(max(r["gap_ms"] for r in rounds), 2),
        "moves_start_ms_median": round(statistics.median(r["moves_start_ms"] for r in rounds), 1),
        "commit_ms_median": round(statistics.median(commits), 1), "commit_ms_max": round(max(commits), 1),
        "listing_ms_median": round(statistics.median(r["listing_ms_median"] for r in rounds), 3),
        "listings_during_commit_median": int(statistics.median(r["listings_during_commit"] for r in rounds)),
        "min_listed": min(r["min_listed"] for r in rounds), "max_listed": max(r["max_listed"] for r in rounds),
        "per_round": [{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in rounds],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, nargs="+", default=[27, 200], help="data files per table")
    parser.add_argument("--rounds", type=int, default=30, help="measured commits per table")
    parser.add_argument("--warmup", type=int, default=3, help="commits per table before measuring")
    parser.add_argument("--rows-per-file", type=int, default=2000)
    parser.add_argument("--load", type=int, default=0, help="busy-looping processes during the measured rounds")
    parser.add_argument("--reader-rounds", type=int, default=0,
                        help="commits with two Spark readers (commit view on / off) reading meanwhile")
    parser.add_argument("--delete-delay", type=float, default=0.0,
                        help="spark.sparkclustering.commit.deleteDelaySeconds of the reader rounds' commits")
    parser.add_argument("--json", type=Path, default=BUILD / "bench" / "commit_window.json")
    args = parser.parse_args(argv)

    spark = get_spark(WORK / "bench-commit-window", app_name="bench_commit_window")
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"drop database if exists {SCHEMA} cascade")
    spark.sql(f"create database {SCHEMA}")
    load_before = os.getloadavg()
    results = []
    for files in args.files:
        table = f"{SCHEMA}.t{files}"
        root = make_table(spark, table, files, args.rows_per_file)
        rows = fingerprint(spark, table)
        assert len(data_files(spark, table)) == files, f"{table}: expected {files} files"
        tag = uuid.uuid4().hex[:6]
        for i in range(args.warmup):
            commit_round(spark, table, root, f"w{tag}_{i}", measure=False)
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
        try:
            rounds = [commit_round(spark, table, root, f"m{tag}_{i}", measure=True) for i in range(args.rounds)]
        finally:
            for proc in busy:
                proc.kill()
                proc.wait()
        spark.sql(f"refresh table {table}")
        assert fingerprint(spark, table) == rows, f"{table}: rows changed"
        assert len(data_files(spark, table)) == files, f"{table}: file count changed"
        results.append(summarize(files, rounds))
        if args.reader_rounds and files == args.files[0]:
            spark.conf.set("spark.sparkclustering.commit.deleteDelaySeconds", str(args.delete_delay))
            results[-1]["readers"] = readers_during_commits(spark, table, root, args.reader_rounds, rows)
            results[-1]["delete_delay_seconds"] = args.delete_delay
            spark.conf.unset("spark.sparkclustering.commit.deleteDelaySeconds")
            spark.sql(f"refresh table {table}")
            assert fingerprint(spark, table) == rows, f"{table}: rows changed"

    print(f"\ntable_rewrite_commit of every file, byte copies staged, {args.rounds} rounds per table"
          f"{f', {args.load} busy processes' if args.load else ''} (window: old + new files listed together)\n")
    print("| files | rounds | window ms median / max | bound ms median / max | gap ms max | commit ms median / max "
          "| moves start ms | listing ms | fewest listed |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(f"| {r['files']} | {r['rounds']} | {r['window_ms_median']} / {r['window_ms_max']} | "
              f"{r['bound_ms_median']} / {r['bound_ms_max']} | {r['gap_ms_max']} | "
              f"{r['commit_ms_median']} / {r['commit_ms_max']} | {r['moves_start_ms_median']} | "
              f"{r['listing_ms_median']} | {r['min_listed']} |")
    for r in results:
        if "readers" in r:
            print(f"\nSpark readers of the {r['files']}-file table during {args.reader_rounds} commits of every file "
                  f"(delete delay {args.delete_delay} s)\n")
            print("| reader | reads | exact rows | other rows (both sides read) | failed on a deleted file |")
            print("| --- | ---: | ---: | ---: | ---: |")
            for x in r["readers"]:
                who = "with the extension (commit view)" if x["commit_view"] else "commit view off (as without the jar)"
                print(f"| {who} | {x['reads']} | {x['exact']} | {x['wrong']} | {x['failed_on_a_deleted_file']} |")
    report = {
        "command": " ".join([".venv/bin/python", "benchmarks/bench_commit_window.py", *(argv or sys.argv[1:])]),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()], "busy_processes": args.load,
        "platform": platform.platform(), "spark": spark.version, "rows_per_file": args.rows_per_file,
        "results": results,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1))
    print(f"\nwritten to {args.json}")
    spark.sql(f"drop database if exists {SCHEMA} cascade")
    return 0


if __name__ == "__main__":
    sys.exit(main())
