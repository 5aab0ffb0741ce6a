"""Memory and machine-load measurements for the report.

In local mode the Spark driver and its executor are one JVM, so "driver" and "executor" peaks are
the same process: its resident set sampled by psutil, and Spark's own executor metrics (heap and
off-heap used, polled by Spark) per stage from the UI's REST API."""
from __future__ import annotations

import json
import threading
import time
import urllib.request
from dataclasses import dataclass, field

from spark_clustering_dev.thrift import free_port

# Spark's own memory metrics worth a row in the report (bytes).
SPARK_MEMORY_METRICS = ["JVMHeapMemory", "JVMOffHeapMemory", "OnHeapExecutionMemory", "OnHeapStorageMemory",
                        "DirectPoolMemory", "ProcessTreeJVMRSSMemory"]


def metrics_conf() -> dict[str, str]:
    """Confs that make Spark record peak memory: the UI (for the REST API, on a free loopback
    port), /proc process-tree RSS, and executor metrics polled every 100 ms instead of only at
    heartbeats."""
    return {"spark.ui.enabled": "true", "spark.ui.port": str(free_port()),
            "spark.executor.processTreeMetrics.enabled": "true",
            "spark.executor.metrics.pollingInterval": "100ms"}


def jvm_pid(spark) -> int:
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


class RssSampler:
    """Samples a process's resident set size in a thread; `mark(name)` notes when phases start."""

    def __init__(self, pid: int, interval: float = 0.1):
        import psutil

        self.process = psutil.Process(pid)
        self.interval = interval
        self.samples: list[tuple[float, int]] = []  # (seconds since start, rss bytes)
        self.marks: list[tuple[float, str]] = []
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic() - self._start, self.process.memory_info().rss))
            except Exception:  # noqa: BLE001 - the JVM is gone (session stopped): stop sampling
                return
            self._stop.wait(self.interval)

    def start(self) -> "RssSampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def mark(self, name: str) -> float:
        now = time.monotonic() - self._start
        self.marks.append((now, name))
        return now

    def peak(self, since: float = 0.0, until: float = float("inf")) -> int:
        return max((rss for t, rss in self.samples if since <= t <= until), default=0)

    def at(self, moment: float) -> int:
        """The last sample taken at or before `moment`."""
        before = [rss for t, rss in self.samples if t <= moment]
        return before[-1] if before else 0


class SparkRest:
    """The running application's monitoring REST API (`/api/v1/applications/<id>/...`)."""

    def __init__(self, spark):
        sc = spark.sparkContext
        self.base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}" if sc.uiWebUrl else None

    def get(self, what: str):
        with urllib.request.urlopen(f"{self.base}/{what}", timeout=30) as resp:
            return json.loads(resp.read().decode())

    def last_stage_id(self) -> int:
        return max((s["stageId"] for s in self.get("stages")), default=-1) if self.base else -1

    def stage_peaks(self, after_stage_id: int, last_stage_id: int) -> dict[str, int]:
        """Max of each memory metric over stages after_stage_id < id <= last_stage_id."""
        peaks: dict[str, int] = {}
        for stage in self.get("stages"):
            if after_stage_id < stage["stageId"] <= last_stage_id:
                for name, value in (stage.get("peakExecutorMetrics") or {}).items():
                    if name in SPARK_MEMORY_METRICS:
                        peaks[name] = max(peaks.get(name, 0), int(value))
        return peaks

    def executor_peaks(self) -> dict[str, dict[str, int]]:
        """Application-lifetime peaks per executor id ("driver" in local mode)."""
        return {e["id"]: e.get("peakMemoryMetrics") or {} for e in self.get("executors")}


def wait_for_metrics(seconds: float = 12.0) -> None:
    """Executor metric peaks reach the REST API with the heartbeat (every 10 s by default)."""
    time.sleep(seconds)


@dataclass
class MachineLoad:
    """CPU time the whole machine spent busy vs this report's processes (Python + JVM + their
    children), between start() and stop(): tells whether someone else was using the cores."""

    our_pids: set[int] = field(default_factory=set)
    start_busy: float = 0.0
    start_ours: float = 0.0
    start_time: float = 0.0
    other_busy_seconds: float = 0.0
    wall_seconds: float = 0.0
    other_processes: set[str] = field(default_factory=set)

    @staticmethod
    def busy() -> float:
        import psutil

        t = psutil.cpu_times()
        return t.user + t.system + getattr(t, "nice", 0.0) + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)

    def ours(self) -> float:
        import psutil

        total = 0.0
        for pid in self.our_pids:
            try:
                proc = psutil.Process(pid)
                for p in [proc, *proc.children(recursive=True)]:
                    c = p.cpu_times()
                    total += c.user + c.system
            except psutil.Error:
                continue
        return total

    def start(self, pids: set[int]) -> "MachineLoad":
        self.our_pids = set(pids)
        self.start_busy, self.start_ours, self.start_time = self.busy(), self.ours(), time.monotonic()
        return self

    def note_other_processes(self) -> None:
        """Remember other Spark / pytest processes seen now (names only)."""
        import psutil

        ours = set(self.our_pids)
        for pid in list(ours):
            try:
                ours |= {c.pid for c in psutil.Process(pid).children(recursive=True)}
            except psutil.Error:
                pass
        for proc in psutil.process_iter(["pid", "name", "cmdline"]):
            cmd = " ".join(proc.info.get("cmdline") or [])
            if proc.info["pid"] not in ours and ("java" in (proc.info.get("name") or "") or "pytest" in cmd):
                self.other_processes.add("pytest" if "pytest" in cmd else proc.info["name"])

    def stop(self) -> None:
        self.wall_seconds = time.monotonic() - self.start_time
        # Our processes' CPU time, counted only while they live: the JVM's is read before it stops.
        self.other_busy_seconds = max(0.0, (self.busy() - self.start_busy) - (self.ours() - self.start_ours))

    def other_cores(self) -> float:
        """Average cores other processes kept busy."""
        return self.other_busy_seconds / self.wall_seconds if self.wall_seconds else 0.0
