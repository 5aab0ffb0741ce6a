"""What a query's scans read, as Spark's plan reports it: the file scans' numFiles metric (the
data-skipping rule's scan is a subclass of FileSourceScanExec and adds metrics of its own), their
classes and the files their RDDs read; a query run with the rule on or off."""
from __future__ import annotations

import time

from spark_clustering_dev.paths import local

SKIPPING = "spark.sparkclustering.skipping.enabled"


def set_skipping(spark, on: bool) -> None:
    spark.conf.set(SKIPPING, "true" if on else "false")


def plan_nodes(plan):
    """Every node of a physical plan (AdaptiveSparkPlanExec unwrapped to its final plan)."""
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
            node = node.executedPlan()
        yield node
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))


def scan_nodes(plan) -> list:
    """Nodes carrying the file scan's numFiles metric (FileSourceScanExec and subclasses)."""
    return [n for n in plan_nodes(plan) if n.metrics().get("numFiles").isDefined()]


def files_read(scans) -> int:
    return int(sum(n.metrics().get("numFiles").get().value() for n in scans))


SKIPPING_METRICS = ["filesBeforeSkipping", "filesSkippedByStats", "statsTime"]  # the rule's scan node adds them


def skipping_metrics(scans) -> dict:
    """The rule's own scan metrics summed over the scans (statsTime in ms); {} without the rule."""
    out = {}
    for n in scans:
        for name in SKIPPING_METRICS:
            m = n.metrics().get(name)
            if m.isDefined():
                out[name] = out.get(name, 0) + int(m.get().value())
    return out


def scan_classes(scans) -> list[str]:
    return sorted({n.getClass().getName() for n in scans})


def scan_paths(scans) -> list[str]:
    """The files the scans' RDDs read (FileScanRDD partitions); [] when a scan has no such RDD."""
    paths = []
    for n in scans:
        try:
            parts = n.inputRDD().filePartitions()
            for i in range(parts.size()):
                paths.extend(str(f.filePath().toString()) for f in parts.apply(i).files())
        except Exception:  # noqa: BLE001 - a scan that is not file-based: nothing to list
            pass
    return paths


def run_query(spark, sql: str, on: bool, want_paths: bool = False) -> dict:
    """One run of `sql`: its answer, wall time (planning included) and the files its scans read."""
    set_skipping(spark, on)
    start = time.perf_counter()
    df = spark.sql(sql)
    rows = df.collect()
    seconds = time.perf_counter() - start
    scans = scan_nodes(df._jdf.queryExecution().executedPlan())
    out = {"answer": [tuple(r) for r in rows], "seconds": seconds, "files": files_read(scans),
           "scan_classes": scan_classes(scans), "skipping_metrics": skipping_metrics(scans)}
    if want_paths:
        out["paths"] = sorted(str(local(p)) for p in scan_paths(scans))
    return out
