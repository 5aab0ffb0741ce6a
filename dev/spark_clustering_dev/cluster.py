"""A real standalone Spark cluster (one master, two workers) from the pyspark install, on loopback,
started and stopped by pid."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from spark_clustering_dev.paths import WORK, spark_home
from spark_clustering_dev.spark import jvm_options
from spark_clustering_dev.thrift import free_port, pid_alive


def get_json(url: str, timeout: float = 30.0):
    # 30 s: on the 2-core CI machine at full load a Spark UI took over 5 s to answer (a cluster
    # suite's setup timed out reading /api/v1/applications, 2026-12-02)
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read().decode())


def driver_conf(ui_port: int) -> dict[str, str]:
    """A driver's settings on a StandaloneCluster (a Thrift or Connect server): its UI, which lists
    the executors; 1 GB and 1 core per executor, one on each worker; and both executors registered
    before the first job, so the scheduler can use both."""
    return {"spark.ui.enabled": "true", "spark.ui.port": str(ui_port),
            "spark.executor.memory": "1g", "spark.executor.cores": "1", "spark.cores.max": "2",
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "60s"}


def wait_for_executors(executors, count: int = 2, seconds: float = 90, tail=lambda: "") -> None:
    """Wait until `executors()` (a driver's executors, from its UI) lists `count` of them."""
    deadline = time.monotonic() + seconds
    while len(executors()) < count and time.monotonic() < deadline:
        time.sleep(1)
    assert len(executors()) == count, f"executors registered: {executors()}\n{tail()}"


def key_write_tasks(api: str, app_id: str) -> tuple[list[dict], list[int], dict[str, int]]:
    """From a driver's UI (`api`: its /api/v1): the SQL executions whose plan computes a curve key
    for a write (rows routed to their file's task by the key's cut, hashpartitioning on the file
    column; or range-partitioned on the key, a partitioned model), their successful jobs, and those
    jobs' successful tasks per executor id."""
    app = f"{api}/applications/{app_id}"
    executions = get_json(f"{app}/sql?details=true&planDescription=true&offset=0&length=100000")
    keyed = [e for e in executions
             if ("hilbert_key(" in e.get("planDescription", "") or "zorder_key(" in e.get("planDescription", ""))
             and ("rangepartitioning" in e.get("planDescription", "")
                  or "hashpartitioning(__sc_file" in e.get("planDescription", ""))]
    job_ids = sorted({j for e in keyed for j in e["successJobIds"]})
    tasks: dict[str, int] = {}
    for job_id in job_ids:
        for stage_id in get_json(f"{app}/jobs/{job_id}")["stageIds"]:
            for attempt in get_json(f"{app}/stages/{stage_id}"):
                if attempt["status"] == "SKIPPED" or attempt["numTasks"] == 0:
                    continue
                for t in get_json(f"{app}/stages/{stage_id}/{attempt['attemptId']}/taskList?length=100000"):
                    if t["status"] == "SUCCESS":
                        tasks[t["executorId"]] = tasks.get(t["executorId"], 0) + 1
    return keyed, job_ids, tasks


class StandaloneCluster:
    """`spark-class ...Master` + `workers` x `spark-class ...Worker`, each in its own process group.

    `url` is the master URL to pass as `--master`; `worker_ui_ports` lets a test read each worker's
    `/json/` (it lists the executors the worker runs).
    """

    def __init__(self, work_dir: Path | None = None, workers: int = 2, worker_cores: int = 1,
                 worker_memory: str = "2g", startup_timeout: float = 120.0):
        self.work_dir = Path(work_dir or WORK / f"cluster-{os.getpid()}").resolve()
        self.host = "127.0.0.1"
        self.port = free_port()
        self.ui_port = free_port()
        self.worker_ui_ports = [free_port() for _ in range(workers)]
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.startup_timeout = startup_timeout
        self.procs: dict[str, subprocess.Popen] = {}

    @property
    def url(self) -> str:
        return f"spark://{self.host}:{self.port}"

    @property
    def master_json_url(self) -> str:
        return f"http://{self.host}:{self.ui_port}/json/"

    @property
    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self.procs.items()}

    def _spawn(self, name: str, args: list[str]) -> None:
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": self.host,
               "SPARK_NO_DAEMONIZE": "1", "SPARK_LOG_DIR": str(self.work_dir / "logs"),
               "SPARK_DAEMON_JAVA_OPTS": jvm_options(),
               "SPARK_WORKER_DIR": str(self.work_dir / name / "work")}
        (self.work_dir / name / "work").mkdir(parents=True, exist_ok=True)
        log = open(self.work_dir / f"{name}.log", "wb")
        self.procs[name] = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=log,
                                            stderr=subprocess.STDOUT, env=env, cwd=self.work_dir / name,
                                            start_new_session=True)

    def alive_workers(self) -> list[dict]:
        try:
            state = get_json(self.master_json_url)
        except OSError:
            return []
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    def start(self) -> "StandaloneCluster":
        (self.work_dir / "logs").mkdir(parents=True, exist_ok=True)
        self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", self.host,
                               "--port", str(self.port), "--webui-port", str(self.ui_port)])
        for i, ui_port in enumerate(self.worker_ui_ports):
            self._spawn(f"worker{i + 1}", ["org.apache.spark.deploy.worker.Worker", "--host", self.host,
                                           "--cores", str(self.worker_cores), "--memory", self.worker_memory,
                                           "--webui-port", str(ui_port),
                                           "--work-dir", str(self.work_dir / f"worker{i + 1}" / "work"),
                                           self.url])
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            dead = {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}
            if dead:
                self.stop()
                raise RuntimeError(f"cluster process(es) exited early {dead}; logs:\n{self.tail()}")
            if len(self.alive_workers()) >= len(self.worker_ui_ports):
                return self
            time.sleep(1)
        self.stop()
        raise TimeoutError(f"workers did not register with {self.url} in {self.startup_timeout}s:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        out = []
        for name in self.procs:
            try:
                text = (self.work_dir / f"{name}.log").read_text(errors="replace").splitlines()[-lines:]
            except FileNotFoundError:
                text = ["(no log)"]
            out += [f"--- {name}", *text]
        return "\n".join(out)

    def stop(self, timeout: float = 30.0) -> None:
        # Workers first (they would otherwise try to reconnect to a vanished master), then the master.
        for name in sorted(self.procs, key=lambda n: n == "master"):
            proc = self.procs[name]
            if proc.poll() is not None:
                continue
            try:
                os.killpg(proc.pid, signal.SIGTERM)  # own session: pgid == pid
            except ProcessLookupError:
                continue
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        still = {n: p.pid for n, p in self.procs.items() if pid_alive(p.pid)}
        if still:
            raise RuntimeError(f"cluster processes still alive after stop(): {still}")

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
