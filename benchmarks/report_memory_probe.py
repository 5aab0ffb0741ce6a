"""Peak memory of one clustered (Hilbert) build in a fresh Spark application, so nothing else the
report did has grown the JVMs first. Run by benchmarks/report.py as a child process:

    .venv/bin/python benchmarks/report_memory_probe.py --source DIR --files N --json OUT [--cluster]

--source: a parquet directory (the report's telemetry rows). Local mode (default): driver and executor
are one JVM. --cluster: a standalone master + 2 workers (spark_clustering_dev.cluster), so the driver
JVM and each executor JVM are measured apart. Measures: resident set of every JVM (psutil, every 0.1 s)
and Spark's executor metrics (REST `/executors` peakMemoryMetrics, `/stages` peakExecutorMetrics).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import report_memory
from common.dbt import dbt_runner
from spark_clustering_dev.paths import WORK
from spark_clustering_dev.spark import get_spark

SCHEMA = "bench_memory"
COLUMNS = ["mission_id", "ts", "reading_value"]


def executor_pids(worker_pids: list[int], timeout: float = 90.0) -> list[int]:
    """The executor JVMs the workers launched for this application (CoarseGrainedExecutorBackend)."""
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = []
        for pid in worker_pids:
            for child in psutil.Process(pid).children(recursive=True):
                try:
                    if "CoarseGrainedExecutorBackend" in " ".join(child.cmdline()):
                        found.append(child.pid)
                except psutil.Error:
                    continue
        if len(found) >= len(worker_pids):
            return found
        time.sleep(1)
    raise TimeoutError(f"executors did not start under workers {worker_pids}")


def start_session(work: Path, cluster):
    conf = {"spark.driver.memory": "6g", **report_memory.metrics_conf()}
    if cluster is not None:
        # spark_clustering_dev.spark reads the master from this variable; one 1-core executor per worker.
        os.environ["SPARK_CLUSTERING_MASTER"] = cluster.url
        conf.update({"spark.executor.memory": "2g", "spark.executor.cores": "1", "spark.cores.max": "2"})
    spark = get_spark(work, app_name="bench_report_memory", extra_conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def build_hilbert(source: str, files: int) -> float:
    # the benchmarks' own dbt project (model memory_build), not the integration tests' cases
    run = dbt_runner("memory")(["run", "--select", "memory_build"], SCHEMA,
                               {"source": source, "memory_alias": "memory_hilbert", "method": "hilbert",
                                "cluster_by": COLUMNS, "num_files": files})
    return run.node_results()["memory_build"].execution_time


def probe(source_dir: Path, files: int, cluster) -> dict:
    mode = "cluster" if cluster is not None else "local"
    spark = start_session(WORK / f"bench_report_memory_{mode}", cluster)
    spark.sql(f"create database if not exists {SCHEMA}")
    source = f"parquet.`{source_dir}`"
    rows = spark.sql(f"select count(*) from {source}").first()[0]  # warm file listing before measuring
    jvms = {"driver": report_memory.jvm_pid(spark)}
    if cluster is not None:
        worker_pids = [p for name, p in cluster.pids.items() if name.startswith("worker")]
        jvms.update({f"executor JVM {i + 1}": pid for i, pid in enumerate(executor_pids(worker_pids))})
    spark.sparkContext._jvm.System.gc()  # start from a collected heap: the peak is the build's
    samplers = {name: report_memory.RssSampler(pid).start() for name, pid in jvms.items()}
    rest = report_memory.SparkRest(spark)
    first_stage = rest.last_stage_id()
    time.sleep(1.0)
    start = {name: s.mark("build start") for name, s in samplers.items()}
    seconds = build_hilbert(source, files)
    end = {name: s.mark("build end") for name, s in samplers.items()}
    last_stage = rest.last_stage_id()
    report_memory.wait_for_metrics()
    for s in samplers.values():
        s.stop()
    result = {
        "mode": mode, "master": spark.sparkContext.master, "rows": rows, "files": files, "build_seconds": seconds,
        "jvm_rss": {name: {"before_bytes": s.at(start[name]), "peak_bytes": s.peak(start[name], end[name]),
                           "timeline": [(t - start[name], rss) for t, rss in s.samples[::2]],
                           "build_seconds": end[name] - start[name]}
                    for name, s in samplers.items()},
        "spark_stage_peaks": rest.stage_peaks(first_stage, last_stage),
        "spark_executor_peaks": {eid: {k: v for k, v in m.items() if k in report_memory.SPARK_MEMORY_METRICS}
                                 for eid, m in rest.executor_peaks().items()},
        "conf": {k: spark.conf.get(k, None) for k in ["spark.driver.memory", "spark.executor.memory"]},
    }
    spark.stop()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--files", type=int, required=True)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--cluster", action="store_true")
    args = parser.parse_args(argv)
    if args.cluster:
        from spark_clustering_dev.cluster import StandaloneCluster

        with StandaloneCluster(WORK / f"bench_report_cluster-{os.getpid()}", workers=2, worker_cores=1,
                               worker_memory="3g") as cluster:
            result = probe(args.source, args.files, cluster)
    else:
        result = probe(args.source, args.files, None)
    args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
