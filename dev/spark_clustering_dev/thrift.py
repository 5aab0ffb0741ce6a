"""A real Spark Thrift Server from the pyspark install, on loopback, started and stopped by pid."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from spark_clustering_dev.paths import EXTENSION_CLASS, FORMAT_JARS, JAR, WORK, spark_home
from spark_clustering_dev.spark import jvm_options, table_format_conf


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); treat it as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class ThriftServer:
    """`spark-submit --class ...HiveThriftServer2` with its own warehouse + Derby metastore.

    Port and bind host go after `spark-internal` as --hiveconf (a --conf port is ignored).
    """

    def __init__(self, work_dir: Path | None = None, master: str = "local[2]", with_jar: bool = True,
                 extra_conf: dict[str, str] | None = None, startup_timeout: float = 180.0, table_format: str = "hive"):
        self.work_dir = Path(work_dir or WORK / "thrift").resolve()
        self.master = master
        self.with_jar = with_jar
        # `delta` / `iceberg`: the server's spark_catalog serves that format's tables as well as
        # plain ones, set up as docs/table_formats.md tells a user to
        if table_format not in ("hive", "delta", "iceberg"):
            raise ValueError(f"table_format {table_format!r}: this server serves hive, delta or iceberg")
        self.table_format = table_format
        self.extra_conf = extra_conf or {}
        self.startup_timeout = startup_timeout
        self.host = "127.0.0.1"
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.log_path = self.work_dir / "thriftserver.log"

    def dbt_env(self) -> dict[str, str]:
        """The environment that points the integration project's `thrift` target at this server."""
        return {"SPARK_CLUSTERING_THRIFT_HOST": self.host, "SPARK_CLUSTERING_THRIFT_PORT": str(self.port)}

    def command(self) -> list[str]:
        conf = {
            "spark.sql.warehouse.dir": str(self.work_dir / "warehouse"),
            "spark.hadoop.javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={self.work_dir / 'metastore_db'};create=true",
            # a server serves a whole test module: a long-lived JVM (spark_clustering_dev.spark.jvm_options)
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={self.work_dir} {jvm_options(long_lived=True)}".strip(),
            "spark.sql.shuffle.partitions": "4",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            **self.extra_conf,
        }
        if jvm_options():  # a cluster's executors (in local mode they live in the driver's JVM)
            conf.setdefault("spark.executor.extraJavaOptions", jvm_options())
        cmd = [str(spark_home() / "bin" / "spark-submit"),
               "--class", "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
               "--master", self.master, "--name", "spark_clustering_thrift"]
        jars, extensions = [], []
        if self.with_jar:
            if not JAR.exists():
                raise FileNotFoundError(f"{JAR} is missing: run scripts/setup")
            jars.append(str(JAR))
            extensions.append(EXTENSION_CLASS)
        if self.table_format != "hive":
            format_conf = table_format_conf(self.table_format)
            jars += sorted(str(p) for p in FORMAT_JARS.glob("*.jar"))
            extensions.append(format_conf.pop("spark.sql.extensions"))  # after the package's (see spark.py)
            conf.update(format_conf)
        if jars:
            cmd += ["--jars", ",".join(jars)]
            conf["spark.sql.extensions"] = ",".join(extensions)
            # Also on the driver's system classpath: --jars alone puts the jar in a class loader that
            # closing the first client session closes, after which classes not loaded yet (e.g.
            # CurveKeys$) fail with NoClassDefFoundError. Executors still get it through --jars.
            # (after any the caller's conf puts there, e.g. S3A's jars)
            conf["spark.driver.extraClassPath"] = ":".join(
                [p for p in conf.get("spark.driver.extraClassPath", "").split(":") if p] + jars)
        for key, value in conf.items():
            cmd += ["--conf", f"{key}={value}"]
        cmd += ["spark-internal",
                "--hiveconf", f"hive.server2.thrift.port={self.port}",
                "--hiveconf", f"hive.server2.thrift.bind.host={self.host}"]
        return cmd

    def start(self) -> "ThriftServer":
        self.work_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_NO_DAEMONIZE": "1"}
        log = open(self.log_path, "wb")
        # Own process group, so stop() reaches the JVM and anything it forked.
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env,
                                     cwd=self.work_dir, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"thrift server exited with {self.proc.returncode}; log:\n{self.tail()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(1)
        self.stop()
        raise TimeoutError(f"thrift server did not accept connections on {self.port}; log:\n{self.tail()}")

    def tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def stop(self, timeout: float = 60.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = os.getpgid(self.proc.pid)
        os.killpg(pgid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def __enter__(self) -> "ThriftServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
