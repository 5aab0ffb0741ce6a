"""What the data-skipping scan says about itself: in a plan's text (EXPLAIN) and in the physical
plan's nodes (their classes and SQL metrics, the files the rule's file index kept)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from spark_clustering_dev.spark import confs

SKIPPING_CONF = "spark.sparkclustering.skipping.enabled"
SKIPPING_SCAN = "org.apache.spark.sql.sparkclustering.skipping.DataSkippingScanExec"
FILE_SCAN = "org.apache.spark.sql.execution.FileSourceScanExec"
SKIPPING_INDEX = "org.apache.spark.sql.sparkclustering.skipping.DataSkippingFileIndex"

# ----------------------------------------------------------------------------------------------
# the plan's text

SUMMARY = re.compile(r"DataSkipping: kept (\d+) of (\d+) files \(stats: sidecar (\d+), footers (\d+), unknown (\d+)")


def skipping_summaries(plan_text: str) -> list[dict[str, int]]:
    """{kept, total, sidecar, footers, unknown} of every skipping scan in `plan_text`, in plan order."""
    keys = ("kept", "total", "sidecar", "footers", "unknown")
    return [dict(zip(keys, (int(x) for x in found))) for found in SUMMARY.findall(plan_text)]


def skipping_summary(plan_text: str) -> dict[str, int]:
    """The summary of the one skipping scan in `plan_text`."""
    found = skipping_summaries(plan_text)
    assert len(found) >= 1, f"no 'DataSkipping: kept ...' in the plan:\n{plan_text}"
    assert all(f == found[0] for f in found), f"several different skipping scans in the plan: {found}"
    return found[0]


# ----------------------------------------------------------------------------------------------
# the plan's nodes


def _children(node) -> list:
    ch = node.children()
    return [ch.apply(i) for i in range(ch.size())]


# a JVM class's name -> the names of it and its superclasses: walking the chain is two py4j calls a
# class, asked of every node of every plan (test_data_skipping: ~170,000 calls for two of its tests)
_CLASS_CHAINS: dict[str, list[str]] = {}


def _class_names(node) -> list[str]:
    cls = node.getClass()
    name = cls.getName()
    if name not in _CLASS_CHAINS:
        names = []
        while cls is not None:
            names.append(cls.getName())
            cls = cls.getSuperclass()
        _CLASS_CHAINS[name] = names
    return _CLASS_CHAINS[name]


def file_scans(node) -> list:
    """Every FileSourceScanExec (or subclass) below `node`, depth-first, left to right."""
    out = []
    if FILE_SCAN in _class_names(node):
        out.append(node)
    for c in _children(node):
        out += file_scans(c)
    return out


@dataclass
class ScanInfo:
    table: str
    skipping: bool  # the rule's scan node
    num_files: int  # Spark's "number of files read"
    skipped: int | None
    before: int | None
    kept_files: list[str] | None  # what the rule's file index listed for the scan (local paths)
    text: str
    rule_index: bool = False  # the scan lists its files through the rule's DataSkippingFileIndex


def scan_info(node, list_files: bool) -> ScanInfo:
    metrics = node.metrics()

    def metric(name):
        m = metrics.get(name)
        return int(m.get().value()) if m.isDefined() else None

    skipping = SKIPPING_SCAN in _class_names(node)
    index = node.relation().location()
    rule_index = index.getClass().getName() == SKIPPING_INDEX
    kept = None
    if list_files and (skipping or rule_index):
        if rule_index:
            dirs = index.listFiles(node.partitionFilters(), node.dataFilters())
            kept = []
            for i in range(dirs.size()):
                files = dirs.apply(i).files()
                kept += [files.apply(j).getPath().toUri().getPath() for j in range(files.size())]
    ident = node.tableIdentifier()
    table = ident.get().table() if ident.isDefined() else ""
    return ScanInfo(table, skipping, metric("numFiles"), metric("filesSkippedByStats"), metric("filesBeforeSkipping"),
                    kept, node.simpleString(10_000), rule_index)


def union_branches(plan) -> dict[int, list]:
    """{q: scans} of a `select <q> as q, ... union all ...` plan (branches Spark proved empty are
    gone from the union; their scans are absent)."""
    def find_union(n):
        if n.getClass().getName().endswith(".UnionExec"):
            return n
        for c in _children(n):
            u = find_union(c)
            if u is not None:
                return u
        return None

    union = find_union(plan)
    branches = _children(union) if union is not None else [plan]
    out: dict[int, list] = {}
    for b in branches:
        q = _branch_literal(b)
        if q is None:
            raise AssertionError(f"cannot find the branch number in:\n{b.toString()}")
        out[q] = file_scans(b)
    return out


def _branch_literal(node):
    if node.getClass().getName().endswith(".ProjectExec"):
        projections = node.projectList()
        first = projections.apply(0)
        if first.name() == "q" and first.child().getClass().getName().endswith(".Literal"):
            return int(first.child().value())
    if node.getClass().getName().endswith(".LocalTableScanExec"):
        return None
    for c in _children(node):
        q = _branch_literal(c)
        if q is not None:
            return q
    return None


# ----------------------------------------------------------------------------------------------
# EXPLAIN with the rule on


def explain_summary(spark, sql: str) -> dict | None:
    """The first skipping scan's summary in the executed plan of `sql` with skipping on (+ the plan
    text), or None when the plan has no skipping scan."""
    with confs(spark, {SKIPPING_CONF: "true"}):
        text = spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
    found = skipping_summaries(text)
    return {**found[0], "text": text} if found else None
