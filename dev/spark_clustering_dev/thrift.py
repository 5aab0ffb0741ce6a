"""A real Spark Thrift Server, or a real Spark Connect server, from the pyspark install, on loopback,
started and stopped by pid."""
from __future__ import annotations

import os
import shutil
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
    main_class = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
    app_name = "spark_clustering_thrift"

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
        conf.update(self.listen_conf())
        cmd = [str(spark_home() / "bin" / "spark-submit"), "--class", self.main_class,
               "--master", self.master, "--name", self.app_name]
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
        return cmd + ["spark-internal", *self.listen_args()]

    def listen_conf(self) -> dict[str, str]:
        """Spark confs of where the server listens (none: a Thrift server takes them as arguments)."""
        return {}

    def listen_args(self) -> list[str]:
        return ["--hiveconf", f"hive.server2.thrift.port={self.port}",
                "--hiveconf", f"hive.server2.thrift.bind.host={self.host}"]

    def start(self) -> "ThriftServer":
        self.work_dir.mkdir(parents=True, exist_ok=True)
        # PYSPARK_PYTHON: the Python UDFs a Spark Connect client sends run in this interpreter (its
        # numpy and pyarrow); a Connect server takes it from the environment, not from a conf
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_NO_DAEMONIZE": "1", "PYSPARK_PYTHON": sys.executable}
        log = open(self.log_path, "wb")
        # Own process group, so stop() reaches the JVM and anything it forked.
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env,
                                     cwd=self.work_dir, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.app_name} exited with {self.proc.returncode}; log:\n{self.tail()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(1)
        self.stop()
        raise TimeoutError(f"{self.app_name} did not accept connections on {self.port}; log:\n{self.tail()}")

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

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def __enter__(self) -> "ThriftServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class ConnectServer(ThriftServer):
    """`spark-submit --class ...SparkConnectServer` (the server jar ships in pyspark's jars), set up
    as docs/deployment.md (section 5) tells a user: the package's jar, extension and format on the
    server, which holds every setting; its catalog the server's default, Spark's in-memory one
    (`extra_conf` may set spark.sql.catalogImplementation). A client reaches it at `url`
    (dbt-spark's session method with SPARK_REMOTE set: `dbt_env`)."""
    main_class = "org.apache.spark.sql.connect.service.SparkConnectServer"
    app_name = "spark_clustering_connect"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log_path = self.work_dir / "connectserver.log"

    @property
    def url(self) -> str:
        return f"sc://{self.host}:{self.port}"

    @property
    def address(self) -> str:
        return self.url

    def dbt_env(self) -> dict[str, str]:
        """The environment that points the integration project's `connect` target at this server."""
        return {"SPARK_REMOTE": self.url}

    def listen_conf(self) -> dict[str, str]:
        return {"spark.connect.grpc.binding.port": str(self.port), "spark.connect.grpc.binding.address": self.host}

    def listen_args(self) -> list[str]:
        return []


def module_server(server: ThriftServer, request):
    """A test module's server (a pytest fixture's body: `yield from module_server(...)`): started,
    where it listens printed past pytest's capture, stopped and its work directory deleted after."""
    server.start()
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled():
        print(f"\n[{server.app_name}] server pid {server.pid} listening on {server.address}")
    yield server
    server.stop()
    shutil.rmtree(server.work_dir, ignore_errors=True)
