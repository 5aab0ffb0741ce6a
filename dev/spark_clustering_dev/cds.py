"""The class data archive of the test JVMs (JDK AppCDS): the classes a Spark JVM of this line loads to
start a session and run a query, archived once, so each of the tests' JVMs maps them instead of
loading, parsing and verifying them again (spark_clustering_dev.spark.jvm_options passes it to every
JVM the tests start). A JVM whose class path or JDK differs from the archive's ignores it.

    python -m spark_clustering_dev.cds      make it, unless it exists (archive_path: where)

scripts/test makes the default line's beside the lint, and each other line's, with that line's
virtualenv, before its smoke suite (once: it is kept in the cache).

A small session of plain tables, started and used in a new process, took 7.7-8.9 s with the archive
make_archive makes and 12.4-15.9 s without (3 runs each, alternating; 2026-11-28, the 2-core machine,
another job beside it). On Spark 4.3 (the smoke suite's line without an archive until then) the
same session took 14.8-15.2 CPU-s with it and 25.7-28.2 without (2 runs each, alternating; making the
archive took 61 CPU-s), and a smoke suite starts 3-5 such JVMs."""
from __future__ import annotations

import os
import shutil
import sys
from importlib.metadata import version
from pathlib import Path

from spark_clustering_dev.paths import BUILD, REPO, WORK


def archive_path() -> Path:
    """Per pyspark release (its jars are the JVM's class path); the JDK is checked by the JVM itself.
    A JDK 17 archive holds the class path's jars by path: the clone's .venv is at a new path in each
    clone, so its archive is the clone's (build/cds/); another Spark line's virtualenv is one path in
    the cache for as long as its lock file is unchanged (spark_clustering_dev.lines.venv), and so is
    its archive, made once and kept between clean clones (CI)."""
    from spark_clustering_dev.lines import cache_dir

    release, venv = version("pyspark"), Path(sys.prefix).resolve()
    if venv.is_relative_to(REPO):
        return BUILD / "cds" / f"spark-{release}.jsa"
    return cache_dir() / "cds" / f"{venv.name}-spark-{release}.jsa"


def make_archive() -> Path:
    """Runs a session of plain tables in a JVM that archives the classes it loaded when it exits,
    then moves the archive into place (a JVM never sees half of one)."""
    from pyspark import SparkContext

    from spark_clustering_dev.spark import get_spark

    final = archive_path()
    if final.exists():
        return final
    forget_stale(final.parent)
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = final.with_suffix(f".{os.getpid()}.partial")
    work = WORK / f"cds-{os.getpid()}"
    os.environ["SPARK_CLUSTERING_CDS_DUMP"] = str(partial)
    try:
        spark = get_spark(work, app_name="spark_clustering_cds")
        spark.sql("create database if not exists cds").collect()
        spark.sql("create table cds.t using parquet as select id, id % 7 as b from range(1000)")
        spark.sql("select b, count(*) from cds.t group by b").collect()
        spark.stop()
        gateway = SparkContext._gateway
        gateway.shutdown()
        gateway.proc.stdin.close()  # the JVM exits when its stdin closes, and writes the archive then
        gateway.proc.wait(timeout=300)
        if partial.exists():
            os.replace(partial, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        partial.unlink(missing_ok=True)
    return final


def forget_stale(folder: Path) -> None:
    """The cache's archives of virtualenvs scripts/setup has since removed (it keeps two per kind)."""
    from spark_clustering_dev.lines import cache_dir

    if folder.parent != cache_dir():
        return
    for made in folder.glob("*.jsa"):
        if not (cache_dir() / "venvs" / made.name.rsplit("-spark-", 1)[0]).is_dir():
            made.unlink(missing_ok=True)


if __name__ == "__main__":
    os.environ.setdefault("SPARK_CLUSTERING_TEST_JVM", "1")
    made = make_archive()
    print(f"cds: {made} ({made.stat().st_size:,} bytes)" if made.exists() else "cds: no archive made", file=sys.stderr)
